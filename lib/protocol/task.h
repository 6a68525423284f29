/*
 * task.h - the state of a task and of each of its subtasks, derived from
 * the task's records in the SSOT, and the one table of the transitions the
 * protocol allows (AMP/1.0 §01-§05).
 *
 * A subtask (one subtask_id of a dispatch) goes
 *
 *   (new) --task_dispatch--> dispatched --ACK of the dispatch--> in_progress
 *   in_progress --task_result--> submitted --review_request--> in_review
 *   in_review --review_verdict--> approved | rejected
 *   rejected (or dispatched, in_progress, submitted) --task_dispatch--> a new round
 *
 * and waits in awaiting_approval instead of dispatched when the dispatch's
 * risk_level is one of git config amp.approvalRequired, until the admin's
 * approve record.  The task is approved when every subtask it ever
 * dispatched is approved; a critical escalation suspends it (a
 * hallucination_lock locks it) until the admin's resume; an abort record
 * ends it, until the admin's task_dispatch reopens it (a new round of every
 * subtask it lists, one in review included).
 *
 * Nothing here is stored: the state is always recomputed from the task's
 * records, so it cannot drift from the audit trail.  The same table decides
 * what a write may do (lib/protocol/rules.c, inside the compare-and-swap) and what a
 * record in the SSOT did (the replay below): a record that the table refuses
 * (one that came by a fetch or a hand-made commit) moves nothing.
 */
#ifndef AMP_TASK_H
#define AMP_TASK_H

#include <jansson.h>
#include <stdint.h>

#include "store/store.h"

/* One row of the transition table: `event` in `state` is allowed or not;
 * `effect` says what it does, or why it is refused. */
typedef struct amp_transition {
	const char *event;  /* task_dispatch, ack, task_result, review_request,
			     * review_verdict, approve, abort, heartbeat, resume */
	const char *state;  /* the subtask's state (the task's for approve,
			     * abort, heartbeat, resume) */
	int allowed;
	const char *effect;
} amp_transition;

/* The table, terminated by a row whose event is NULL. */
extern const amp_transition amp_transitions[];

/* The row of (event, state), or NULL when the table has none. */
const amp_transition *amp_transition_find(const char *event, const char *state);

/* The state of one subtask. */
typedef struct amp_subtask {
	const char *id;         /* subtask_id (borrowed from the log) */
	const char *state;      /* new, awaiting_approval, dispatched,
				 * in_progress, submitted, in_review,
				 * approved, rejected (static) */
	const json_t *dispatch; /* the dispatch of its current round */
	const json_t *result;   /* the round's latest task_result, or NULL */
	const json_t *request;  /* the round's review_request, or NULL */
	const json_t *verdict;  /* the verdict of that request, or NULL */
	int round;              /* dispatches that listed it so far */
	int rejects;            /* rejected verdicts it received */
} amp_subtask;

typedef struct amp_task_state {
	const char *state;      /* what `amp status` shows (static string) */
	const char *flow_state; /* the same, ignoring abort, suspension, lock */
	int reject_count;       /* rejected verdicts, ever */
	int rejects_since_resume; /* rejected verdicts since the last resume */
	int rejects_in_a_row;   /* ... of them, since the last verdict that did
				 * not reject (the lock's description says
				 * "in a row" only when all were) */
	int suspended;          /* a critical escalation is in force */
	int locked;             /* ... and it is a hallucination lock */
	int lock_due;           /* rejects_since_resume reached lock_threshold
				 * but no lock is recorded (a fetched
				 * verdict): treated as locked */
	int lock_threshold;     /* the policy's lockThreshold, or the task's
				 * plan max_iterations (coord.h) */
	int messages;           /* number of messages (not ACKs/controls) */
	const char *suspended_by;   /* msg_id of that escalation (borrowed) */
	const json_t *last_dispatch; /* latest task_dispatch (borrowed) */
	const json_t *awaiting;  /* the latest dispatch, when it awaits the
				  * admin's approval; else NULL */
	const json_t *aborted;   /* the abort record, or NULL */
	const char *last_successful_msg_id; /* borrowed, NULL when none */
	const char *last_msg_id;    /* borrowed, NULL when none */
	int64_t last_activity_ms;   /* time of the newest record */
	int64_t resume_ms;          /* time of the last resume, or -1 */
	amp_subtask *subtasks;      /* in order of first dispatch; owned */
	size_t nsubtasks;
} amp_task_state;

