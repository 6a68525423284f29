/*
 * fsck.h - verifies the whole history of the SSOT: what `amp fsck` runs.
 *
 * Every commit of the messages ref and of the errors ref, from the root up
 * the first parents, is checked against its first parent:
 *   - it is no merge, and it only adds regular files: it modifies, deletes
 *     or renames nothing (the hook's check, amp_hook_check_commit);
 *   - on the messages ref, every file it adds but "AMP" is a record in its
 *     place (tasks/<YYYY>/<S>/<task_id>/<seq>.<msg|ack|ctl>.<id>.json,
 *     its sequence number above the task's older records), well formed
 *     (its schema, its msg_id or ack_for and task_id those of its place, no
 *     reused msg_id, no dispatch to a protected branch), and a superseded
 *     marker names the record committed right after it in the same commit;
 *     these are "corrupt" findings;
 *   - every record a commit adds on the messages ref passes the protocol's
 *     rules on the history before it (amp_hook_check_record: an ACK by the
 *     addressee of a message in the SSOT, the transition table, ...);
 *     these are "rule" findings: a history can be intact and still hold a
 *     record that amp send would have refused (a hand-made or fetched one);
 *   - the amp trailers of its message (Amp-Task, Amp-Msg-Id, Amp-Ack-For,
 *     Amp-Escalation, Amp-Type, Amp-Superseded) name what it adds, and a
 *     commit that carries them adds no message or ACK they do not name
 *     ("corrupt": the log says another thing than the files).  A commit
 *     without amp's trailers (made by hand) is checked for its files only.
 * Whatever cannot be read (a missing or corrupt object) is an "unreadable"
 * finding; the walk goes on with what can be read.
 */
#ifndef AMP_FSCK_H
#define AMP_FSCK_H

#include <jansson.h>

#include "base/error.h"
#include "schema/schema.h"
#include "store/store.h"

typedef struct amp_fsck_stats {
	size_t commits;   /* commits checked, both refs */
	size_t corrupt;   /* findings of each kind */
	size_t rule;
	size_t unreadable;
} amp_fsck_stats;

/*
 * Checks both refs of st as described above and appends one object per
 * finding to `findings` (a JSON array), oldest commit first, messages ref
 * first: {"ref", "commit" (40 hex digits), "file" (the path in the tree, ""
 * for the commit itself), "kind" ("corrupt", "rule" or "unreadable"),
 * "reason"}.  Returns AMP_OK when the walk went through, findings or not,
 * or AMP_EIO (err filled) when a ref cannot be read or walked at all.
 */
int amp_fsck_run(amp_store *st, amp_schema_set *set, json_t *findings,
		 amp_fsck_stats *stats, amp_error *err);

#endif
