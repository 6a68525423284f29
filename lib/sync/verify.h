/*
 * verify.h - what amp sync checks in what it fetches (issue 32): a hub
 * without amp's hook (GitHub, GitLab, any bare repository) takes whatever
 * is pushed to it, so each clone checks the commits it fetches as the
 * hub's hook would have checked them.  Private to lib/sync/.
 */
#ifndef AMP_SYNC_VERIFY_H
#define AMP_SYNC_VERIFY_H

#include <git2.h>

#include "schema/schema.h"
#include "store/store.h"

/* What a sync checked: read once, before its first fetch. */
typedef struct amp_sync_checked {
	int on;          /* git config amp.syncVerify (default true) */
	int have_tip;
	git_oid tip;     /* the remote's tip checked last (at the last fetch
			  * of an earlier sync: its mirror), or fetched
			  * unchecked with amp.syncVerify false */
	int have_local;
	git_oid local;   /* the local tip before the sync */
} amp_sync_checked;

/*
 * Fills c for a sync whose mirror of the remote's messages ref is
 * `mirror` and whose local tip is `local` (NULL: none yet).  AMP_EUSAGE
 * when amp.syncVerify is not a boolean, AMP_EIO.
 */
int amp_sync_checked_init(amp_store *st, const char *mirror, const git_oid *local,
			  amp_sync_checked *c, amp_error *err);

/*
 * When `to` (the remote's tip, just fetched) is not c->tip: checks every
 * commit reachable from `to` and from neither c->tip nor c->local, oldest
 * first, with the hub's check (amp_hook_check_commit: form, rules on the
 * history before it, and, with amp.allowedSigners, signatures), unless
 * c->on is 0; then `to` becomes c->tip.  Each record a problem names (a
 * problem of the commit itself names every record it adds) is escalated
 * to the admin once per record, from system, its cause the record's path
 * (task.h: AMP_RECORD_CAUSE, so `amp watch` does not escalate it again):
 * `permission_denied` (critical: the task is suspended) for a commit its
 * key may not have written, `unknown` (warning) otherwise; and, when this
 * clone is the first to escalate it, logged on the errors ref (command
 * "sync", source `remote`) and reported on stderr (`amp sync: warning:
 * ...`; also when it cannot be escalated: strict mode with a key that may
 * not write as system).  The record stays where it is: the hub's history
 * is append-only for everyone.  Best effort: a commit that cannot be read
 * is passed over.  Returns the number of escalations written.
 */
unsigned long amp_sync_check_new(amp_store *st, amp_schema_set *set, const char *remote,
				 amp_sync_checked *c, const git_oid *to);

#endif
