# Binary packages of the static ezpz: `cpack --config build/release/CPackConfig.cmake`
# gives a .tar.gz and a .deb holding bin/ezpz, the man pages, the completions and the companion's
# sources with the script that builds them (packaging/CONTENTS.md, installed beside them, says
# what each is), each with a .sha256 beside it (scripts/install.sh checks it).
install(FILES ${PROJECT_SOURCE_DIR}/packaging/CONTENTS.md ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION share/doc/ezpz)
# The companion builds on its own (src/torch as a project: scripts/build-companion.sh); the
# script goes in without its execute bit: bin/ezpz stays the package's one program.
set(_companion share/ezpz/companion)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/torch DESTINATION ${_companion}/src)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ezpz DESTINATION ${_companion}/include)
# The core files it compiles again (src/torch/CMakeLists.txt), in their folders.
foreach(_name base/env base/expected base/strings launch/rank_env train/history train/parallel_layout
              train/torch_choice)
  get_filename_component(_dir ${_name} DIRECTORY)
  foreach(_ext hpp cpp)
    if(EXISTS ${PROJECT_SOURCE_DIR}/src/core/${_name}.${_ext})
      install(FILES ${PROJECT_SOURCE_DIR}/src/core/${_name}.${_ext} DESTINATION ${_companion}/src/core/${_dir})
    endif()
  endforeach()
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/scripts/build-companion.sh DESTINATION ${_companion}/scripts)
set(CPACK_PACKAGE_NAME ezpz)
set(CPACK_PACKAGE_VENDOR "ezpz developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "${PROJECT_DESCRIPTION}
 One static binary: ezpz launch (the scheduler's launcher line, torchrun's environment on
 every rank, the failing rank named), ezpz yeet (environments copied to every node's /tmp),
 ezpz doctor, ezpz test (a distributed smoke training with the job's python and torch),
 submit, kill, env and plot. Holds bin/ezpz, the man pages, bash/zsh/fish completion, and
 the C++ companion's sources with the script that builds them against your torch
 (share/ezpz/companion; share/doc/ezpz/CONTENTS.md says what each file is).")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR TGZ DEB)
set(CPACK_PACKAGE_CHECKSUM SHA256)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "ezpz developers")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# A fully static binary: no shared-library dependencies to declare.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "")
include(CPack)
