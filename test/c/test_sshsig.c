/* Unit tests of SSH signatures in process (sshsig.h), against the real
 * ssh-keygen: amp's signature of an Ed25519 key is ssh-keygen's byte for
 * byte and verifies; no changed byte, cut or padding of the armor, other
 * namespace, other data, other principal or retired key is ever accepted
 * in process; keys and allowed-signers lines it does not read are left to
 * ssh-keygen (0 from the signer, -1 from the verifier). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store.h"
#include "tap.h"

static char dir[256];

/* The output of a shell command (the test's own, quoted paths) into a
 * malloc'd buffer; NULL when it fails. */
static char *run(const char *cmd, size_t *len)
{
	FILE *p = popen(cmd, "r");
	char *out = malloc(65536);
	size_t n = 0;

	if (!p || !out) {
		free(out);
		return NULL;
	}
	n = fread(out, 1, 65535, p);
	out[n] = '\0';
	if (pclose(p) != 0) {
		free(out);
		return NULL;
	}
	if (len)
		*len = n;
	return out;
}

static int write_file(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "w")))
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* The allowed-signers file "signers" with `line` for the key k. */
static int signers(const char *fmt)
{
	char cmd[1024], line[2048], *pub;

	snprintf(cmd, sizeof(cmd), "cut -d' ' -f1,2 '%s/k.pub'", dir);
	if (!(pub = run(cmd, NULL)))
		return -1;
	pub[strcspn(pub, "\n")] = '\0';
	snprintf(line, sizeof(line), fmt, pub);
	free(pub);
	return write_file("signers", line);
}

/* 1 when no change of one byte, at any place, to any of a few values, and
 * no cut of the armor is accepted. */
static int mutations_refused(const char *allowed, const char *sig, size_t siglen,
			     const char *data, int64_t now)
{
	static const char repl[] = { 'A', '/', '=', '\n', '-', ' ', '\0' };
	char *m = malloc(siglen + 1);
	size_t i, k;
	int good = m != NULL;

	for (i = 0; good && i < siglen; i++)
		for (k = 0; good && k < sizeof(repl) + 1; k++) {
			memcpy(m, sig, siglen);
			m[i] = k < sizeof(repl) ? repl[k] : (char)(sig[i] ^ 0x01);
			if (m[i] == sig[i])
				continue;
			good = amp_sshsig_verify(allowed, "amp-record", m, siglen, data,
						 strlen(data), now, "executor") != 1;
		}
	for (i = 0; good && i + 1 < siglen; i++)
		good = amp_sshsig_verify(allowed, "amp-record", sig, i, data, strlen(data), now,
					 "executor") != 1;
	free(m);
	return good;
}

