/*
 * sign.h - who said it: every commit amp writes signed with an SSH key, as
 * git signs commits with gpg.format=ssh, and the roles a key may speak as.
 *
 * git config amp.signingKey names the key `ssh-keygen -Y sign -f` takes (a
 * private key file, or a public one whose private half is in ssh-agent).
 * With it, every commit amp writes carries a "gpgsig" header, made by
 * `ssh-keygen -Y sign -n git`, so `git log --show-signature` and `git
 * verify-commit` (given gpg.ssh.allowedSignersFile) check it.
 *
 * git config amp.allowedSigners names a file in git's allowed-signers
 * format ("principals [options] keytype base64 [comment]", see
 * ssh-keygen(1) ALLOWED SIGNERS).  A principal names the role a key may
 * speak as: `executor`, or `alice@executor` for a named instance of it
 * (the part after the last "@" is the role).  With amp.requireSigned true
 * (strict mode):
 *   - a write whose commit author (the role writing it) the signing key's
 *     principals do not grant is refused before anything is written;
 *   - AMP_NOW is refused (it exists for tests);
 *   - amp watch and the hooks verify every commit that arrives
 *     (amp_signing_verify_commit).
 */
#ifndef AMP_SIGN_H
#define AMP_SIGN_H

#include <git2.h>
#include <limits.h>
#include <stdint.h>

#include "base/error.h"

struct amp_sigcache;

typedef struct amp_signing {
	char key[PATH_MAX];      /* amp.signingKey; "" when none */
	char allowed[PATH_MAX];  /* amp.allowedSigners; "" when none */
	int require;             /* amp.requireSigned */
	struct amp_sigcache *cache; /* verified signatures kept (sigcache.h,
				     * the store's); NULL: none */
} amp_signing;

/* 1 when `principal` grants `role`: it is the role, or ends in "@role". */
int amp_principal_grants(const char *principal, const char *role);

/*
 * Creates a commit as git_commit_create does (no ref is updated), signed
 * with s->key when there is one.  AMP_EIO when it cannot be written or
 * signed (ssh-keygen's own reason goes to stderr).
 */
int amp_sign_commit_create(git_repository *repo, const amp_signing *s, git_oid *out,
			   const git_signature *author, const git_signature *committer,
			   const char *encoding, const char *message, const git_tree *tree,
			   size_t nparents, const git_commit **parents, amp_error *err);

/*
 * `ssh-keygen -Y sign -n ns -f s->key` of data[0..len), made in process
 * for an unencrypted Ed25519 key (sshsig.h): the armored signature into
 * *sig (malloc'd, the caller frees it), its length in *siglen.  AMP_EIO
 * when it cannot be made (ssh-keygen's reason in err).
 */
int amp_sign_buffer(const amp_signing *s, const char *ns, const char *data, size_t len,
		    char **sig, size_t *siglen, amp_error *err);

/*
 * Verifies the armored signature sig[0..siglen) over data[0..len) in
 * namespace ns: `ssh-keygen -Y find-principals` then `-Y verify` against
 * s->allowed, at time when_s (seconds since the epoch: a key's
 * valid-after and valid-before are checked then; `at` names that time in
 * a reason, "its commit time").  Returns 1 (the principal, one granting
 * `role` unless role is NULL, in principal[0..psz)), 0 (why in
 * why[0..whysz)), or AMP_EIO.  The principal `hint` (NULL: `role`) is
 * tried first with one `-Y verify -I hint` run: a signature by a key of
 * the expected principal costs one ssh-keygen run, not two.  Callers ask
 * amp_signing_verify_in_process first (an Ed25519 signature, sshsig.h) and
 * this only when that cannot say yes: ssh-keygen's answer is the one
 * returned.
 */
int amp_signing_verify_buffer(const amp_signing *s, const char *ns, const char *sig,
			      size_t siglen, const char *data, size_t len, int64_t when_s,
			      const char *at, const char *role, const char *hint, char *principal,
			      size_t psz, char *why, size_t whysz, amp_error *err);

/*
 * The in-process half of amp_signing_verify_buffer (sshsig.h): 1 with the
 * principal when the signature verifies as ssh-keygen would verify it, 0
 * when only ssh-keygen can say (then ask amp_signing_verify_buffer).
 */
int amp_signing_verify_in_process(const amp_signing *s, const char *ns, const char *sig,
				  size_t siglen, const char *data, size_t len, int64_t when_s,
				  const char *role, const char *hint, char *principal, size_t psz);

/*
 * The two in the callers' order, the one sequence of a commit's and a
 * record's signature: amp_signing_verify_in_process, then what `cache`
 * (sigcache.h; NULL: none) keeps under `key` (a principal ssh-keygen
 * verified before for the same bytes, role and time), then
 * amp_signing_verify_buffer, whose principal is kept there under key when
 * it says yes.  What verified in process is not kept: checking it again
 * (~0.2 ms) costs less than a cache every process would read whole.
 * Returns as amp_signing_verify_buffer does.
 */
int amp_signing_verify_kept(const amp_signing *s, struct amp_sigcache *cache, const char *key,
			    const char *ns, const char *sig, size_t siglen, const char *data,
			    size_t len, int64_t when_s, const char *at, const char *role,
			    const char *hint, char *principal, size_t psz, char *why, size_t whysz,
			    amp_error *err);

