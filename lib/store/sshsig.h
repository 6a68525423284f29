/*
 * sshsig.h - SSH signatures (OpenSSH PROTOCOL.sshsig) made and checked in
 * process for Ed25519 keys, with nettle, as `ssh-keygen -Y sign` and
 * `ssh-keygen -Y verify` make and check them.
 *
 * Why in process: strict mode signs every record and every commit and
 * verifies them wherever they arrive, and each `ssh-keygen -Y` run is a
 * fork, an exec and OpenSSL's start-up for ~0.1 ms of Ed25519.  A strict
 * `amp send` ran ssh-keygen twice (the record, the commit), a hub's hook
 * once or twice per record and per commit, and a strict `amp import`
 * once per record.  Measured (CPU of the command and its children,
 * share/bench-sshsig.sh, with ssh-keygen -> in process): a strict send
 * 16.9 -> 6.9 ms, the hub's hook on one message 22.9 -> 12.5 ms, a strict
 * import of 1,000 records 17.7 -> 0.70 s (share/doc/performance.md); the
 * hub of issue 32 spent ~0.2 s of CPU per message on two cores.
 *
 * Only the common case is done here; everything else stays ssh-keygen's
 * (sign.c falls back to it): a key that is not an unencrypted OpenSSH
 * Ed25519 private key (RSA, ECDSA, sk-*, a passphrase, a key held only in
 * ssh-agent), a signature not in the canonical armor, version, hash
 * (sha512) and layout ssh-keygen writes, and an allowed-signers line
 * naming the key with anything this parser does not read exactly as
 * ssh-keygen(1) does (cert-authority, patterns in principals or
 * namespaces, quoted principals, unquoted or unusual times).  And a
 * verification only ever says yes here: whatever does not verify is
 * asked of ssh-keygen again, whose refusal, and its reason, are the ones
 * amp reports; so amp accepts and refuses exactly what ssh-keygen does.
 */
#ifndef AMP_SSHSIG_H
#define AMP_SSHSIG_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* An armored signature longer than this is not read here. */
#define AMP_SSHSIG_ARMOR_MAX 8192

/*
 * Signs data[0..len) in namespace ns with the private key in file `key`,
 * as `ssh-keygen -Y sign -n ns -f key` does: the armored signature
 * (malloc'd, ending in a newline, the caller frees) into *sig, its length
 * in *siglen.  1 when signed; 0 when the key is not one signed here (the
 * caller asks ssh-keygen); AMP_EIO when out of memory.
 */
int amp_sshsig_sign(const char *key, const char *ns, const char *data, size_t len, char **sig,
		    size_t *siglen, amp_error *err);

/*
 * "ssh-ed25519 <base64>" of the unencrypted Ed25519 private key in file
 * `key` into buf (as `ssh-keygen -y -f key` prints it, without the
 * comment).  1, or 0 when the key is not one read here.
 */
int amp_sshsig_public_key(const char *key, char *buf, size_t bufsz);

/*
 * What `ssh-keygen -Y verify -n ns -f allowed -I principal -s <sig>`, its
 * time `when_s` (as -Overify-time, see sign.c), says of the armored
 * signature sig[0..siglen) over data[0..len): 1 when it accepts it; 0
 * when the signature is good but no line of `allowed` grants its key to
 * `principal` in namespace ns at that time; -1 when it cannot be told
 * here (ask ssh-keygen: a signature that does not verify is one).
 */
int amp_sshsig_verify(const char *allowed, const char *ns, const char *sig, size_t siglen,
		      const char *data, size_t len, int64_t when_s, const char *principal);

/*
 * As `ssh-keygen -Y find-principals -s <sig> -f allowed` at `when_s`: 1
 * with the comma-separated principals of the first line granting the
 * signature's key at that time in buf[0..bufsz); 0 when there is none; -1
 * when it cannot be told here.  The signature itself is not checked
 * (neither does ssh-keygen): amp_sshsig_verify does that.
 */
int amp_sshsig_find_principals(const char *allowed, const char *sig, size_t siglen,
			       int64_t when_s, char *buf, size_t bufsz);

#endif
