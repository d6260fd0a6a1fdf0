/* GSSAPI stand-ins for the static ezpz. Debian's libssh.a is built with GSSAPI, but Debian
 * ships no static libgssapi_krb5, so a fully static binary cannot have the real one. ezpz
 * never asks libssh for gssapi-with-mic authentication (keys and the agent only), so these are
 * never reached; if one were, it fails cleanly with GSS_S_FAILURE. Sites that need GSSAPI or
 * host-based authentication use `--ssh-command ssh` (the system OpenSSH client). */
#include <stddef.h>

typedef unsigned int OM_uint32;
#define EZPZ_GSS_S_FAILURE (13U << 16)

void* GSS_C_NT_HOSTBASED_SERVICE = NULL;
void* GSS_C_NT_USER_NAME = NULL;

#define EZPZ_GSS_STUB(name)                   \
  OM_uint32 name(OM_uint32* minor_status);    \
  OM_uint32 name(OM_uint32* minor_status) {   \
    if (minor_status != NULL) *minor_status = 0; \
    return EZPZ_GSS_S_FAILURE;                \
  }

EZPZ_GSS_STUB(gss_accept_sec_context)
EZPZ_GSS_STUB(gss_acquire_cred)
EZPZ_GSS_STUB(gss_add_oid_set_member)
EZPZ_GSS_STUB(gss_create_empty_oid_set)
EZPZ_GSS_STUB(gss_display_name)
EZPZ_GSS_STUB(gss_display_status)
EZPZ_GSS_STUB(gss_get_mic)
EZPZ_GSS_STUB(gss_import_name)
EZPZ_GSS_STUB(gss_indicate_mechs)
EZPZ_GSS_STUB(gss_init_sec_context)
EZPZ_GSS_STUB(gss_inquire_cred)
EZPZ_GSS_STUB(gss_inquire_cred_by_mech)
EZPZ_GSS_STUB(gss_release_buffer)
EZPZ_GSS_STUB(gss_release_cred)
EZPZ_GSS_STUB(gss_release_name)
EZPZ_GSS_STUB(gss_release_oid_set)
EZPZ_GSS_STUB(gss_test_oid_set_member)
EZPZ_GSS_STUB(gss_verify_mic)
