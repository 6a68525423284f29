#include "task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"
#include "base/clock.h"
#include "base/util.h"

int64_t amp_record_time(const json_t *doc)
{
	int64_t ms;
	const char *ts = amp_json_str(doc, "timestamp");

	return ts && amp_time_parse(ts, &ms) == 0 ? ms : -1;
}

/* The path a description names after `prefix` ("<prefix><path>: ..."),
 * into buf; NULL when it names none or it does not fit. */
static const char *cause_path(const char *d, const char *prefix, char *buf, size_t bufsz)
{
	size_t n = strlen(prefix);
	const char *end;

	if (!d || strncmp(d, prefix, n) || !(end = strstr(d + n, ": ")) ||
	    (size_t)(end - d) - n >= bufsz)
		return NULL;
	snprintf(buf, bufsz, "%.*s", (int)(end - d - n), d + n);
	return buf;
}

const char *amp_escalation_cause(const json_t *msg, char *buf, size_t bufsz)
{
	const json_t *p = json_object_get(msg, "payload");
	const char *d = amp_json_str(p, "description");
	const char *kind = amp_json_str(p, "escalation_type");
	const char *first = json_string_value(json_array_get(json_object_get(p, "affected_msgs"), 0));

	if (cause_path(d, AMP_RECORD_CAUSE, buf, bufsz))
		return buf;
	/* amp watch's missed deadline (coord.h): its cause is the plan record
	 * that set the deadline. */
	if (cause_path(d, AMP_DEADLINE_CAUSE, buf, bufsz))
		return buf;
	/* amp watch's hard dependency on an aborted task: its cause is the
	 * abort record. */
	if (cause_path(d, AMP_BLOCKED_CAUSE, buf, bufsz))
		return buf;
	/* A heartbeat_timeout whose holder last wrote a heartbeat, a record
	 * with no msg_id: its cause is that record. */
	if (kind && !strcmp(kind, "heartbeat_timeout") &&
	    cause_path(d, AMP_SILENCE_CAUSE, buf, bufsz))
		return buf;
	if (!first || strlen(first) >= bufsz)
		return NULL;
	snprintf(buf, bufsz, "%s", first);
	return buf;
}

/* 1 when two causes name the same thing: equal, or the paths of one
 * record in the two layouts (store.h "Layout": the same task directory
 * name and file name), so that an escalation raised before `amp migrate`
 * is not raised again after it. */
static int same_cause(const char *a, const char *b)
{
	const char *na, *nb, *ta, *tb;

	if (!strcmp(a, b))
		return 1;
	if (strncmp(a, "tasks/", 6) || strncmp(b, "tasks/", 6))
		return 0;
	na = strrchr(a, '/');
	nb = strrchr(b, '/');
	ta = strstr(a, "/T-");
	tb = strstr(b, "/T-");
	return !strcmp(na, nb) && ta && tb && ta < na && tb < nb &&
	       strcspn(ta + 1, "/") == strcspn(tb + 1, "/") &&
	       !strncmp(ta, tb, strcspn(ta + 1, "/") + 1);
}

const amp_entry *amp_task_has_escalation(const amp_task_log *log, const char *type,
					 const char *from, const char *cause)
{
	char buf[1024];
	size_t i;

	for (i = 0; type && from && cause && i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *kind, *by, *c;

		/* the writer first: amp watch asks once per record of a
		 * task, and most records are not the asker's */
		if (e->kind != AMP_ENTRY_MSG || !(by = amp_json_str(e->doc, "from")) ||
		    strcmp(by, from))
			continue;
		kind = amp_json_str(json_object_get(e->doc, "payload"), "escalation_type");
		if (kind && !strcmp(kind, type) &&
		    (c = amp_escalation_cause(e->doc, buf, sizeof(buf))) && same_cause(c, cause))
			return e;
	}
	return NULL;
}

const json_t *amp_task_ack_of(const amp_task_log *log, const char *msg_id)
{
	const amp_entry *e = amp_task_log_find(log, AMP_ENTRY_ACK, msg_id);

	return e ? e->doc : NULL;
}

static int is_acked_or_unneeded(const amp_task_log *log, const amp_entry *e)
{
	return !json_is_true(json_object_get(e->doc, "requires_ack")) ||
	       amp_task_ack_of(log, e->id);
}

int amp_task_entry_in_place(const amp_task_log *log, const amp_entry *e)
{
	const char *task, *named;
	size_t task_len;

	if (e->kind == AMP_ENTRY_CTL)
		return 1;
	if (!e->id || amp_msg_id_parse(e->id, &task, &task_len, NULL) < 0 ||
	    strlen(log->task_id) != task_len || strncmp(task, log->task_id, task_len))
		return 0;
	named = amp_json_str(e->doc, e->kind == AMP_ENTRY_ACK ? "ack_for" : "msg_id");
	return named && !strcmp(named, e->id) &&
	       amp_json_str(e->doc, "task_id") &&
	       !strcmp(amp_json_str(e->doc, "task_id"), log->task_id);
}

/* ---- the transition table ------------------------------------------------ */

