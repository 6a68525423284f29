/*
 * tls_ca.c - keeps libgit2's network stack out of amp's process.
 *
 * amp never lets libgit2 talk to a remote -- remotes are git's business
 * (`git push`/`git fetch`) -- yet Debian's libgit2 starts its network
 * stack in git_libgit2_init(): mbedTLS's global init parses the whole CA
 * bundle (/etc/ssl/certs/ca-certificates.crt; 53 million instructions,
 * three quarters of an `amp send`, and no option or environment variable
 * turns it off: libgit2 PR #3935 asked for lazy loading), seeds its
 * entropy pool, and starts libssh2.
 *
 * Not part of libamp.a: the Makefile links one of two builds of this file
 * into each program, by how share/git2-link.sh links libgit2:
 *   - shared (Debian's libgit2.so): the definition below interposes the
 *     shared library's mbedtls_x509_crt_parse_file, since an executable's
 *     definition comes first: the CA chain stays empty, and should TLS
 *     through libgit2 ever be attempted, certificate verification fails
 *     (closed, not open);
 *   - archive (Debian's libgit2.a), built with AMP_TLS_CA_ARCHIVE: it defines
 *     the functions by which libgit2 reaches its TLS stream, its SSH
 *     transport and GSSAPI, so that the link never takes those parts of
 *     the archive, nor the libraries only they need (see below);
 *   - lean (built without a network stack): nothing refers to it.
 */
#ifndef AMP_TLS_CA_ARCHIVE
int mbedtls_x509_crt_parse_file(void *chain, const char *path);
int mbedtls_x509_crt_parse_file(void *chain, const char *path)
{
	(void)chain;
	(void)path;
	return 0;
}
#else
#include <git2/errors.h>
#include <git2/sys/stream.h>
#include <git2/sys/transport.h>

/*
 * With Debian's libgit2.a, a part of the archive is linked when something
 * linked names one of its functions, and everything it names comes with
 * it.  libgit2's TLS stream (its streams/mbedtls.c.o) is named only by the
 * four functions below (git_libgit2_init() calls the first two, its TLS
 * stream the last two), and brought mbedTLS's TLS and X.509 code; its SSH
 * transport (ssh.c.o) only by the next three, and brought libssh2 with
 * OpenSSL's libcrypto and libssl, whose 340 KB of pointer tables the
 * loader relocated, page by page, at every start of every amp process.
 * Defined here, neither part is linked: the binary went from 6.4 MB of
 * code and 18,781 relocations to 2.2 MB and 1,166, and an `amp send` from
 * ~400 page faults to ~300 (about a millisecond).  An https:// or ssh://
 * remote opened through libgit2 in amp's process fails with the message
 * below, as with the lean build; amp's own transport is git.
 */
static int no_network(int klass, const char *what)
{
	git_error_set_str(klass, what);
	return -1;
}

#define NO_TLS "amp is built without libgit2's TLS (amp sync runs git for its remotes)"
#define NO_SSH "amp is built without libgit2's SSH transport (amp sync runs git for its remotes)"

int git_mbedtls_stream_global_init(void);
int git_mbedtls_stream_global_init(void)
{
	return 0;
}

int git_mbedtls__set_cert_location(const char *file, const char *path);
int git_mbedtls__set_cert_location(const char *file, const char *path)
{
	(void)file, (void)path;
	return no_network(GIT_ERROR_SSL, NO_TLS);
}

int git_mbedtls_stream_new(git_stream **out, const char *host, const char *port);
int git_mbedtls_stream_new(git_stream **out, const char *host, const char *port)
{
	(void)host, (void)port;
	*out = NULL;
	return no_network(GIT_ERROR_SSL, NO_TLS);
}

int git_mbedtls_stream_wrap(git_stream **out, git_stream *in, const char *host);
int git_mbedtls_stream_wrap(git_stream **out, git_stream *in, const char *host)
{
	(void)in, (void)host;
	*out = NULL;
	return no_network(GIT_ERROR_SSL, NO_TLS);
}

int git_smart_subtransport_ssh(git_smart_subtransport **out, git_transport *owner, void *param)
{
	(void)owner, (void)param;
	*out = NULL;
	return no_network(GIT_ERROR_SSH, NO_SSH);
}

int git_transport_ssh_with_paths(git_transport **out, git_remote *owner, void *payload)
{
	(void)owner, (void)payload;
	*out = NULL;
	return no_network(GIT_ERROR_SSH, NO_SSH);
}

int git_transport_ssh_global_init(void);
int git_transport_ssh_global_init(void)
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
