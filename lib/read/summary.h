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

#include "base/error.h"
#include "store/store.h"

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

/* What the listing prints of a task, without building its JSON (at 25,000
 * tasks, most of `amp status`'s time went to building and freeing it). */
typedef struct amp_summary_brief {
	char state[24];
	int reject_count, messages, unreadable;
	size_t acks_pending, acks_overdue; /* against now_ms */
	int extras; /* claims or dependencies: amp_summary_get has them */
} amp_summary_brief;

/* amp_summary_get's fields above for `task`, from the same cache; `tree`
 * is its directory's tree in root when the caller has it (the listing of
 * amp_store_list_task_trees), else NULL.  AMP_OK, or AMP_EIO with err
 * filled (the task directory cannot be read). */
int amp_summary_brief_get(amp_summaries *c, amp_store *st, git_tree *root, const char *task,
			  const git_oid *tree, int64_t now_ms, amp_summary_brief *out,
			  amp_error *err);

/* Whether the listing leaves the task out by default: approved or
 * aborted, with no ACK still awaited and no record unreadable.  None of
 * that depends on the time, so a shard whose tree did not change holds
 * the same open tasks. */
int amp_summary_finished(const amp_summary_brief *b);

/*
 * What the team reports on the task of `log` (issue 33) while it is not
 * finished (amp_summary_finished, judged from log as the listing would),
 * or whether it is or not with `finished_too`:
 * in *out a new object {"task_id", "progress", "questions", "released"}
 * (amp_summary_get's arrays, which do not depend on the time), or NULL
 * when the task reports nothing or is finished.  For a reader that has
 * the log already (the inbox's cache, inbox_team.h): it neither reads the
 * records again nor touches the status cache.  AMP_OK, or AMP_EIO with
 * err filled (out of memory).
 */
int amp_summary_team_reports(const amp_task_log *log, int64_t now_ms, int finished_too,
			     json_t **out, amp_error *err);

/*
 * The tasks of root that are not finished (amp_summary_finished), sorted
 * by name as amp_store_list_task_trees sorts them, each with its
 * directory's tree; *finished counts the task directories left out.  A
 * task whose directory cannot be read is listed (its brief summary then
 * fails again, for the listing to report).  A shard directory whose tree
 * is the one the shards file (<git common dir>/amp/status.shards, written
 * by amp_summaries_close) holds is not read again: a listing of 25,000
 * finished tasks reads one tree per shard, not 25,000 summaries.  *ids
 * (amp_strv_free) and *trees (free) are the caller's.  AMP_EIO with err
 * filled when the tasks/ trees cannot be read.
 */
int amp_summary_list_open(amp_summaries *c, amp_store *st, git_tree *root, int64_t now_ms,
			  char ***ids, git_oid **trees, size_t *count, size_t *finished,
			  amp_error *err);

#endif