/*
 * AMP/1.0 §01-§04 as one table.  Message events look at the state of the
 * subtask they concern: every subtask a dispatch lists, the subtask a
 * result names, the subtask of the result a review_request names, the
 * subtask of the request a verdict answers.  Control events (approve,
 * abort, heartbeat, resume) look at the task's state.  Before the table,
 * an aborted, suspended or locked task refuses every write but the admin's
 * (escalations stay open while suspended: No Silent Failure).  "*" is any
 * other state.  amp-protocol(7) "TASK STATES" shows this table
 * (share/man/amp-protocol.7.scd; test/56-doc-claims.bats compares them).
 */
const amp_transition amp_transitions[] = {
	{ "task_dispatch", "new", 1, "dispatched (awaiting_approval when its risk_level is in amp.approvalRequired)" },
	{ "task_dispatch", "awaiting_approval", 1, "a new round, replacing the dispatch that awaits approval" },
	{ "task_dispatch", "dispatched", 1, "a new round" },
	{ "task_dispatch", "in_progress", 1, "a new round" },
	{ "task_dispatch", "submitted", 1, "a new round (after a partial or failed result, or failed CI)" },
	{ "task_dispatch", "in_review", 0, "its review_request awaits a verdict: dispatch it again after the verdict" },
	{ "task_dispatch", "approved", 0, "it is approved, hence done" },
	{ "task_dispatch", "rejected", 1, "a new round after the rejection" },
	{ "ack", "awaiting_approval", 0, "the dispatch awaits the admin's approval ('amp approve')" },
	{ "ack", "dispatched", 1, "in_progress (AMP/1.0 ACK on Start)" },
	{ "task_result", "new", 0, "no task_dispatch of the task lists it" },
	{ "task_result", "awaiting_approval", 0, "its dispatch awaits the admin's approval ('amp approve')" },
	{ "task_result", "dispatched", 0, "its dispatch has no ACK: ACK the dispatch first" },
	{ "task_result", "in_progress", 1, "submitted" },
	{ "task_result", "submitted", 1, "submitted; the newer result is the one to review" },
	{ "task_result", "in_review", 0, "its review_request awaits a verdict" },
	{ "task_result", "approved", 0, "it is approved: it takes no more results" },
	{ "task_result", "rejected", 0, "it was rejected: a new task_dispatch starts the next round" },
	{ "review_request", "new", 0, "no task_dispatch of the task lists it" },
	{ "review_request", "awaiting_approval", 0, "its dispatch awaits the admin's approval" },
	{ "review_request", "dispatched", 0, "it has no task_result to review" },
	{ "review_request", "in_progress", 0, "it has no task_result to review" },
	{ "review_request", "submitted", 1, "in_review (naming the round's dispatch and its latest result, complete)" },
	{ "review_request", "in_review", 0, "it is under review already" },
	{ "review_request", "approved", 0, "it is approved" },
	{ "review_request", "rejected", 0, "it was rejected: a new task_dispatch starts the next round" },
	{ "review_verdict", "in_review", 1, "approved (approved, approved_with_fix) or rejected" },
	{ "review_verdict", "approved", 0, "its review_request has a verdict already" },
	{ "review_verdict", "rejected", 0, "its review_request has a verdict already" },
	{ "review_verdict", "*", 0, "it answers no open review_request" },
	{ "approve", "awaiting_approval", 1, "dispatched: the executor may ACK and work" },
	{ "approve", "*", 0, "no dispatch of the task awaits approval" },
	{ "abort", "new", 0, "the task has no records" },
	{ "abort", "aborted", 0, "it is aborted already" },
	{ "abort", "*", 1, "aborted: every later write but the admin's is refused" },
	{ "heartbeat", "new", 0, "the task has no records" },
	{ "heartbeat", "*", 1, "the writer is alive on the task (heartbeat_timeout)" },
	{ "resume", "suspended", 1, "the state it had before" },
	{ "resume", "locked", 1, "the state it had before; the lock count starts again" },
	{ "resume", "aborted", 0, "an abort is not a suspension: the admin reopens the task with a new task_dispatch, or leaves it ended" },
	{ "resume", "*", 0, "it is not suspended or locked: nothing to resume" },
	{ NULL, NULL, 0, NULL },
};

const amp_transition *amp_transition_find(const char *event, const char *state)
{
	const amp_transition *t, *any = NULL;

	for (t = amp_transitions; event && state && t->event; t++) {
		if (strcmp(t->event, event))
			continue;
		if (!strcmp(t->state, state))
			return t;
		if (!strcmp(t->state, "*"))
			any = t;
	}
	return any;
}

static int allowed(const char *event, const char *state)
{
	const amp_transition *t = amp_transition_find(event, state);

	return t && t->allowed;
}

/* ---- the replay ---------------------------------------------------------- */

static const char *doc_id(const json_t *doc)
{
	return amp_json_str(doc, "msg_id");
}

static int same_doc(const json_t *doc, const char *msg_id)
{
	return doc && msg_id && doc_id(doc) && !strcmp(doc_id(doc), msg_id);
}

