/*
 * recsig.h - a record's own signature (issue 32): authorship that travels
 * with the record, not only with the commit that first carried it.
 *
 * In strict mode (sign.h: amp.requireSigned with amp.signingKey) every
 * record amp writes gets a sibling blob, its signature: `ssh-keygen -Y
 * sign -n amp-record` of the record's exact bytes with amp.signingKey,
 * armored, at amp_store_record_sig_path(<record path>) ("<record>.sig").
 * A reader verifies it against amp.allowedSigners: the principal must
 * grant the record's "from" role, and a principal naming an instance
 * ("alice@executor") must be the record's instance (a claim's agent).
 * The commit's signature then only says who moved the ref, so a hub's
 * join, a replay, or a restore from any clone may carry anyone's records
 * unchanged, the record and its signature byte for byte.
 *
 * Verifying costs two ssh-keygen runs, or none for an Ed25519 key
 * (sshsig.h); what ssh-keygen verified, (signature blob, record blob,
 * time) -> principal, is kept in <git dir>/amp/record-sigs (sigcache.h),
 * derived and safe to delete, and dropped whenever amp.allowedSigners
 * changes (its size or modification time).
 */
#ifndef AMP_RECSIG_H
#define AMP_RECSIG_H

#include <git2.h>
#include <stdint.h>

#include "base/error.h"
#include "sign.h"

/* The namespace of a record signature (ssh-keygen -Y sign -n). */
#define AMP_RECORD_SIG_NAMESPACE "amp-record"
/* A record signature larger than this is not one amp reads. */
#define AMP_RECORD_SIG_MAX 8192

struct amp_store;

/*
 * The record signature of the record at `path` in `tree`: 1 when it is
 * there and verifies (see above) for a principal granting `role`
 * (principal[0..psz)), with `agent` (NULL: none) its instance when the
 * principal names one; 0 when not, why in why[0..whysz) and *present 1
 * when there is a signature that fails, 0 when there is none; AMP_EIO.
 * Keys are checked at when_s (0: now), a key's valid-before and
 * valid-after with it.
 */
int amp_store_record_sig_verify(struct amp_store *st, git_tree *tree, const char *path,
				const char *role, const char *agent, int64_t when_s,
				int *present, char *principal, size_t psz, char *why,
				size_t whysz, amp_error *err);

/*
 * What a writer acting on record `e` of task `task` at the tip (an ACK of
 * it) checks in strict mode: when it has a record signature, that it
 * verifies for its "from" role, its keys checked at its own timestamp.  1
 * when it does, or when it has none (an SSOT written before record
 * signatures: its commits proved it), or outside strict mode; 0 with why;
 * AMP_EIO.
 */
int amp_store_record_sig_check_entry(struct amp_store *st, git_tree *tip, const char *task,
				     const amp_entry *e, char *why, size_t whysz, amp_error *err);

/*
 * Strict mode's check of a commit that arrives, with records' own
 * signatures: each record of recs (their path set) whose signature is in
 * the commit's tree is verified (a signature that fails: 0, naming the
 * record) and marked proven; then amp_signing_check_commit.  1 when it
 * passes, 0 with why filled, AMP_EIO.
 */
int amp_store_check_commit_signed(struct amp_store *st, const git_commit *commit,
				  amp_signed_record *recs, size_t n, const char *agent,
				  char *why, size_t whysz, amp_error *err);

/*
 * A record's signature as the writer makes it: when `path` is a record's
 * (a task's, or the registry's) and strict mode is on with a key, the
 * signature of data[0..len) into *sig (malloc'd, *siglen bytes) and its
 * path into sigpath.  AMP_OK; AMP_NOOP when there is nothing to sign;
 * AMP_EIO when ssh-keygen cannot sign.
 */
int amp_store_record_sig_make(struct amp_store *st, const char *path, const char *data,
			      size_t len, char *sigpath, size_t sigpathsz, char **sig,
			      size_t *siglen, amp_error *err);

#endif
