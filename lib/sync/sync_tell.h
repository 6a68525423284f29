/*
 * sync_tell.h - what a sync could not join as it was, told to the admin
 * (sync_tell.c).  Private to lib/sync/.  Best effort: nothing returned.
 */
#ifndef AMP_SYNC_TELL_H
#define AMP_SYNC_TELL_H

#include "schema/schema.h"
#include "sync_index.h"

/* Logs conflict *c (refused with *why) on the errors ref and, for a
 * message, escalates it to the admin once. */
void amp_sync_log_conflict(amp_store *st, amp_schema_set *set, const char *remote,
			   const struct conflict *c, const amp_error *why);

/* Logs and escalates once each record of `refused` ({task, kind, id,
 * reason, blob, escalated}) a join set aside, `source` the remote or
 * inbox it came from: each logged on the errors ref, and escalated unless
 * the join did (`escalated`, sync_escalate.h). */
void amp_sync_tell_refused(amp_store *st, amp_schema_set *set, const char *source,
			   const json_t *refused);

#endif