const amp_subtask *amp_task_subtask(const amp_task_state *s, const char *id)
{
	size_t i;

	for (i = 0; id && i < s->nsubtasks; i++)
		if (!strcmp(s->subtasks[i].id, id))
			return &s->subtasks[i];
	return NULL;
}

static amp_subtask *subtask_add(amp_task_state *s, size_t *alloc, const char *id)
{
	amp_subtask *sub = (amp_subtask *)amp_task_subtask(s, id);

	if (sub)
		return sub;
	if (s->nsubtasks == *alloc) {
		size_t n = *alloc ? *alloc * 2 : 8;
		amp_subtask *grown = realloc(s->subtasks, n * sizeof(*grown));

		if (!grown)
			return NULL;
		s->subtasks = grown;
		*alloc = n;
	}
	sub = &s->subtasks[s->nsubtasks++];
	memset(sub, 0, sizeof(*sub));
	sub->id = id;
	sub->state = "new";
	return sub;
}

/* 1 when dispatch doc waits for the admin's approval under policy p. */
static int needs_approval(const amp_policy *p, const json_t *dispatch)
{
	return (amp_risk_bit(amp_json_str(json_object_get(dispatch, "payload"), "risk_level")) &
		p->approval_levels) != 0;
}

int amp_task_needs_approval(const amp_task_log *log, const json_t *dispatch)
{
	return needs_approval(log->policy ? log->policy : &amp_policy_default, dispatch);
}

const json_t *amp_task_approval_of(const amp_task_log *log, const char *dispatch_id)
{
	size_t i;

	for (i = 0; dispatch_id && i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *type = amp_json_str(e->doc, "type");
		const char *what = amp_json_str(e->doc, "approves");

		if (e->kind == AMP_ENTRY_CTL && type && !strcmp(type, "approve") && what &&
		    !strcmp(what, dispatch_id))
			return e->doc;
	}
	return NULL;
}

const json_t *amp_task_verdict_request(const amp_task_log *log,
				       const amp_task_state *s,
				       const json_t *verdict,
				       const amp_subtask **sub)
{
	const json_t *refs = json_object_get(verdict, "context_ref"), *v, *q = NULL;
	size_t i, open = 0;

	*sub = NULL;
	json_array_foreach(refs, i, v) {
		const amp_entry *e = amp_task_log_find(log, AMP_ENTRY_MSG, json_string_value(v));
		const char *t = e ? amp_json_str(e->doc, "type") : NULL;

		if (t && !strcmp(t, "review_request")) {
			q = e->doc;
			break;
		}
	}
	for (i = 0; i < s->nsubtasks; i++) {
		const amp_subtask *st = &s->subtasks[i];

		if (strcmp(st->state, "in_review"))
			continue;
		open++;
		if (q ? same_doc(st->request, doc_id(q)) : open == 1)
			*sub = st;
	}
	if (!q && open == 1)
		q = (*sub)->request;
	else if (!q)
		*sub = NULL;
	return q;
}

/* A dispatch; `reopen`: the admin's, after an abort (amp-protocol(7)
 * ABORT): the task is open again and a subtask still in review starts a
 * new round too, its review_request left without a verdict. */
static void apply_dispatch(amp_task_state *s, size_t *alloc, const amp_policy *p,
			   const json_t *doc, int reopen)
{
	json_t *subtasks = json_object_get(json_object_get(doc, "payload"), "subtasks"), *v;
	int waits = needs_approval(p, doc);
	size_t i;

	s->last_dispatch = doc;
	json_array_foreach(subtasks, i, v) {
		const char *id = amp_json_str(v, "subtask_id");
		amp_subtask *sub;

		if (!id || !(sub = subtask_add(s, alloc, id)) ||
		    (!allowed("task_dispatch", sub->state) &&
		     !(reopen && !strcmp(sub->state, "in_review"))))
			continue;
		sub->round++;
		sub->dispatch = doc;
		sub->result = sub->request = sub->verdict = NULL;
		sub->state = waits ? "awaiting_approval" : "dispatched";
	}
}

/* The ACK of dispatch doc by its addressee, or the admin's approval of it:
 * its subtasks in state `from` move to `to`. */
static void dispatch_moves(amp_task_state *s, const char *dispatch_id,
			   const char *event, const char *from, const char *to)
{
	size_t i;

	for (i = 0; i < s->nsubtasks; i++) {
		amp_subtask *sub = &s->subtasks[i];

		if (same_doc(sub->dispatch, dispatch_id) && !strcmp(sub->state, from) &&
		    allowed(event, sub->state))
			sub->state = to;
	}
}

static void apply_result(amp_task_state *s, const json_t *doc)
{
	const json_t *payload = json_object_get(doc, "payload");
	amp_subtask *sub = (amp_subtask *)amp_task_subtask(s, amp_json_str(payload, "subtask_id"));

	if (!sub || !allowed("task_result", sub->state))
		return;
	sub->result = doc;
	sub->state = "submitted";
}

/* 1 when review_request doc names the current round of sub: its dispatch
 * and its latest result, complete (AMP/1.0 §03 trigger: "task_result
 * received with completion_status = complete"). */
