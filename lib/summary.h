/*
 * summary.h - the one-line summary of each task `amp status` prints
 * without a task, kept in a cache so that the listing does not read every
 * record of the SSOT each time.
 *
 * The cache, <git common dir>/amp/status.cache (one line per task; the
 * format is in summary.c), keeps per task the id of
 * its directory's tree (content-addressed: a task whose records did not
 * change has the same one), the summary's fields that do not depend on the
 * time, and the ACK deadline of each message still waiting for its ACK;
 * acks_pending and acks_overdue are counted from those against `now`; the
 * leases not released (agent, subtask, when each runs out) and the
 * dependencies, whose claims are expired against `now` and whose states
 * are read from those tasks' own entries at listing time.  It
 * is keyed by the store's policy (amp.lockThreshold, amp.approvalRequired,
 * amp.maxClockSkew), which the states depend on.  A missing, unreadable or
 * foreign cache is rebuilt, a line that does not read back is read from
 * the task's records; a cache that cannot be written costs speed only.
 */
#ifndef AMP_SUMMARY_H
#define AMP_SUMMARY_H

#include <jansson.h>
#include <stdint.h>

#include "error.h"
#include "store.h"

typedef struct amp_summaries amp_summaries;

/* Loads the cache of st (never fails: a bad cache is an empty one).  Free
 * with amp_summaries_close, which writes it back when it changed. */
amp_summaries *amp_summaries_open(amp_store *st);
void amp_summaries_close(amp_summaries *c);

/*
 * The summary of task `task` at tip `root` and `now_ms` (a new object the
 * caller owns): {"task_id","state","reject_count","suspended","locked",
 * "messages","acks_pending","acks_overdue","unreadable","last_timestamp",
 * "claims" ([{"agent","subtask_id"|null,"expires","expired"}]: the leases
 * not released, expired against now_ms), "waits_for" ([{"task_id","soft",
 * "state"}]: the dependencies not approved, each state from that task's
 * own summary)},
 * from the cache when the task's tree is the one it holds (and that tree
 * is still in the object database), else from its records (and cached).
 * NULL with err filled when the task directory cannot be read.
 */
json_t *amp_summary_get(amp_summaries *c, amp_store *st, git_tree *root, const char *task,
			int64_t now_ms, amp_error *err);

#endif
