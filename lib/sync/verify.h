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

/*
 * Checks every commit of the messages ref reachable from `to` (the
 * remote's tip, just fetched) and from neither `seen` (the remote's tip
 * at the last fetch; NULL: none) nor `local` (the local tip before the
 * sync; NULL: none), oldest first, with the hub's check
 * (amp_hook_check_commit: form, rules on the history before it, and, with
 * amp.allowedSigners, signatures).  Each record a problem names (a
 * problem of the commit itself names every record it adds) is escalated
 * to the admin once per record, from system, its cause the record's path
 * (task.h: AMP_RECORD_CAUSE, so `amp watch` does not escalate it again):
 * `permission_denied` (critical: the task is suspended) for a commit its
 * key may not have written, `unknown` (warning) otherwise; and, when this
 * clone is the first to escalate it, logged on the errors ref (command
 * "sync", source `remote`) with the record's bytes and the reasons, and
 * reported on stderr (`amp sync: warning: ...`).  The record stays where
 * it is: the hub's history is append-only for everyone.  Best effort: a
 * commit that cannot be read is passed over.  Returns the number of
 * escalations written.
 */
unsigned long amp_sync_verify_fetched(amp_store *st, amp_schema_set *set, const char *remote,
				      const git_oid *seen, const git_oid *local,
				      const git_oid *to);

#endif