static int request_fits(const amp_subtask *sub, const json_t *doc)
{
	const json_t *payload = json_object_get(doc, "payload");
	const char *status = amp_json_str(json_object_get(sub->result, "payload"),
					  "completion_status");

	return same_doc(sub->dispatch, amp_json_str(payload, "original_dispatch_ref")) &&
	       same_doc(sub->result, amp_json_str(payload, "task_result_ref")) &&
	       status && !strcmp(status, "complete");
}

/* The subtask whose current round holds result msg_id, or NULL. */
static amp_subtask *subtask_of_result(amp_task_state *s, const char *result_id)
{
	size_t i;

	for (i = 0; result_id && i < s->nsubtasks; i++)
		if (same_doc(s->subtasks[i].result, result_id))
			return &s->subtasks[i];
	return NULL;
}

static void apply_request(amp_task_state *s, const json_t *doc)
{
	amp_subtask *sub = subtask_of_result(s, amp_json_str(json_object_get(doc, "payload"),
							    "task_result_ref"));

	if (!sub || !allowed("review_request", sub->state) || !request_fits(sub, doc))
		return;
	sub->request = doc;
	sub->state = "in_review";
}

static void apply_verdict(const amp_task_log *log, amp_task_state *s, const json_t *doc)
{
	const char *d = amp_json_str(json_object_get(doc, "payload"), "decision");
	const amp_subtask *csub;
	amp_subtask *sub;
	int rejected = d && !strcmp(d, "rejected");

	/* AMP/1.0 §05 hallucination_lock counts the rejects of the task:
	 * every rejecting verdict in place counts, even one that answers
	 * nothing or is malformed, so that no bad record dodges the lock. */
	if (rejected) {
		s->reject_count++;
		s->rejects_since_resume++;
		s->rejects_in_a_row++;
	} else {
		s->rejects_in_a_row = 0;
	}
	amp_task_verdict_request(log, s, doc, &csub);
	if (!(sub = (amp_subtask *)csub) || !d || !allowed("review_verdict", sub->state))
		return;
	sub->verdict = doc;
	sub->state = rejected ? "rejected" : "approved";
	sub->rejects += rejected;
}

/* 1 when dispatch doc is from `from` to `to`. */
static int dispatch_between(const json_t *doc, const char *from, const char *to)
{
	const char *f = amp_json_str(doc, "from"), *t = amp_json_str(doc, "to");

	return f && t && !strcmp(f, from) && !strcmp(t, to);
}

/*
 * AMP/1.0's diagram: ADMIN -> dispatch -> COORDINATOR -> dispatch ->
 * EXECUTOR <- result, COORDINATOR -> review_req -> REVIEWER <- verdict.
 * The admin's dispatch to the coordinator hands it a plan subtask, which
 * the coordinator breaks into subtasks of its own (§01 "subtasks[]") that
 * it dispatches to the executor; nobody sends a result for the plan
 * subtask (§02: the executor's).  So a subtask whose current round is a
 * dispatch from the admin to the coordinator (dispatched or in progress)
 * is approved when the task has subtasks the coordinator dispatched and
 * every one of them is approved (issue 33, scenario 5).
 */
static void close_delegations(amp_task_state *s)
{
	size_t i, j, spawned, approved;

	for (i = 0; i < s->nsubtasks; i++) {
		amp_subtask *plan = &s->subtasks[i];

		if (!dispatch_between(plan->dispatch, "admin", "coordinator") ||
		    (strcmp(plan->state, "dispatched") && strcmp(plan->state, "in_progress")))
			continue;
		for (j = spawned = approved = 0; j < s->nsubtasks; j++)
			if (j != i && dispatch_between(s->subtasks[j].dispatch, "coordinator", "executor")) {
				spawned++;
				approved += !strcmp(s->subtasks[j].state, "approved");
			}
		if (spawned && approved == spawned)
			plan->state = "approved";
	}
}

static const char *flow_of(const amp_task_state *s)
{
	size_t i, approved = 0;
	int any_rejected = 0, any_dispatched = 0, any_review = 0, any_submitted = 0;

	if (!s->nsubtasks)
		return "new";
	if (s->awaiting)
		return "awaiting_approval";
	for (i = 0; i < s->nsubtasks; i++) {
		const char *st = s->subtasks[i].state;

		approved += !strcmp(st, "approved");
		any_rejected |= !strcmp(st, "rejected");
		any_dispatched |= !strcmp(st, "dispatched");
		any_review |= !strcmp(st, "in_review");
		any_submitted |= !strcmp(st, "submitted");
	}
	return approved == s->nsubtasks ? "approved" : any_rejected ? "rejected" :
	       any_dispatched ? "dispatched" : any_review ? "in_review" :
	       any_submitted ? "submitted" : "in_progress";
}

void amp_task_state_begin(const amp_task_log *log, amp_task_state *s)
{
	const amp_policy *policy = log->policy ? log->policy : &amp_policy_default;

	memset(s, 0, sizeof(*s));
	s->lock_threshold = policy->lock_threshold;
	s->flow_state = "new";
	s->last_activity_ms = -1;
	s->resume_ms = -1;
}