/*
 * Strict mode's write check: AMP_OK when s->key's public key has a line in
 * s->allowed whose principals grant `role`; AMP_ERULE naming the role and
 * the key's fingerprint when not (or when there is no key); AMP_EIO when a
 * file cannot be read.  With `agent` (a named instance, store.h; NULL or
 * "": none), a principal naming another instance ("alice@executor" for
 * agent "bob") does not grant: AMP_ERULE at "/agent" saying they disagree.
 * The granting principal goes to principal[0..psz) (psz 0: not wanted).
 * role NULL: any principal grants (a write on the errors ref).  A line
 * whose valid-after or valid-before excludes now does not grant: AMP_ERULE
 * naming the option.
 */
int amp_signing_may_write(const amp_signing *s, const char *role, const char *agent,
			  char *principal, size_t psz, amp_error *err);

/*
 * Verifies commit `id`: it carries a signature that `ssh-keygen -Y verify
 * -n git` accepts for a principal of s->allowed granting `role`.  Returns
 * 1 (the principal in principal[0..psz)), 0 (why in why[0..whysz): not
 * signed, a key not in the file, a principal that does not grant the role,
 * a signature that does not verify), or AMP_EIO.  A commit ssh-keygen
 * verified for a role is not verified again while s->allowed is the same
 * (s->cache, keyed by the commit id and the role).
 */
int amp_signing_verify_commit(git_repository *repo, const amp_signing *s, const git_oid *id,
			      const char *role, char *principal, size_t psz, char *why,
			      size_t whysz, amp_error *err);

/* A record a commit adds, as amp_signing_check_commit sees it. */
typedef struct amp_signed_record {
	const char *from;   /* its role */
	const char *path;   /* its path in the commit's tree (NULL: unknown) */
	int proven;         /* 1 when its own signature proves its author
			     * (recsig.h): it needs no proof from the commit */
	const char *task;   /* its task ("" for a register record) */
	const char *agent;  /* the instance it says wrote it (a claim's, a
			     * heartbeat's, the holder's release's agent), or
			     * NULL */
} amp_signed_record;

/*
 * Strict mode's check of a commit that arrives (a push, a fetch), whose
 * records (messages ref) are recs (count n; 0 for a commit that adds no
 * record, or for the errors ref), and whose Amp-Agent trailer is `agent`
 * ("": none): it is signed by a key of s->allowed
 * (amp_signing_verify_commit) whose principal grants the role it was
 * written as, its author (a commit with no record: any principal); each
 * record comes from that role, or from system beside a record of that role
 * in the same task (the escalation amp commits with an act: the lock with
 * a verdict, ack_timeout with a late ACK) -- or the commit is system's
 * own; and when the principal names an instance ("alice@executor"), the
 * trailer and every record's agent name that instance, or none.  1 when
 * it passes, 0 with why filled, AMP_EIO.
 *
 * A record marked `proven` (its own signature names its author,
 * recsig.h) needs none of that: nor does a record from system in the task
 * of a proven record (an escalation or a superseded marker committed with
 * it).  When every record is so, the commit only has to be signed by a
 * key of s->allowed, whatever its principal: it says who moved the ref,
 * and any commit may carry any author's records (a hub's join, a replay).
 */
int amp_signing_check_commit(git_repository *repo, const amp_signing *s, const git_commit *commit,
			     const amp_signed_record *recs, size_t n, const char *agent,
			     char *why, size_t whysz, amp_error *err);
/*
 * Where trust starts in strict mode, on one ref.  A commit carrying the
 * trailer "Amp-Strict: on" and signed by a key whose principal grants
 * admin (amp_signing_verify_commit, at its commit time) is where strict
 * mode was turned on (`amp init` writes it with the admin's key): the
 * history below it, which its signature covers through the parent ids,
 * is vouched for by the admin and not checked for signatures; everything
 * from it up is.  The oldest such commit on the first-parent line of the
 * ref counts.  Why a signed record and not "unsigned history before the
 * first signed commit": with that rule an attacker who rewrites a ref to
 * a history with no signed commit, or pushes unsigned commits on top of
 * an unsigned init before anyone signs, has them trusted; a marker needs
 * the admin's key, its parent ids pin what it vouches for, and a history
 * without one is checked whole (a rewrite that drops it fails closed).
 */
#define AMP_STRICT_TRAILER "Amp-Strict: on"

typedef struct amp_trust {
	git_oid tip;     /* the ref's tip: the start is looked for below it */
	int looked;      /* 0 until the first amp_trust_vouches */
	int found;       /* a start was found */
	git_oid start;
	git_oid *below;  /* the first-parent line below start, sorted */
	size_t nbelow;
} amp_trust;

/* Starts t for a ref whose tip is `tip` (nothing is read yet). */
void amp_trust_init(amp_trust *t, const git_oid *tip);
/* 1 when t has a start, found as above (looked for on the first call). */
int amp_trust_found(amp_trust *t, git_repository *repo, const amp_signing *s, amp_error *err);
/* 1 when commit `id` is history the start vouches for (below it); 0 when
 * it is not (or there is no start); AMP_EIO. */
int amp_trust_vouches(amp_trust *t, git_repository *repo, const amp_signing *s,
		      const git_oid *id, amp_error *err);
void amp_trust_free(amp_trust *t);

/*
 * Appends "<principal> <type> <base64> [comment]" to s->allowed for the
 * public key `pubkey` ("type base64 [comment]", or a file holding it),
 * principal `role` or "<agent>@<role>"; the file is created (mode 0644)
 * when missing.  AMP_EUSAGE for a role that is not one, an agent name
 * that is not [A-Za-z0-9._-]{1,64}, no amp.allowedSigners, or a key
 * ssh-keygen cannot read; AMP_NOOP when the line is there already; the
 * key's fingerprint goes to fp.
 */
int amp_signing_add_key(const amp_signing *s, const char *role, const char *agent,
			const char *pubkey, char *fp, size_t fpsz, amp_error *err);

#endif