int main(void)
{
	char key[512], allowed[512], cmd[2048], *sig = NULL, *theirs = NULL, *big;
	const char *data = "{\"from\": \"executor\", \"note\": \"a record\"}\n";
	size_t siglen = 0, theirlen = 0;
	amp_error err = { 0 };
	int64_t now = (int64_t)time(NULL);
	int rc;

	snprintf(dir, sizeof(dir), "%s/amp-sshsig-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		ok(0, "make a temporary directory");
		return tap_done();
	}
	snprintf(key, sizeof(key), "%s/k", dir);
	snprintf(allowed, sizeof(allowed), "%s/signers", dir);
	snprintf(cmd, sizeof(cmd), "ssh-keygen -q -t ed25519 -N '' -C k -f '%s/k' && "
		 "ssh-keygen -q -t ed25519 -N 'a phrase' -C pw -f '%s/pw' && "
		 "ssh-keygen -q -t rsa -b 1024 -N '' -C rsa -f '%s/rsa'", dir, dir, dir);
	ok(system(cmd) == 0, "ssh-keygen makes the keys");
	ok(write_file("data", data) == 0 && signers("executor %s\n") == 0, "the record and the allowed signers");

	rc = amp_sshsig_sign(key, "amp-record", data, strlen(data), &sig, &siglen, &err);
	ok(rc == 1 && sig, "an unencrypted Ed25519 key signs in process");
	snprintf(cmd, sizeof(cmd), "ssh-keygen -q -Y sign -n amp-record -f '%s/k' < '%s/data'", dir, dir);
	theirs = run(cmd, &theirlen);
	ok(theirs && sig && theirlen == siglen && !memcmp(theirs, sig, siglen),
	   "the signature is byte for byte ssh-keygen's");
	ok(sig && write_file("sig", sig) == 0, "write the signature");
	snprintf(cmd, sizeof(cmd), "ssh-keygen -Y verify -f '%s/signers' -I executor -n amp-record -s '%s/sig' < '%s/data' > /dev/null 2>&1",
		 dir, dir, dir);
	ok(system(cmd) == 0, "ssh-keygen -Y verify accepts it");
	if (!sig)
		goto done;
	ok(amp_sshsig_verify(allowed, "amp-record", sig, siglen, data, strlen(data), now, "executor") == 1,
	   "it verifies in process for its principal");
	ok(amp_sshsig_verify(allowed, "amp-record", sig, siglen - 1, data, strlen(data), now, "executor") == 1,
	   "without its last newline (as a commit's gpgsig keeps it) too");
	ok(amp_sshsig_verify(allowed, "amp-record", sig, siglen, data, strlen(data), now, "reviewer") == 0,
	   "not for a principal its line does not list: certainly not");
	ok(amp_sshsig_verify(allowed, "git", sig, siglen, data, strlen(data), now, "executor") == -1,
	   "not in another namespace");
	ok(amp_sshsig_verify(allowed, "amp-record", sig, siglen, "other", 5, now, "executor") == -1,
	   "not over other data");
	ok(mutations_refused(allowed, sig, siglen, data, now),
	   "no changed byte and no cut of the armor is accepted");
	big = malloc(siglen + 9000);
	if (big) {
		memcpy(big, sig, siglen);
		memset(big + siglen, 'A', 9000);
		ok(amp_sshsig_verify(allowed, "amp-record", big, siglen + 9000, data, strlen(data), now,
				     "executor") == -1, "nor an armor padded past 8 KiB");
		free(big);
	}
	{
		char found[256] = "";

		ok(amp_sshsig_find_principals(allowed, sig, siglen, now, found, sizeof(found)) == 1 &&
			   !strcmp(found, "executor"), "find-principals names the line's principals");
	}
	/* allowed-signers lines */
	ok(signers("executor valid-before=\"20200101\" %s\n") == 0 &&
		   amp_sshsig_verify(allowed, "amp-record", sig, siglen, data, strlen(data), now,
				     "executor") == 0, "a key retired with valid-before: refused");
	ok(signers("executor valid-after=\"209901010000Z\" %s\n") == 0 &&
		   amp_sshsig_verify(allowed, "amp-record", sig, siglen, data, strlen(data), now,
				     "executor") == 0, "a key not valid yet: refused");
	ok(signers("reviewer,executor namespaces=\"git,amp-record\",valid-after=\"20200101000000\" %s comment\n") == 0 &&
		   amp_sshsig_verify(allowed, "amp-record", sig, siglen, data, strlen(data), now,
				     "executor") == 1, "options amp reads: accepted as ssh-keygen does");
	ok(signers("executor cert-authority %s\n") == 0 &&
		   amp_sshsig_verify(allowed, "amp-record", sig, siglen, data, strlen(data), now,
				     "executor") == -1, "a cert-authority line naming the key: ssh-keygen's");
	ok(signers("exec* %s\n") == 0 &&
		   amp_sshsig_verify(allowed, "amp-record", sig, siglen, data, strlen(data), now,
				     "executor") == -1, "a pattern: ssh-keygen's");
	ok(signers("executor valid-after=20200101 %s\n") == 0 &&
		   amp_sshsig_verify(allowed, "amp-record", sig, siglen, data, strlen(data), now,
				     "executor") == -1, "an unquoted time: ssh-keygen's");
	/* keys amp does not sign with */
	{
		char *s2 = NULL;
		size_t l2 = 0;

		snprintf(key, sizeof(key), "%s/pw", dir);
		ok(amp_sshsig_sign(key, "amp-record", data, strlen(data), &s2, &l2, &err) == 0 && !s2,
		   "a passphrase-protected key: ssh-keygen's");
		snprintf(key, sizeof(key), "%s/rsa", dir);
		ok(amp_sshsig_sign(key, "amp-record", data, strlen(data), &s2, &l2, &err) == 0 && !s2,
		   "an RSA key: ssh-keygen's");
		snprintf(key, sizeof(key), "%s/k.pub", dir);
		ok(amp_sshsig_sign(key, "amp-record", data, strlen(data), &s2, &l2, &err) == 0 && !s2,
		   "a public key (its private half in ssh-agent): ssh-keygen's");
	}
done:
	free(sig);
	free(theirs);
	tap_remove_dir(dir);
	return tap_done();
}