/* A control record (plan, resume, approve, abort) of the task. */
static void apply_control(const amp_task_log *log, amp_task_state *s, const amp_entry *e,
			  const char *type, int64_t t)
{
	const char *from = amp_json_str(e->doc, "from");

	/* amp plan --max-iterations (coord.h): this task's lock
	 * threshold instead of amp.lockThreshold. */
	if (type && !strcmp(type, "plan") && from && amp_role_in(from, "coordinator admin") &&
	    json_integer_value(json_object_get(e->doc, "max_iterations")) >= 1 &&
	    json_integer_value(json_object_get(e->doc, "max_iterations")) <=
	    AMP_POLICY_LOCK_THRESHOLD_MAX)
		s->lock_threshold = (int)json_integer_value(json_object_get(e->doc,
								 "max_iterations"));
	if (type && !strcmp(type, "resume")) {
		s->suspended = s->locked = 0;
		s->suspended_by = NULL;
		s->rejects_since_resume = 0;
		s->rejects_in_a_row = 0;
		s->resume_ms = t;
	} else if (type && !strcmp(type, "approve") && from && !strcmp(from, "admin")) {
		const char *d = amp_json_str(e->doc, "approves");
		const amp_entry *m = d ? amp_task_log_find(log, AMP_ENTRY_MSG, d) : NULL;
		const json_t *ack = d ? amp_task_ack_of(log, d) : NULL;

		dispatch_moves(s, d, "approve", "awaiting_approval", "dispatched");
		/* An ACK that came before the approval (by a fetch:
		 * amp refuses it) cannot be written again, since a
		 * second ACK is a no-op: it counts from now on. */
		if (m && ack && amp_json_str(ack, "from") && amp_json_str(m->doc, "to") &&
		    !strcmp(amp_json_str(ack, "from"), amp_json_str(m->doc, "to")))
			dispatch_moves(s, d, "ack", "dispatched", "in_progress");
	} else if (type && !strcmp(type, "abort") && !s->aborted) {
		s->aborted = e->doc;
	}
}

/* Records applied so far in this process (amp_task_state_steps). */
static unsigned long steps;

unsigned long amp_task_state_steps(void)
{
	return steps;
}

int amp_task_state_step(const amp_task_log *log, amp_task_state *s, size_t *alloc, size_t i)
{
	const amp_policy *policy = log->policy ? log->policy : &amp_policy_default;
	const amp_entry *e = &log->entries[i];
	const char *type = amp_json_str(e->doc, "type");
	int64_t t = amp_record_time(e->doc);
	const char *record;

	steps++;
	/* A superseded marker is amp sync's bookkeeping, not a write
	 * of anyone working on the task. */
	if (!amp_task_entry_in_place(log, e) || amp_entry_is_marker(e, &record))
		return AMP_STEP_OTHER;
	if (t > s->last_activity_ms)
		s->last_activity_ms = t;
	if (e->kind == AMP_ENTRY_ACK) {
		const amp_entry *m = amp_task_log_find(log, AMP_ENTRY_MSG, e->id);
		const char *mt = m ? amp_json_str(m->doc, "type") : NULL;
		const char *to = m ? amp_json_str(m->doc, "to") : NULL;
		const char *by = amp_json_str(e->doc, "from");

		/* AMP/1.0 §01 ACK on Start, by the addressee only. */
		if (mt && !strcmp(mt, "task_dispatch") && to && by && !strcmp(to, by))
			dispatch_moves(s, e->id, "ack", "dispatched", "in_progress");
		return AMP_STEP_OTHER;
	}
	if (e->kind == AMP_ENTRY_CTL) {
		apply_control(log, s, e, type, t);
		return AMP_STEP_OTHER;
	}
	s->messages++;
	s->last_msg_id = e->id;
	if (!type)
		return AMP_STEP_OTHER;
	if (!strcmp(type, "task_dispatch")) {
		int reopen = s->aborted && !strcmp(amp_or_none(amp_json_str(e->doc, "from")), "admin");

		apply_dispatch(s, alloc, policy, e->doc, reopen);
		if (reopen)
			s->aborted = NULL;
	} else if (!strcmp(type, "task_result")) {
		apply_result(s, e->doc);
	} else if (!strcmp(type, "review_request")) {
		apply_request(s, e->doc);
	} else if (!strcmp(type, "review_verdict")) {
		const char *d = amp_json_str(json_object_get(e->doc, "payload"),
					     "decision");

		apply_verdict(log, s, e->doc);
		close_delegations(s);
		if (d && !strcmp(d, "rejected"))
			return AMP_STEP_OTHER; /* a rejection is not a success */
	} else if (!strcmp(type, "escalation")) {
		const json_t *p = json_object_get(e->doc, "payload");
		const char *sev = amp_json_str(p, "severity");
		const char *kind = amp_json_str(p, "escalation_type");

		/* AMP/1.0 §05 Critical = Suspend All. */
		if (sev && !strcmp(sev, "critical")) {
			s->suspended = 1;
			s->suspended_by = e->id;
			if (kind && !strcmp(kind, "hallucination_lock"))
				s->locked = 1;
		}
		return AMP_STEP_OTHER;
	}
	if (!is_acked_or_unneeded(log, e))
		return AMP_STEP_UNACKED;
	s->last_successful_msg_id = e->id;
	return AMP_STEP_SUCCESS;
}

