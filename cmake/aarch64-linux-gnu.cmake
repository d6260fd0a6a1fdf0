# Cross-building the static linux-aarch64 ezpz on a Debian 12 x86_64 machine
# (scripts/cross-aarch64.sh): Debian's cross compiler (crossbuild-essential-arm64) and the
# arm64 -dev packages, which multiarch installs beside the native ones (/usr/lib/aarch64-linux-gnu).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Libraries from the arm64 multiarch directory only, never the host's.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
# Tests and the build's own runs of ezpz go through qemu-user-static.
find_program(EZPZ_QEMU_AARCH64 qemu-aarch64-static)
if(EZPZ_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${EZPZ_QEMU_AARCH64})
endif()
