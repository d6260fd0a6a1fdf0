# Compile settings for ezpz's own targets only (third-party headers are system
# includes and never see these flags as errors).
add_library(ezpz_settings INTERFACE)
target_compile_options(ezpz_settings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Wnon-virtual-dtor
  -Wold-style-cast -Woverloaded-virtual -Wimplicit-fallthrough)
if(EZPZ_WERROR)
  target_compile_options(ezpz_settings INTERFACE -Werror)
endif()
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  # GCC 12 reports false -Wrestrict positives inside libstdc++'s std::string at -O2/-O3
  # (GCC bug 105329); they are not in our code.
  target_compile_options(ezpz_settings INTERFACE -Wno-restrict)
endif()
if(CMAKE_BUILD_TYPE STREQUAL "Debug")
  target_compile_definitions(ezpz_settings INTERFACE _GLIBCXX_ASSERTIONS)
endif()
if(EZPZ_SANITIZE)
  add_compile_options(-fsanitize=${EZPZ_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${EZPZ_SANITIZE})
  # Executables are not position-independent here: UBSan's check data and ASan's global metadata
  # are millions of relative relocations in a PIE, which every process applied (and paged in) at
  # its start, ~0.3 s each; the e2e and cluster tests start thousands of them.
  add_link_options($<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie>)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND EZPZ_SANITIZE MATCHES "address" AND EZPZ_SANITIZE MATCHES "undefined")
    # GCC 12's ASan pads and registers UBSan's own check data as globals: ~23,000 in a translation
    # unit against ~170 of ours, 580,000 in the binary, registered and then leak-scanned by every
    # process (0.28 s a start, 123 MB; 0.13 s and 50 MB without). Global redzones go: indexing
    # past a global array is still UBSan's `bounds` check, and the fuzz preset (clang) keeps them.
    add_compile_options(--param=asan-globals=0)
  endif()
endif()
if(EZPZ_FUZZ)
  # libFuzzer targets (tests/fuzz): every library instrumented for coverage and checked by ASan
  # and UBSan; only the fuzz executables link libFuzzer's main (-fsanitize=fuzzer).
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "EZPZ_FUZZ needs clang (libFuzzer): cmake --preset fuzz")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()
if(CMAKE_BUILD_TYPE STREQUAL "Release")
  add_compile_options(-ffunction-sections -fdata-sections)
endif()