void amp_task_state_end(amp_task_state *s)
{
	size_t i;

	s->awaiting = NULL;
	for (i = 0; i < s->nsubtasks; i++)
		if (!strcmp(s->subtasks[i].state, "awaiting_approval"))
			s->awaiting = s->subtasks[i].dispatch;
	s->lock_due = !s->locked && s->rejects_since_resume >= s->lock_threshold;
	s->flow_state = flow_of(s);
	s->state = s->aborted ? "aborted" : s->locked || s->lock_due ? "locked" :
		   s->suspended ? "suspended" : s->flow_state;
}

void amp_task_state_compute(const amp_task_log *log, amp_task_state *s)
{
	size_t i, alloc = 0;

	amp_task_state_begin(log, s);
	for (i = 0; i < log->count; i++)
		amp_task_state_step(log, s, &alloc, i);
	amp_task_state_end(s);
}

void amp_task_state_free(amp_task_state *s)
{
	free(s->subtasks);
	s->subtasks = NULL;
	s->nsubtasks = 0;
}

int amp_task_closed_to(const amp_task_state *s, const char *role, char *why,
		       size_t whysz)
{
	if (role && !strcmp(role, "admin"))
		return 0;
	if (s->aborted) {
		snprintf(why, whysz, "was aborted by the %.20s at %.40s (\"%.200s\"): it takes no more writes from the %.20s (the admin may reopen it with a new task_dispatch)",
			 amp_or_none(amp_json_str(s->aborted, "from")),
			 amp_or_none(amp_json_str(s->aborted, "timestamp")),
			 amp_or_none(amp_json_str(s->aborted, "reason")), amp_or_none(role));
		return 2;
	}
	if (s->suspended) {
		snprintf(why, whysz, "is %s by escalation %s: only the admin may act until 'amp resume'",
			 s->state, s->suspended_by);
		return 1;
	}
	if (s->lock_due) {
		snprintf(why, whysz, "is locked: its %d rejected verdicts since the last resume reach amp.lockThreshold; only the admin may act until 'amp resume'",
			 s->rejects_since_resume);
		return 1;
	}
	return 0;
}

