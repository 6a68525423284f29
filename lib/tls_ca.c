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
#endif
