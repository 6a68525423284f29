/*
 * tls_ca.c - keeps libgit2 from reading the CA bundle at every start.
 *
 * Debian's libgit2 is built with mbedTLS, whose global init parses the whole
 * CA bundle (/etc/ssl/certs/ca-certificates.crt) inside git_libgit2_init():
 * 53 million instructions, three quarters of an `amp send`, and no option or
 * environment variable turns it off (libgit2 PR #3935 asked for lazy
 * loading).  amp never opens a TLS connection through libgit2 -- remotes are
 * git's business (`git push`/`git fetch`) -- so this definition replaces
 * the one parse and leaves the CA chain empty.  Should TLS through libgit2
 * ever be attempted, certificate verification fails: closed, not open.
 *
 * Not part of libamp.a: the Makefile links one of two builds of this file
 * into each program, by how share/git2-link.sh links libgit2:
 *   - shared (Debian's libgit2.so): this definition interposes the shared
 *     library's, since an executable's definition comes first;
 *   - archive (Debian's libgit2.a and libmbedx509.a): built with
 *     AMP_TLS_CA_WRAP, it is __wrap_mbedtls_x509_crt_parse_file, and the
 *     link's --wrap=mbedtls_x509_crt_parse_file sends libgit2's call here
 *     (an archive's own definition cannot be interposed);
 *   - lean (built without TLS): nothing refers to it; dead code.
 */
#ifdef AMP_TLS_CA_WRAP
#define AMP_TLS_CA_PARSE __wrap_mbedtls_x509_crt_parse_file
#else
#define AMP_TLS_CA_PARSE mbedtls_x509_crt_parse_file
#endif

int AMP_TLS_CA_PARSE(void *chain, const char *path);
int AMP_TLS_CA_PARSE(void *chain, const char *path)
{
	(void)chain;
	(void)path;
	return 0;
}

#ifdef AMP_TLS_CA_WRAP
/*
 * With Debian's libgit2.a, the rest of the network stack's start-up goes
 * too: git_libgit2_init() seeds mbedTLS's entropy pool (HAVEGE, a million
 * instructions) and starts libssh2 (OpenSSL's crypto, another million), a
 * fifth of an `amp send`, for transports amp never uses.  The link's
 * --wrap options send libgit2's calls here; its TLS and SSH transports
 * then cannot be used from amp's process (an https:// or ssh:// remote
 * through libgit2 fails), which is what the lean build gives as well.
 */
int __wrap_git_mbedtls_stream_global_init(void);
int __wrap_git_mbedtls_stream_global_init(void)
{
	return 0;
}

int __wrap_git_transport_ssh_global_init(void);
int __wrap_git_transport_ssh_global_init(void)
{
	return 0;
}

/*
 * And its HTTP "Negotiate" authentication (Kerberos, through GSSAPI):
 * Debian's libgit2.a calls these eight functions and names one datum, and
 * with them the link
 * took seven shared libraries (libgssapi_krb5, libkrb5, libk5crypto,
 * libcom_err, libkrb5support, libkeyutils, libresolv) that every amp
 * process loaded and relocated at start.  Defined here, nothing needs
 * them: --as-needed leaves them out.  Each fails (GSS_S_FAILURE), as a
 * system with no Kerberos would; none is reached, since amp never lets
 * libgit2 speak HTTP.
 */
#include <gssapi/gssapi.h>

/* The one datum libgit2 names: the OID of a host-based service name. */
gss_OID GSS_C_NT_HOSTBASED_SERVICE = GSS_C_NO_OID;

static OM_uint32 no_gss(OM_uint32 *minor_status)
{
	if (minor_status)
		*minor_status = 0;
	return GSS_S_FAILURE;
}

OM_uint32 KRB5_CALLCONV gss_delete_sec_context(OM_uint32 *minor, gss_ctx_id_t *ctx,
					       gss_buffer_t out)
{
	(void)ctx, (void)out;
	return no_gss(minor);
}

OM_uint32 KRB5_CALLCONV gss_display_status(OM_uint32 *minor, OM_uint32 value, int type,
					   gss_OID mech, OM_uint32 *msg_ctx, gss_buffer_t out)
{
	(void)value, (void)type, (void)mech, (void)msg_ctx, (void)out;
	return no_gss(minor);
}

OM_uint32 KRB5_CALLCONV gss_import_name(OM_uint32 *minor, gss_buffer_t in, gss_OID type,
					gss_name_t *out)
{
	(void)in, (void)type, (void)out;
	return no_gss(minor);
}

OM_uint32 KRB5_CALLCONV gss_indicate_mechs(OM_uint32 *minor, gss_OID_set *set)
{
	(void)set;
	return no_gss(minor);
}

OM_uint32 KRB5_CALLCONV gss_init_sec_context(OM_uint32 *minor, gss_cred_id_t cred,
					     gss_ctx_id_t *ctx, gss_name_t target,
					     gss_OID mech, OM_uint32 req, OM_uint32 time_req,
					     gss_channel_bindings_t bindings, gss_buffer_t in,
					     gss_OID *actual, gss_buffer_t out,
					     OM_uint32 *ret_flags, OM_uint32 *time_rec)
{
	(void)cred, (void)ctx, (void)target, (void)mech, (void)req, (void)time_req;
	(void)bindings, (void)in, (void)actual, (void)out, (void)ret_flags, (void)time_rec;
	return no_gss(minor);
}

OM_uint32 KRB5_CALLCONV gss_release_buffer(OM_uint32 *minor, gss_buffer_t buffer)
{
	(void)buffer;
	no_gss(minor);
	return GSS_S_COMPLETE;
}

OM_uint32 KRB5_CALLCONV gss_release_name(OM_uint32 *minor, gss_name_t *name)
{
	(void)name;
	no_gss(minor);
	return GSS_S_COMPLETE;
}

OM_uint32 KRB5_CALLCONV gss_release_oid_set(OM_uint32 *minor, gss_OID_set *set)
{
	(void)set;
	no_gss(minor);
	return GSS_S_COMPLETE;
}
#endif