static int64_t later(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

int64_t amp_task_trusted_time(const amp_task_log *log, int64_t sent, int64_t arrival_ms,
			      int *skewed)
{
	const amp_policy *policy = log->policy ? log->policy : &amp_policy_default;
	int off = arrival_ms >= 0 && sent >= 0 &&
		  (sent < arrival_ms - policy->max_clock_skew_ms ||
		   sent >= arrival_ms + 1000 + policy->max_clock_skew_ms);

	if (skewed)
		*skewed = off;
	return off ? arrival_ms : later(sent, arrival_ms);
}

int64_t amp_task_ack_deadline(const amp_task_log *log, const amp_task_state *s,
			      const amp_entry *e, int64_t arrival_ms)
{
	const amp_policy *policy = log->policy ? log->policy : &amp_policy_default;
	int64_t deadline = amp_message_ack_deadline(e->doc);
	int64_t sent = amp_record_time(e->doc), base;
	const char *type = amp_json_str(e->doc, "type");

	if (deadline < 0 || sent < 0)
		return -1;
	base = amp_task_trusted_time(log, sent, arrival_ms, NULL);
	/* A dispatch that waits for the admin cannot be ACKed: its clock
	 * starts with the approval. */
	if (type && !strcmp(type, "task_dispatch") && needs_approval(policy, e->doc)) {
		const json_t *approval = amp_task_approval_of(log, e->id);

		if (!approval)
			return -1;
		base = later(base, amp_record_time(approval));
	}
	base = later(base, s->resume_ms);
	return base + (deadline - sent);
}

/* 1 when a and b are both NULL or the same string. */
static int same_name(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

size_t amp_task_holders(const amp_task_log *log, const amp_task_state *s,
			amp_time_of_fn time_of, amp_instance_of_fn instance_of, void *ctx,
			amp_holder out[AMP_MAX_HOLDERS])
{
	size_t i, j, n = 0;

	if (s->aborted || s->suspended || s->lock_due)
		return 0;
	for (i = 0; i < s->nsubtasks; i++) {
		const amp_subtask *sub = &s->subtasks[i];
		const json_t *by = NULL;
		const char *role, *instance;
		int64_t since;

		if (!strcmp(sub->state, "dispatched") || !strcmp(sub->state, "in_progress"))
			by = sub->dispatch;
		else if (!strcmp(sub->state, "submitted"))
			by = sub->result;
		else if (!strcmp(sub->state, "in_review"))
			by = sub->request;
		else if (!strcmp(sub->state, "rejected"))
			by = sub->verdict;
		if (!by || !(role = amp_json_str(by, "to")))
			continue;
		{
			const amp_entry *e = time_of ?
				amp_task_log_find(log, AMP_ENTRY_MSG, doc_id(by)) : NULL;

			since = later(e ? time_of(e, ctx) : amp_record_time(by), s->resume_ms);
		}
		if (by == sub->dispatch) {
			const json_t *approval = amp_task_approval_of(log, doc_id(by));

			if (approval)
				since = later(since, amp_record_time(approval));
		}
		instance = instance_of ? instance_of(sub, role, ctx) : NULL;
		for (j = 0; j < n && (strcmp(out[j].role, role) || !same_name(out[j].instance, instance));
		     j++)
			;
		if (j == n) {
			if (n == AMP_MAX_HOLDERS)
				continue;
			out[n].role = role;
			out[n].instance = instance;
			out[n].handed_by = by;
			out[n].since_ms = since;
			n++;
		} else if (since < out[j].since_ms) {
			out[j].handed_by = by;
			out[j].since_ms = since;
		}
	}
	return n;
}

void amp_lock_description(char *buf, size_t bufsz, const char *task_id,
			  const amp_task_state *s, int threshold, const char *verdict_id)
{
	/* What happened: the lock counts every reject of the task since the
	 * last resume (AMP/1.0 reject_count, "the cumulative number of rejects
	 * for the current task_id"), whether or not a verdict that did not
	 * reject came between them: "in a row" only when none did. */
	char how[128];
	int since = s->reject_count > s->rejects_since_resume;

	if (s->rejects_in_a_row >= s->rejects_since_resume)
		snprintf(how, sizeof(how), "%s", since ? "since the last resume" : "in a row");
	else
		snprintf(how, sizeof(how),
			 "on this task%s, not in a row (the last %d in a row, other verdicts between them)",
			 since ? " since the last resume" : "", s->rejects_in_a_row);
	snprintf(buf, bufsz,
		 "%s Hallucination Lock has been triggered: %d rejected verdicts %s (amp.lockThreshold %d), the last %s. The task is locked: only the admin may act until 'amp resume'.",
		 task_id, s->rejects_since_resume, how, threshold, verdict_id);
}

int amp_confidence_low(const json_t *verdict, char *buf, size_t bufsz)
{
	const json_t *payload = json_object_get(verdict, "payload");
	json_t *c = json_object_get(payload, "confidence");

	if (!json_is_number(c) || json_number_value(c) >= AMP_CONFIDENCE_MIN)
		return 0;
	snprintf(buf, bufsz,
		 "Review verdict %s (%s) has confidence %.2f < %.1f: the admin should see it before the coordinator forwards it to the executor (Confidence Threshold).",
		 amp_or_none(amp_json_str(verdict, "msg_id")),
		 amp_or_none(amp_json_str(payload, "decision")),
		 json_number_value(c), AMP_CONFIDENCE_MIN);
	return 1;
}

json_t *amp_lock_suggestions(void)
{
	return json_pack("[s,s,s]",
			 "Admin directly reviews the diff and gives specific code modification guidance",
			 "Split the task into smaller subtasks and re-issue them",
			 "Roll back to checkpoint and terminate the current task branch");
}

static json_t *message_json(const amp_task_log *log, const amp_task_state *s,
			    const amp_entry *e, int64_t now_ms)
{
	const json_t *ack = amp_task_ack_of(log, e->id);
	int64_t deadline = amp_task_ack_deadline(log, s, e, -1);
	int64_t sent = amp_record_time(e->doc);
	char when[AMP_TIME_BUFSZ];
	json_t *m;

	m = json_pack("{s:s,s:O?,s:O?,s:O?,s:O?,s:b,s:b}", "msg_id", e->id,
		      "type", json_object_get(e->doc, "type"),
		      "from", json_object_get(e->doc, "from"),
		      "to", json_object_get(e->doc, "to"),
		      "timestamp", json_object_get(e->doc, "timestamp"),
		      "requires_ack", json_is_true(json_object_get(e->doc, "requires_ack")),
		      "acked", ack != NULL);
	if (!m)
		return NULL;
	json_object_set_new(m, "acked_at", ack ? json_incref(json_object_get(ack, "timestamp"))
					       : json_null());
	json_object_set_new(m, "acked_by", ack ? json_incref(json_object_get(ack, "from"))
					       : json_null());
	json_object_set_new(m, "ack_deadline",
			    deadline >= 0 ? json_string(amp_time_format(deadline, when))
					  : json_null());
	json_object_set_new(m, "ack_late_seconds", json_null());
	if (ack) {
		int64_t at = amp_record_time(ack);

		json_object_set_new(m, "ack_state", json_string("acked"));
		json_object_set_new(m, "ack_seconds",
				    at >= 0 && sent >= 0 ? json_integer((at - sent) / 1000)
							 : json_null());
		/* AMP/1.0 requires_ack: an ACK after its deadline is the
		 * truth, and late. */
		if (at >= 0 && deadline >= 0 && at > deadline)
			json_object_set_new(m, "ack_late_seconds",
					    json_integer((at - deadline + 999) / 1000));
	} else if (deadline < 0 && json_is_true(json_object_get(e->doc, "requires_ack")) &&
		   amp_message_ack_deadline(e->doc) >= 0) {
		/* A dispatch waiting for the admin's approval. */
		json_object_set_new(m, "ack_state", json_string("awaiting_approval"));
		json_object_set_new(m, "ack_seconds", json_null());
	} else if (deadline < 0) {
		json_object_set_new(m, "ack_state", json_string("not_required"));
		json_object_set_new(m, "ack_seconds", json_null());
	} else {
		/* Seconds left (pending) or past (overdue), rounded toward
		 * the deadline. */
		json_object_set_new(m, "ack_state",
				    json_string(now_ms > deadline ? "overdue" : "pending"));
		json_object_set_new(m, "ack_seconds",
				    json_integer(now_ms > deadline ? (now_ms - deadline) / 1000
								   : (deadline - now_ms) / 1000));
	}
	return m;
}

static json_t *subtasks_json(const amp_task_state *s)
{
	json_t *out = json_array();
	size_t i;

	for (i = 0; i < s->nsubtasks; i++) {
		const amp_subtask *sub = &s->subtasks[i];

		json_array_append_new(out, json_pack("{s:s,s:s,s:i,s:s?,s:s?,s:s?,s:s?,s:i}",
			"subtask_id", sub->id, "state", sub->state, "round", sub->round,
			"dispatch", doc_id(sub->dispatch), "result", doc_id(sub->result),
			"review_request", doc_id(sub->request), "verdict", doc_id(sub->verdict),
			"rejects", sub->rejects));
	}
	return out;
}

/* The records amp sync set aside (store.h), each with its marker's word. */
static json_t *superseded_json(const amp_task_log *log)
{
	json_t *out = json_array();
	size_t i;

	for (i = 0; out && i < log->nsuperseded; i++) {
		const amp_entry *e = &log->superseded[i];
		const amp_entry *m = amp_task_log_marker(log, e);
		const json_t *md = m ? m->doc : NULL;
		const char *kind = e->kind == AMP_ENTRY_MSG ? "message" :
				   e->kind == AMP_ENTRY_ACK ? "ack" : "control";

		json_array_append_new(out, json_pack("{s:s,s:s,s:O?,s:O?,s:O?,s:O?,s:O?,s:O?}",
			"kind", kind, "id", e->id,
			"type", e->kind == AMP_ENTRY_ACK ? NULL : json_object_get(e->doc, "type"),
			"from", json_object_get(e->doc, "from"),
			"timestamp", json_object_get(e->doc, "timestamp"),
			"by", json_object_get(md, "by"),
			"reason", json_object_get(md, "reason"),
			"superseded_at", json_object_get(md, "timestamp")));
	}
	return out;
}

json_t *amp_task_status_json(const amp_task_log *log, int64_t now_ms)
{
	amp_task_state s;
	json_t *out, *msgs, *escalations, *controls;
	size_t i;

	amp_task_state_compute(log, &s);
	msgs = json_array();
	escalations = json_array();
	controls = json_array();
	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];

		if (e->kind == AMP_ENTRY_CTL) {
			json_array_append(controls, e->doc);
			continue;
		}
		if (e->kind != AMP_ENTRY_MSG)
			continue;
		json_array_append_new(msgs, message_json(log, &s, e, now_ms));
		if (!strcmp(amp_json_str(e->doc, "type") ? amp_json_str(e->doc, "type") : "",
			    "escalation")) {
			const json_t *p = json_object_get(e->doc, "payload");

			json_array_append_new(escalations,
				json_pack("{s:s,s:O?,s:O?,s:O?,s:O?,s:O?,s:O?,s:O?}",
					  "msg_id", e->id,
					  "timestamp", json_object_get(e->doc, "timestamp"),
					  "from", json_object_get(e->doc, "from"),
					  "escalation_type", json_object_get(p, "escalation_type"),
					  "severity", json_object_get(p, "severity"),
					  "description", json_object_get(p, "description"),
					  "affected_msgs", json_object_get(p, "affected_msgs"),
					  "auto_suspended", json_object_get(p, "auto_suspended")));
		}
	}
	out = json_pack("{s:s,s:s,s:i,s:b,s:b}", "task_id", log->task_id,
			"state", s.state, "reject_count", s.reject_count,
			"suspended", s.suspended, "locked", s.locked);
	json_object_set_new(out, "suspended_by",
			    s.suspended_by ? json_string(s.suspended_by) : json_null());
	json_object_set_new(out, "last_successful_msg_id",
			    s.last_successful_msg_id ? json_string(s.last_successful_msg_id)
						     : json_null());
	json_object_set_new(out, "aborted", json_boolean(s.aborted != NULL));
	json_object_set_new(out, "awaiting_approval",
			    s.awaiting ? json_string(doc_id(s.awaiting)) : json_null());
	json_object_set_new(out, "subtasks", subtasks_json(&s));
	json_object_set_new(out, "messages", msgs);
	{
		json_t *bad = json_array();

		for (i = 0; i < log->nbad; i++)
			json_array_append_new(bad, json_pack("{s:s,s:s}",
				"name", log->bad[i].name, "reason", log->bad[i].reason));
		json_object_set_new(out, "unreadable", bad);
	}
	json_object_set_new(out, "superseded", superseded_json(log));
	json_object_set_new(out, "escalations", escalations);
	json_object_set_new(out, "controls", controls);
	amp_task_state_free(&s);
	return out;
}
