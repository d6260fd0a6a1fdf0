# Debian 12 packages (scripts/install-deps.sh). CLI11 and nlohmann_json are
# header-only. spdlog, fmt and toml++ ship only shared libraries, so a static
# ezpz uses their headers: toml++ header-only, fmt compiled once in
# src/third_party/fmt_impl.cpp, spdlog header-only on top of that fmt.
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json 3.10 CONFIG REQUIRED)
find_path(TOMLPP_INCLUDE_DIR toml++/toml.h REQUIRED)
find_path(SPDLOG_INCLUDE_DIR spdlog/spdlog.h REQUIRED)
find_path(FMT_INCLUDE_DIR fmt/format-inl.h REQUIRED)
find_package(Threads REQUIRED)

add_library(ezpz_deps INTERFACE)
target_include_directories(ezpz_deps SYSTEM INTERFACE ${TOMLPP_INCLUDE_DIR} ${SPDLOG_INCLUDE_DIR} ${FMT_INCLUDE_DIR})
target_compile_definitions(ezpz_deps INTERFACE TOML_HEADER_ONLY=1 SPDLOG_FMT_EXTERNAL=1)
target_link_libraries(ezpz_deps INTERFACE CLI11::CLI11 nlohmann_json::nlohmann_json Threads::Threads)

# Archives (yeet, tar-env): libarchive with only tar/pax and zstd/gzip registered, plus
# zstd itself; zlib and liblzma (libarchive's own) decompress sources here so their checks are verified.
if(EZPZ_STATIC)
  set(_ezpz_saved_suffixes ${CMAKE_FIND_LIBRARY_SUFFIXES})
  set(CMAKE_FIND_LIBRARY_SUFFIXES .a)
  set(_ezpz_archive_libs archive zstd lzma lz4 bz2 z nettle acl)
else()
  set(_ezpz_archive_libs archive zstd lzma z nettle)
endif()
add_library(ezpz_deps_archive INTERFACE)  # what sys/fs links
foreach(lib ${_ezpz_archive_libs})
  find_library(EZPZ_LIB_${lib} NAMES ${lib} REQUIRED)
  target_link_libraries(ezpz_deps_archive INTERFACE ${EZPZ_LIB_${lib}})
endforeach()
if(EZPZ_STATIC)
  set(CMAKE_FIND_LIBRARY_SUFFIXES ${_ezpz_saved_suffixes})
endif()

# yeet's SSH transport: libssh (Debian builds it against OpenSSL and GSSAPI). Debian ships no
# static GSSAPI, so a static ezpz links src/third_party/link_stubs/gssapi_stub.c instead: gssapi-with-mic
# authentication is then unavailable in-process (--ssh-command ssh covers those sites).
# Only sys/remote links it.
add_library(ezpz_deps_ssh INTERFACE)
if(EZPZ_STATIC)
  find_library(EZPZ_LIB_ssh NAMES libssh.a REQUIRED)
  find_library(EZPZ_LIB_crypto NAMES libcrypto.a REQUIRED)
  find_library(EZPZ_LIB_zlib_static NAMES libz.a REQUIRED)
  add_library(ezpz_gssapi_stub OBJECT ${CMAKE_CURRENT_LIST_DIR}/../src/third_party/link_stubs/gssapi_stub.c)
  target_link_libraries(ezpz_deps_ssh INTERFACE ${EZPZ_LIB_ssh} $<TARGET_OBJECTS:ezpz_gssapi_stub> ${EZPZ_LIB_crypto}
                                            ${EZPZ_LIB_zlib_static} ${CMAKE_DL_LIBS})
else()
  find_library(EZPZ_LIB_ssh NAMES ssh REQUIRED)
  target_link_libraries(ezpz_deps_ssh INTERFACE ${EZPZ_LIB_ssh})
endif()

# The launcher transport's sealed TCP (sys/agents): OpenSSL's libcrypto, the one libssh links.
add_library(ezpz_deps_crypto INTERFACE)
if(EZPZ_STATIC)
  target_link_libraries(ezpz_deps_crypto INTERFACE ${EZPZ_LIB_crypto} ${CMAKE_DL_LIBS} Threads::Threads)
else()
  find_library(EZPZ_LIB_crypto_shared NAMES crypto REQUIRED)
  target_link_libraries(ezpz_deps_crypto INTERFACE ${EZPZ_LIB_crypto_shared})
endif()

# Incremental yeet: librsync. Debian's librsync.a wants libb2 (BLAKE2) for its BLAKE2 signature
# format, and Debian ships no static libb2: ezpz makes MD4 signatures only (every patched file is
# checked against its SHA-256 anyway), so a static ezpz links src/third_party/link_stubs/blake2_stub.c instead.
if(EZPZ_STATIC)
  find_library(EZPZ_LIB_rsync NAMES librsync.a REQUIRED)
  add_library(ezpz_blake2_stub OBJECT ${CMAKE_CURRENT_LIST_DIR}/../src/third_party/link_stubs/blake2_stub.c)
  target_link_libraries(ezpz_deps_archive INTERFACE ${EZPZ_LIB_rsync} $<TARGET_OBJECTS:ezpz_blake2_stub>)
else()
  find_library(EZPZ_LIB_rsync NAMES rsync REQUIRED)
  target_link_libraries(ezpz_deps_archive INTERFACE ${EZPZ_LIB_rsync})
endif()
