# Binary packages of the static ezpz: `cpack --config build/release/CPackConfig.cmake`
# gives a .tar.gz and a .deb holding bin/ezpz, the man pages and the completions, each with a
# .sha256 beside it (scripts/install.sh checks it).
set(CPACK_PACKAGE_NAME ezpz)
set(CPACK_PACKAGE_VENDOR "ezpz developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
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