/* 1 when record e is what its place says it is: a message named by its
 * own msg_id, of this task; an ACK named by the msg_id it acknowledges; any
 * control record.  Only such records make the state: a record out of its
 * place (a fetch, a hand-made commit) is shown and escalated, never
 * counted. */
int amp_task_entry_in_place(const amp_task_log *log, const amp_entry *e);

/* Computes the state from a task's log, from its records in place
 * (amp_task_entry_in_place), applying each as the transition table allows
 * (log->policy gives the lock threshold and the approval levels); pointers
 * borrow from the log.  Free with amp_task_state_free. */
void amp_task_state_compute(const amp_task_log *log, amp_task_state *out);
void amp_task_state_free(amp_task_state *s);

/* amp_task_state_compute in its three parts, for task_fold.c: begin, then
 * step for each entry i of the log in order (*alloc, 0 at first: the
 * subtasks' room), then end, which sets what derives from the rest
 * (state, flow_state, awaiting, lock_due) and may be called after any
 * step.  A step tells what entry i was: a message that is now the last
 * successful one, one that would be but awaits its ACK, or anything
 * else. */
#define AMP_STEP_OTHER   0
#define AMP_STEP_SUCCESS 1
#define AMP_STEP_UNACKED 2
void amp_task_state_begin(const amp_task_log *log, amp_task_state *s);
int amp_task_state_step(const amp_task_log *log, amp_task_state *s, size_t *alloc, size_t i);
void amp_task_state_end(amp_task_state *s);
/* How many records steps applied so far in this process: what AMP_TRACE
 * reports as state_steps. */
unsigned long amp_task_state_steps(void);

/* The subtask `id` of s, or NULL. */
const amp_subtask *amp_task_subtask(const amp_task_state *s, const char *id);

/* The review_request a verdict answers: the one its context_ref names, else
 * the task's one open review_request (NULL when none or several are open).
 * The subtask under review goes to *sub (NULL when the request is not an
 * open one).  Borrowed. */
const json_t *amp_task_verdict_request(const amp_task_log *log,
				       const amp_task_state *s,
				       const json_t *verdict,
				       const amp_subtask **sub);

/* 1 when dispatch doc waits for the admin's approval under log->policy
 * (its risk_level is one of amp.approvalRequired). */
int amp_task_needs_approval(const amp_task_log *log, const json_t *dispatch);

/* The approve record of dispatch msg_id, or NULL (borrowed). */
const json_t *amp_task_approval_of(const amp_task_log *log, const char *dispatch_id);

/* Who holds the ball (AMP/1.0 heartbeat_timeout: "Agent 30min no SSOT
 * write"): the dispatch's addressee while a subtask is dispatched or in
 * progress, the reviewer while one is in review, the coordinator while one
 * is submitted or rejected.  None while the task is new, awaiting approval,
 * approved, aborted, suspended or locked.  A holder is a role and, when
 * instance_of is not NULL and names one for the subtask (amp watch: the
 * instance whose lease covers it, coord.h), an instance of it: liveness is
 * per holder (issue 33), so two instances of a role holding two subtasks
 * are two holders.  For each holder: the message that handed it the ball
 * first (of those it still holds) and that time: the later of the
 * message's time, the approval of its dispatch and the last resume, where
 * a message's time is time_of(entry, ctx) when time_of is not NULL (amp
 * watch: the time the commit brought it), else its timestamp. */
