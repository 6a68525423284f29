/*
 * task.h - the state of a task, derived from its records in the SSOT.
 *
 *   (none) --task_dispatch--> dispatched --ACK by executor--> in_progress
 *   in_progress --task_result--> submitted --review_request--> in_review
 *   in_review --review_verdict--> approved | rejected
 *   rejected --task_dispatch (re-dispatch)--> dispatched ...
 *   any --critical escalation--> suspended (hallucination_lock: locked)
 *   suspended | locked --admin resume--> the state it had before
 *
 * Nothing here is stored: the state is always recomputed from the task's
 * records, so it cannot drift from the audit trail.
 */
#ifndef AMP_TASK_H
#define AMP_TASK_H

#include <jansson.h>
#include <stdint.h>

#include "store.h"

typedef struct amp_task_state {
	const char *state;      /* what `amp status` shows (static string) */
	const char *flow_state; /* the same, ignoring suspension and lock */
	int reject_count;       /* rejected verdicts, ever */
	int rejects_since_resume; /* rejected verdicts since the last resume */
	int suspended;          /* a critical escalation is in force */
	int locked;             /* ... and it is a hallucination lock */
	int messages;           /* number of messages (not ACKs/controls) */
	const char *suspended_by;   /* msg_id of that escalation (borrowed) */
	const json_t *last_dispatch; /* latest task_dispatch (borrowed) */
	const char *last_successful_msg_id; /* borrowed, NULL when none */
	const char *last_msg_id;    /* borrowed, NULL when none */
	int64_t last_activity_ms;   /* time of the newest record */
} amp_task_state;

/* 1 when record e is what its place says it is: a message named by its
 * own msg_id, of this task; an ACK named by the msg_id it acknowledges; any
 * control record.  Only such records make the state: a record out of its
 * place (a fetch, a hand-made commit) is shown and escalated, never
 * counted. */
int amp_task_entry_in_place(const amp_task_log *log, const amp_entry *e);

/* Computes the state from a task's log, from its records in place
 * (amp_task_entry_in_place); pointers borrow from the log. */
void amp_task_state_compute(const amp_task_log *log, amp_task_state *out);

/* The "timestamp" of a record in Unix ms, or -1 when it has none. */
int64_t amp_record_time(const json_t *doc);

/*
 * The cause of an escalation: what "once per cause" compares.  An escalation
 * about a record of the SSOT (amp watch's `unknown`) begins its description
 * with AMP_RECORD_CAUSE "<path>: " where <path> is the record's path in the
 * tree ("tasks/2026/0/T-2026-044/000002.ctl.resume-1.json"); its cause is
 * that path, so a record that has no msg_id (a control record, a file name
 * that is not a msg_id) has a stable cause too, and two records naming the
 * same msg_id (a message and its ACK) are two causes.  Any other escalation's
 * cause is its first affected message.  The escalation schema is closed and
 * affected_msgs holds msg_ids only, so the description is the one field that
 * can name a path; it is inside the record, hence visible to the check in
 * the compare-and-swap.  `msg` is a whole envelope.  Writes the cause into
 * buf and returns it, or returns NULL when the escalation has none.
 */
#define AMP_RECORD_CAUSE "amp watch cannot use "
const char *amp_escalation_cause(const json_t *msg, char *buf, size_t bufsz);

/* 1 when the log holds an escalation of `type` written by `from` whose cause
 * (amp_escalation_cause) is `cause`: the "once per cause" of escalations. */
int amp_task_has_escalation(const amp_task_log *log, const char *type,
			    const char *from, const char *cause);

/* The ACK record of msg_id in log, or NULL (borrowed). */
const json_t *amp_task_ack_of(const amp_task_log *log, const char *msg_id);

/*
 * The whole task as the documented `amp status --json` object: task_id,
 * state, reject_count, suspended, locked, suspended_by, messages (each with
 * msg_id, type, from, to, timestamp, requires_ack, acked, acked_at,
 * ack_deadline, ack_state: acked|pending|overdue|not_required,
 * ack_seconds), escalations, controls, unreadable (records that are not
 * JSON objects: name, reason).  `now_ms` decides pending vs overdue.
 * The caller owns the result.
 */
json_t *amp_task_status_json(const amp_task_log *log, int64_t now_ms);

#endif
