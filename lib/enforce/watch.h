/*
 * watch.h - the enforcer: the AMP/1.0 rules that need a clock, and a second
 * look at whatever reached the SSOT without `amp send` (a fetch, an older
 * amp, a hand-made commit).
 *
 * A pass reads what changed in the SSOT since the previous pass and
 * escalates, as `system`, each cause it finds, once:
 *
 *   ack_timeout        a message with requires_ack and no ACK after its
 *                      deadline (amp_task_ack_deadline), or an ACK that
 *                      came by fetch after it                (cause: it)
 *   heartbeat_timeout  whoever holds the ball (amp_task_holders) wrote
 *                      nothing to the SSOT (a message, an ACK, a heartbeat)
 *                      for amp.heartbeatTimeout             (cause: its
 *                      last write, or the hand-off)
 *   hallucination_lock a task due to lock (rejecting verdicts since the
 *                      last resume reach amp.lockThreshold, malformed ones
 *                      included, and no lock recorded; amp send writes the
 *                      lock with the verdict, a fetch cannot) (cause: the
 *                      verdict that reached it)
 *   conflict (info)    a verdict with confidence < 0.8      (cause: it)
 *   permission_denied  an ACK or a result that came by fetch for a dispatch
 *                      awaiting the admin's approval  (cause: the dispatch)
 *   branch_violation   a task_dispatch to main/master in the SSOT
 *   ci_failure         a review_request in the SSOT despite failed CI
 *   unknown            a record that is not JSON, not schema-valid, breaks
 *                      another send-time rule, or whose timestamp is
 *                      further than amp.maxClockSkew from the commit that
 *                      brought it (No Silent Failure)
 *
 * Each new message is checked again against the schema and against the
 * rules with the log of its task as it stood before it, which is what
 * `amp send` saw.  Deadlines run from the later of a record's timestamp and
 * the committer time of the commit that first held it (found by walking
 * the new commits), from the commit time alone when the two are further
 * apart than amp.maxClockSkew (amp_task_trusted_time).
 *
 * "Once" holds across passes, restarts, --full and concurrent watchers
 * because every escalation goes through amp_send_escalation with `once`,
 * whose check of (escalation_type, from, cause) runs inside the
 * compare-and-swap.  The cause (amp_escalation_cause) of an `unknown`
 * escalation about a record is the record's path, named first in its
 * description ("amp watch cannot use <path>: <why>"), since a control
 * record or a file whose name is no msg_id has no msg_id to name, and a
 * message and its ACK share one; so is that of a heartbeat_timeout whose
 * holder last wrote a heartbeat ("no write since <path>: ..."); any other
 * cause is affected_msgs[0].
 * State kept in <git common dir>/amp/watch.json (the last tip processed,
 * the open timers with the arrival of their messages, the tasks found
 * unreadable) only saves work: a lost or corrupt file costs a full rescan,
 * nothing else.
 *
 * Damage stays local: a record whose blob cannot be read is an unreadable
 * record (escalated once); a task whose directory cannot be read is
 * skipped, reported once through `errors` (AMP_EIO for that pass only) and
 * read again by each later pass until it can be.
 */
#ifndef AMP_WATCH_H
#define AMP_WATCH_H

#include <stdint.h>

#include "base/error.h"
#include "schema/schema.h"
#include "store/store.h"
#include "protocol/protocol.h"

/* The defaults of the store's policy (store.h). */
#define AMP_WATCH_LOCK_THRESHOLD   AMP_POLICY_LOCK_THRESHOLD
#define AMP_WATCH_HEARTBEAT_SEC    AMP_POLICY_HEARTBEAT_SEC
#define AMP_WATCH_CONFIDENCE_MIN   AMP_CONFIDENCE_MIN

typedef struct amp_watch_opts {
	int64_t now_ms;
	int lock_threshold;     /* the policy's amp.lockThreshold (the state
				 * of a task is computed with the policy of
				 * the store; this keys the saved state and
				 * must be the same) */
	int64_t heartbeat_ms;   /* the policy's amp.heartbeatTimeout */
	int full;               /* ignore the saved state */
} amp_watch_opts;

/* Fills o from the store's policy (amp_store_policy: git config, checked
 * when the store was opened) and the clock. */
int amp_watch_opts_load(amp_store *st, amp_watch_opts *o, amp_error *err);

/* One thing a pass did. */
typedef struct amp_watch_action {
	const char *action;          /* "escalated" */
	const char *escalation_type;
	const char *severity;
	const char *task_id;
	const char *cause;           /* affected_msgs[0], else the record's
				      * path (an unknown escalation about a
				      * record without a msg_id) */
	const char *msg_id;          /* the escalation written */
} amp_watch_action;

typedef void (*amp_watch_report_fn)(const amp_watch_action *a, void *ctx);

typedef struct amp_watch_stats {
	int unchanged;       /* the tip was the one of the last pass */
	int rescanned;       /* no usable state: everything was read */
	size_t tasks_read;
	size_t escalated;
} amp_watch_stats;

/*
 * One pass.  *set is the schema set, loaded on first need (an unchanged
 * SSOT needs none) when NULL; the caller frees it.  Calls report (may be NULL) for each escalation written.
 * Returns AMP_OK, or AMP_EIO when the SSOT could not be read, an
 * escalation could not be written, or a task was newly found unreadable
 * (every such failure in `errors`; what could be done was done).
 */
int amp_watch_pass(amp_store *st, amp_schema_set **set, const amp_watch_opts *o,
		   amp_watch_report_fn report, void *ctx, amp_watch_stats *stats,
		   amp_errlist *errors);

/*
 * Adds to `touched` ({task_id: {record file name: true}}) each record of
 * the tasks/ tree that differs between commit trees a (NULL: empty) and b;
 * a task whose directory cannot be read becomes {task_id: null}.  Subtrees
 * with the same id are skipped, so the cost follows the change.  Returns 0,
 * or -1 when b cannot be read.
 */
int amp_watch_diff_records(git_repository *repo, git_tree *a, git_tree *b, json_t *touched);

/* Larger than any walk index: the order of a record the walk missed. */
#define AMP_WATCH_WALK_LAST ((int64_t)1 << 62)

/*
 * Walks the commits between `from` (NULL: the beginning) and `to`, each
 * against its first parent, and sets in `times` for each record they add
 * the least n seen: with by_time the committer time (ms) of the commit
 * that added it, else its place in the history (AMP_WATCH_WALK_LAST - k
 * for the k-th newest commit: older is less).  Best effort: a commit that
 * cannot be read adds nothing.  Returns 0, or -1 when the walk cannot
 * start.
 */
int amp_watch_walk_records(git_repository *repo, const git_oid *from, const git_oid *to,
			   amp_record_times *times, int by_time);

/*
 * amp_watch_walk_records, except that with by_time a commit at or below a
 * commit the hub noted (store/arrivals.h) counts from the hub's arrival
 * time, not from the committer time its writer chose (issue 32); those
 * records also go into `vouched` (may be NULL).
 */
int amp_watch_walk_arrivals(git_repository *repo, const git_oid *from, const git_oid *to,
			    amp_record_times *times, int by_time, amp_record_times *vouched);

#endif
