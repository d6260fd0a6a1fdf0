/* BLAKE2b stand-ins for the static ezpz. Debian's librsync.a references libb2 for its BLAKE2
 * signature format, but Debian ships no static libb2. ezpz only makes and reads MD4
 * (RS_RK_MD4_SIG_MAGIC) signatures, whose patched results are then checked against SHA-256, so
 * these are never reached; if one were, it fails (-1) instead of computing a wrong sum. */
#include <stddef.h>

int blake2b_init(void* state, size_t outlen);
int blake2b_update(void* state, const void* in, size_t inlen);
int blake2b_final(void* state, void* out, size_t outlen);

int blake2b_init(void* state, size_t outlen) {
  (void)state;
  (void)outlen;
  return -1;
}
int blake2b_update(void* state, const void* in, size_t inlen) {
  (void)state;
  (void)in;
  (void)inlen;
  return -1;
}
int blake2b_final(void* state, void* out, size_t outlen) {
  (void)state;
  (void)out;
  (void)outlen;
  return -1;
}
