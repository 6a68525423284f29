/*
 * sync_replay.h - the replay of local commits onto the remote's tip
 * (sync_replay.c).  Private to lib/sync/.
 */
#ifndef AMP_SYNC_REPLAY_H
#define AMP_SYNC_REPLAY_H

#include "schema/schema.h"
#include "sync_index.h"

/*
 * Replays the first-parent commits of `local` that `base` (NULL: none)
 * does not reach onto `onto`, record by record; *out is the new tip
 * (`onto` when nothing was new), *replayed counts the records and
 * *superseded those set aside.  Records a rule refuses in their new place,
 * and those `aside` names (blob id -> the hub's reason; NULL: none), are
 * set aside, noted in `refused` and escalated right after (NULL: neither,
 * sync_escalate.h).  AMP_ERULE with *c
 * filled for a conflicting record, AMP_ESCHEMA, AMP_EIO.
 */
int amp_sync_replay(amp_store *st, amp_schema_set *set, const git_oid *local,
		    const git_oid *base, const git_oid *onto, json_t *refused, json_t *aside,
		    git_oid *out, unsigned long *replayed, unsigned long *superseded,
		    struct conflict *c, amp_error *err);

/* The errors ref's join: the local commits replayed onto `onto` as a
 * union of files by path (sync_replay.c).  *out is the new tip. */
int amp_sync_replay_union(amp_store *st, const git_oid *local, const git_oid *base,
			  const git_oid *onto, git_oid *out, amp_error *err);

#endif