typedef int64_t (*amp_time_of_fn)(const amp_entry *e, void *ctx);
typedef const char *(*amp_instance_of_fn)(const amp_subtask *sub, const char *role, void *ctx);
typedef struct amp_holder {
	const char *role;       /* static or borrowed */
	const char *instance;   /* borrowed from instance_of; NULL: unnamed */
	const json_t *handed_by; /* the message (borrowed) */
	int64_t since_ms;
} amp_holder;
#define AMP_MAX_HOLDERS 16
size_t amp_task_holders(const amp_task_log *log, const amp_task_state *s,
			amp_time_of_fn time_of, amp_instance_of_fn instance_of, void *ctx,
			amp_holder out[AMP_MAX_HOLDERS]);

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
/* The same for a heartbeat_timeout whose cause is a record with no msg_id
 * (the holder's last write was a heartbeat): its description begins with
 * AMP_SILENCE_CAUSE "<path>: ", and its cause is that path. */
#define AMP_SILENCE_CAUSE "no write since "
/* The same for amp watch's missed deadline (coord.h): its description
 * begins with AMP_DEADLINE_CAUSE "<path>: ", the plan record's path. */
#define AMP_DEADLINE_CAUSE "deadline missed: "
/* The same for amp watch's hard dependency on an aborted task (issue 33):
 * its description begins with AMP_BLOCKED_CAUSE "<path>: ", the path of
 * the abort record of the task depended on. */
#define AMP_BLOCKED_CAUSE "blocked by the abort "
const char *amp_escalation_cause(const json_t *msg, char *buf, size_t bufsz);

/* The first escalation of the log of `type` written by `from` whose cause
 * (amp_escalation_cause) is `cause`, or NULL: the "once per cause" of
 * escalations.  Borrowed. */
const amp_entry *amp_task_has_escalation(const amp_task_log *log, const char *type,
			    const char *from, const char *cause);

/*
 * The time a record counts from, given its timestamp `sent` and
 * `arrival_ms`, the committer time of the commit that first held it (-1:
 * unknown): the later of the two (AMP/1.0 leaves the clock to the sender;
 * a backdated record is not overdue at once).  A timestamp further than
 * amp.maxClockSkew from the arrival (a commit time has whole seconds: the
 * record was committed within [arrival_ms, arrival_ms + 1 s)) is not
 * trusted at all: the arrival counts alone, so a dispatch dated 2099 is not
 * "never overdue".  *skewed (may be NULL) is set to 1 in that case.
 */
int64_t amp_task_trusted_time(const amp_task_log *log, int64_t sent, int64_t arrival_ms,
			      int *skewed);

/* The ACK deadline of message e in Unix ms, or -1 when it needs none: its
 * timestamp (or `arrival_ms`, as amp_task_trusted_time decides) plus
 * its ack_timeout_sec; the clock starts again at the admin's approval of a
 * dispatch that waited for it, and at a resume after it (no clock runs
 * while a task is suspended). */
int64_t amp_task_ack_deadline(const amp_task_log *log, const amp_task_state *s,
			      const amp_entry *e, int64_t arrival_ms);

/* 1 when the task is closed to `role`: aborted, suspended, locked or due
 * to lock, and the role is not the admin.  *why gets the reason (static or
 * borrowed) naming the state and the record that put it there. */
int amp_task_closed_to(const amp_task_state *s, const char *role,
		       char *why, size_t whysz);

/* AMP/1.0 §04 Confidence Threshold: "Reviewer's confidence < 0.8 When, the
 * Coordinator should report to the Admin before forwarding it". */
#define AMP_CONFIDENCE_MIN 0.8

/* 1 when review_verdict `verdict` (a whole envelope) has a confidence
 * below AMP_CONFIDENCE_MIN; the description of its `conflict` escalation
 * (info) then goes to buf. */
int amp_confidence_low(const json_t *verdict, char *buf, size_t bufsz);

/* AMP/1.0 §05 hallucination_lock: the escalation's description (the
 * task's rejects in s, the threshold, the verdict that reached it) into
 * buf, and its suggested_actions (the seed's three; the caller frees). */
void amp_lock_description(char *buf, size_t bufsz, const char *task_id,
			  const amp_task_state *s, int threshold, const char *verdict_id);
json_t *amp_lock_suggestions(void);

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
