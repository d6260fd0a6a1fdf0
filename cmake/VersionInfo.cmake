# Run at every build (cmake -P): writes ezpz/version_info.hpp with the commit and the build date,
# touching it only when they change (so only src/cli/version.cpp recompiles, and only then).
# In: SRC (the source tree), OUT (the header). The date honours SOURCE_DATE_EPOCH.
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD OUTPUT_VARIABLE commit
                RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git -C "${SRC}" diff --quiet HEAD -- RESULT_VARIABLE dirty ERROR_QUIET)
  if(dirty EQUAL 1)
    string(APPEND commit "+dirty")
  endif()
endif()
string(TIMESTAMP date "%Y-%m-%d" UTC)
file(WRITE "${OUT}.new" "#pragma once\n#define EZPZ_COMMIT \"${commit}\"\n#define EZPZ_BUILD_DATE \"${date}\"\n")
configure_file("${OUT}.new" "${OUT}" COPYONLY)
file(REMOVE "${OUT}.new")
