/*
 * watch_timers.c - the rules of amp watch that need a clock: the timers a
 * task's records start, kept in the state from pass to pass, and their
 * escalation when they run out (watch_timers.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/util.h"
#include "protocol/protocol.h"
#include "record/record.h"
#include "write/write.h"
#include "watch_fire.h"
#include "watch_timers.h"

/* ---- timers ---------------------------------------------------------------- */

/* Sets "arrival" of timer entry o when it is known. */
static json_t *with_arrival(json_t *o, int64_t arrival)
{
	if (o && arrival >= 0)
		json_object_set_new(o, "arrival", json_integer(arrival));
	return o;
}

/* What amp_task_holders is given: the pass (for the times) and the
 * task's leases (for the instances). */
struct holder_ctx {
	const struct task_pass *t;
	amp_leases ls;
};

/* trusted_time as an amp_time_of_fn, for amp_task_holders. */
static int64_t holder_time(const amp_entry *e, void *ctx)
{
	return amp_watch_trusted_time(((struct holder_ctx *)ctx)->t, e, NULL);
}

/* The instance holding subtask sub as the executor, as an
 * amp_instance_of_fn: the agent of the latest lease not released that
 * covers it (a lease of the subtask or of the whole task), or NULL. */
static const char *holder_instance(const amp_subtask *sub, const char *role, void *ctx)
{
	const amp_leases *ls = &((struct holder_ctx *)ctx)->ls;
	const amp_lease *best = NULL;
	size_t i;

	if (strcmp(role, "executor"))
		return NULL;
	for (i = 0; i < ls->n; i++)
		if (!ls->v[i].released && (!ls->v[i].subtask[0] || !strcmp(ls->v[i].subtask, sub->id)) &&
		    (!best || ls->v[i].since_ms >= best->since_ms))
			best = &ls->v[i];
	return best ? best->agent : NULL;
}

/* The key of holder (role, instance) of task in the state's "last_write":
 * "<task> <role>" or "<task> <role>/<instance>". */
static const char *write_key(char *buf, size_t bufsz, const char *task, const char *role,
			     const char *instance)
{
	snprintf(buf, bufsz, "%s %s%s%s", task, role, instance ? "/" : "", instance ? instance : "");
	return buf;
}

/* The timer of control record `name` of the log (a question, or an answer
 * to acknowledge): its path, who it waits for, and its deadline, the
 * record's trusted time + its ack_timeout_sec; NULL when it runs none or
 * was escalated already (cause: its path). */
static json_t *record_timer(const struct task_pass *t, const char *name, const char *waits_for)
{
	const amp_entry *e = name ? amp_task_log_find(t->log, AMP_ENTRY_CTL, name) : NULL;
	json_t *timeout = e ? json_object_get(e->doc, "ack_timeout_sec") : NULL;
	char file[300], path[512];
	int64_t at;

	if (!json_is_integer(timeout))
		return NULL;
	amp_watch_entry_name(e, file, sizeof(file));
	amp_watch_record_path(t->log, file, path, sizeof(path));
	if (amp_watch_has_cause(t->log, "ack_timeout", path) ||
	    (at = amp_watch_trusted_time(t, e, NULL)) < 0)
		return NULL;
	return json_pack("{s:s,s:s,s:s,s:s?,s:I,s:I}", "kind", waits_for, "record", name,
			 "path", path, "agent", amp_json_str(e->doc, "agent"), "at", (json_int_t)at,
			 "deadline", (json_int_t)(at + json_integer_value(timeout) * 1000));
}

/*
 * SPEC-022 feedback (protocol/question.h): each question with no answer
 * yet runs a clock of its ack_timeout_sec from when it was asked (its
 * trusted time), and each answer with an ack_timeout_sec not acknowledged
 * yet (answer_ack) one from when it was answered; each is escalated once
 * (ack_timeout, cause: the record's path, AMP_DEADLINE_CAUSE) when it runs
 * out.  Sets "questions" of out: [{"kind" ("answer": the coordinator owes
 * an answer; "ack": the asker owes the acknowledgement), "record",
 * "path", "agent" (who wrote it), "at", "deadline", "question" and
 * "asker" for an ack}].
 */
static void derive_questions(const struct task_pass *t, json_t *out)
{
	json_t *qs = json_array(), *all = amp_questions_json(t->log), *q, *timer;
	size_t i;

	json_array_foreach(all, i, q) {
		json_t *a = json_object_get(q, "answer");

		if (!json_is_object(a))
			timer = record_timer(t, amp_json_str(q, "record"), "answer");
		else if (json_is_null(json_object_get(a, "acked")) &&
			 (timer = record_timer(t, amp_json_str(a, "record"), "ack")))
			json_object_set_new(timer, "question", json_string(amp_json_str(q, "record")));
		else
			timer = NULL;
		if (timer) {
			if (amp_json_str(q, "agent"))
				json_object_set_new(timer, "asker", json_string(amp_json_str(q, "agent")));
			json_array_append_new(qs, timer);
		}
	}
	json_decref(all);
	if (json_array_size(qs))
		json_object_set(out, "questions", qs);
	json_decref(qs);
}

/*
 * The timers of a task from its whole log (state s): the ACKs awaited with
 * their deadlines, and who holds the ball (amp_task_holders) since when,
 * each with the arrival of its message (arrival_of) so that the next
 * derivation keeps it; "fired" lists the causes of the task's
 * heartbeat_timeout escalations.  NULL when it has none: an aborted task
 * runs no clock, nor does a suspended or locked one (Critical = Suspend
 * All stops the clocks too; a resume restarts them).
 */
json_t *amp_watch_derive_timers(const struct task_pass *t, const amp_task_state *s)
{
	const amp_task_log *log = t->log;
	amp_holder holders[AMP_MAX_HOLDERS];
	struct holder_ctx hc = { .t = t };
	json_t *acks, *held, *fired, *out;
	int64_t released = -1; /* the latest lease amp watch released */
	size_t i, n;

	if (s->aborted || s->suspended || s->lock_due)
		return NULL;
	acks = json_array();
	held = json_array();
	fired = json_array();
	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		int64_t arrival, deadline;

		/* A message out of its place is escalated as unknown; no
		 * ACK timeout could name it. */
		if (e->kind != AMP_ENTRY_MSG || !amp_task_entry_in_place(log, e) ||
		    amp_task_ack_of(log, e->id) || amp_watch_has_cause(log, "ack_timeout", e->id))
			continue;
		arrival = amp_watch_arrival_of(t, e);
		if ((deadline = amp_task_ack_deadline(log, s, e, arrival)) < 0)
			continue;
		json_array_append_new(acks, with_arrival(json_pack("{s:s,s:I,s:s?,s:s?}",
			"msg", e->id, "deadline", (json_int_t)deadline,
			"from", amp_json_str(e->doc, "from"), "to", amp_json_str(e->doc, "to")),
			arrival));
	}
	/* AMP/1.0 heartbeat_timeout "Agent 30min no SSOT write": the clock of
	 * a holder starts when the ball was handed to it (amp_task_trusted_time
	 * of the message, or the approval, or a resume, when later). */
	amp_coord_leases(log, &hc.ls);
	n = amp_task_holders(log, s, holder_time, holder_instance, &hc, holders);
	for (i = 0; i < n; i++) {
		const char *by = amp_json_str(holders[i].handed_by, "msg_id");
		const amp_entry *e = by ? amp_task_log_find(log, AMP_ENTRY_MSG, by) : NULL;

		if (!e)
			continue;
		json_array_append_new(held, with_arrival(json_pack("{s:s,s:s*,s:s,s:I}",
			"role", holders[i].role, "agent", holders[i].instance, "by", by,
			"since", (json_int_t)holders[i].since_ms),
			amp_watch_arrival_of(t, e)));
	}
	for (i = 0; n && i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *kind = amp_json_str(json_object_get(e->doc, "payload"), "escalation_type");
		const char *by = amp_json_str(e->doc, "from");
		char buf[1024];

		if (e->kind == AMP_ENTRY_MSG && kind && !strcmp(kind, "heartbeat_timeout") &&
		    by && !strcmp(by, "system") && amp_escalation_cause(e->doc, buf, sizeof(buf))) {
			json_array_append_new(fired, json_string(buf));
			if (strstr(buf, ".ctl.claim-"))
				released = amp_record_time(e->doc) > released ?
					   amp_record_time(e->doc) : released;
		}
	}
	out = json_object();
	/* Leases (coord.h) run out on the clock too: amp watch releases them. */
	{
		const amp_leases *ls = &hc.ls;
		json_t *leases = json_array();

		for (i = 0; i < ls->n; i++)
			if (!ls->v[i].released)
				json_array_append_new(leases, json_pack("{s:s,s:s,s:I}",
					"claim", ls->v[i].claim, "agent", ls->v[i].agent,
					"expires", (json_int_t)amp_lease_expires(&ls->v[i])));
		if (json_array_size(leases))
			json_object_set(out, "leases", leases);
		json_decref(leases);
	}
	/* amp plan --deadline: escalated once when it passes unapproved. */
	{
		amp_plan plan;

		amp_coord_plan(log, &plan);
		if (plan.deadline_ms >= 0 && strcmp(s->state, "approved"))
			json_object_set_new(out, "deadline", json_integer(plan.deadline_ms));
	}
	if (json_array_size(acks))
		json_object_set(out, "acks", acks);
	derive_questions(t, out);
	if (json_array_size(held)) {
		json_object_set(out, "holders", held);
		json_object_set(out, "fired", fired);
		if (released >= 0)
			json_object_set_new(out, "lease_expired", json_integer(released));
	}
	json_decref(acks);
	json_decref(held);
	json_decref(fired);
	if (!json_object_size(out)) {
		json_decref(out);
		out = NULL;
	}
	return out;
}

/* Sets last_write[key] to `at` (the message, or the record's path) unless
 * it holds a later write. */
static void note_at(json_t *lw, const char *key, int64_t at, const amp_entry *e, const char *path)
{
	json_t *cur = json_object_get(lw, key);

	if (cur && json_integer_value(json_object_get(cur, "ms")) >= at)
		return;
	json_object_set_new(lw, key, e->kind == AMP_ENTRY_CTL ?
			    json_pack("{s:I,s:s}", "ms", (json_int_t)at, "path", path) :
			    json_pack("{s:I,s:s}", "ms", (json_int_t)at, "msg", e->id));
}

/*
 * Remembers the newest write of each holder to this task (for heartbeats):
 * a message, an ACK (it stands for the message it acknowledges) or a
 * heartbeat record (named by its path: it has no msg_id), at its
 * amp_task_trusted_time.  Liveness is per task and per holder (issue 33):
 * a write counts for "<task> <role>" and for the instance that wrote it,
 * "<task> <role>/<instance>": the one the record names (a claim, a
 * heartbeat, coord.h amp_coord_record_instance), else, for the executor,
 * every instance whose lease was in force then (coord.h: amp refuses the
 * executor's writes from any other instance while a lease runs, so they
 * are the holder's).
 */
void amp_watch_note_write(const struct task_pass *t, const amp_entry *e, const char *name)
{
	json_t *lw = json_object_get(t->w->state, "last_write");
	const char *from = amp_json_str(e->doc, "from"), *instance;
	int64_t at = amp_watch_trusted_time(t, e, NULL);
	char path[512], key[400];

	if ((e->kind == AMP_ENTRY_CTL && !amp_watch_is_type(e->doc, "heartbeat")) || !from ||
	    amp_record_time(e->doc) < 0 || !amp_task_entry_in_place(t->log, e))
		return;
	amp_watch_record_path(t->log, name, path, sizeof(path));
	note_at(lw, write_key(key, sizeof(key), t->log->task_id, from, NULL), at, e, path);
	if ((instance = amp_coord_record_instance(e->doc)))
		note_at(lw, write_key(key, sizeof(key), t->log->task_id, from, instance), at, e, path);
	else if (!strcmp(from, "executor")) {
		amp_leases *ls = *t->leases;
		size_t i;

		/* the leases of the whole log: the same for each write, so
		 * read once a pass (each write's time picks those in force) */
		if (!ls) {
			if (!(ls = malloc(sizeof(*ls))))
				return;
			amp_coord_leases(t->log, ls);
			*t->leases = ls;
		}
		for (i = 0; i < ls->n; i++)
			if (amp_lease_in_force(&ls->v[i], at))
				note_at(lw, write_key(key, sizeof(key), t->log->task_id, from,
						      ls->v[i].agent), at, e, path);
	}
}

static void evaluate_acks(struct watch *w, const char *task, json_t *t, int *fired)
{
	json_t *acks = json_object_get(t, "acks"), *kept = json_array(), *a;
	int64_t now = w->o->now_ms;
	char when[AMP_TIME_BUFSZ], at[AMP_TIME_BUFSZ], description[1024];
	size_t i;

	json_array_foreach(acks, i, a) {
		int64_t deadline = json_integer_value(json_object_get(a, "deadline"));
		const char *msg = amp_json_str(a, "msg");
		json_t *affected;

		if (!msg || now <= deadline) {
			json_array_append(kept, a);
			continue;
		}
		snprintf(description, sizeof(description),
			 "%s from %s to %s required an ACK by %s; none was in the SSOT at %s (%lld s late). The Coordinator reports it automatically (AMP/1.0 requires_ack).",
			 msg, amp_or_none(amp_json_str(a, "from")), amp_or_none(amp_json_str(a, "to")),
			 amp_time_format(deadline, when), amp_time_format(now, at),
			 (long long)((now - deadline) / 1000));
		affected = json_pack("[s]", msg);
		if (amp_watch_fire(w, task, "ack_timeout", "warning", affected, NULL, description, NULL) < 0)
			json_array_append(kept, a);
		else
			*fired = 1;
		json_decref(affected);
	}
	if (json_array_size(kept) != json_array_size(acks))
		json_object_set(t, "acks", kept);
	json_decref(kept);
}

/* Into buf, the description of timer q of derive_questions run out at
 * `now` on task: "deadline missed: <path>: ..." naming the record, who
 * owes what, and the task. */
static void question_description(const json_t *q, const char *task, int64_t now, char *buf,
				 size_t bufsz)
{
	const char *asker = amp_json_str(q, "asker"), *agent = amp_json_str(q, "agent");
	const char *record = amp_or_none(amp_json_str(q, "record"));
	int64_t deadline = json_integer_value(json_object_get(q, "deadline"));
	char when[AMP_TIME_BUFSZ], at[AMP_TIME_BUFSZ];

	amp_time_format(json_integer_value(json_object_get(q, "at")), at);
	amp_time_format(deadline, when);
	if (!strcmp(amp_or_none(amp_json_str(q, "kind")), "ack"))
		snprintf(buf, bufsz,
			 AMP_DEADLINE_CAUSE "%.600s: answer %s to question %s of task %s, given by the coordinator%s%.100s at %s, was not acknowledged by the executor%s%.100s that asked by %s (%lld s late). The asker acknowledges it: amp ask %s --ack %s (SPEC-022 feedback).",
			 amp_json_str(q, "path"), record, amp_or_none(amp_json_str(q, "question")), task,
			 agent ? " instance " : "", agent ? agent : "", at, asker ? " instance " : "",
			 asker ? asker : "", when, (long long)((now - deadline) / 1000), task, record);
	else
		snprintf(buf, bufsz,
			 AMP_DEADLINE_CAUSE "%.600s: question %s of task %s, asked by the executor%s%.100s at %s, had no answer by %s (%lld s late). The Coordinator answers it: amp answer %s --question %s (SPEC-022 feedback).",
			 amp_json_str(q, "path"), record, task, asker ? " instance " : "",
			 asker ? asker : "", at, when, (long long)((now - deadline) / 1000), task, record);
}

/* A question past its answer deadline with no answer, or an answer past
 * its acknowledgement deadline with no answer_ack: an ack_timeout
 * escalation (question_description), once per record (its cause). */
static void evaluate_questions(struct watch *w, const char *task, json_t *t, int *fired)
{
	json_t *qs = json_object_get(t, "questions"), *kept = json_array(), *q, *affected;
	char description[1600];
	size_t i;

	json_array_foreach(qs, i, q) {
		const char *path = amp_json_str(q, "path");

		if (!path || w->o->now_ms <= json_integer_value(json_object_get(q, "deadline"))) {
			json_array_append(kept, q);
			continue;
		}
		question_description(q, task, w->o->now_ms, description, sizeof(description));
		affected = json_array();
		if (amp_watch_fire(w, task, "ack_timeout", "warning", affected, NULL, description, path) < 0)
			json_array_append(kept, q);
		else
			*fired = 1;
		json_decref(affected);
	}
	if (json_array_size(kept) != json_array_size(qs))
		json_object_set(t, "questions", kept);
	json_decref(kept);
}

/*
 * AMP/1.0 heartbeat_timeout: a holder that wrote nothing anywhere in the
 * SSOT for amp.heartbeatTimeout since the later of the hand-off and its
 * last write.  The cause is that last write (a message, or the message an
 * ACK acknowledges; a heartbeat record by its path, AMP_SILENCE_CAUSE), or
 * the hand-off when it wrote nothing since; affected [last write, hand-off].
 */
static void evaluate_holders(struct watch *w, const char *task, json_t *t, int *fired)
{
	json_t *lw = json_object_get(w->state, "last_write"), *h, *f;
	json_t *fired_list = json_object_get(t, "fired");
	int64_t now = w->o->now_ms;
	char when[AMP_TIME_BUFSZ], handed[AMP_TIME_BUFSZ], description[1400], prefix[600];
	size_t i, j;

	json_array_foreach(json_object_get(t, "holders"), i, h) {
		const char *role = amp_json_str(h, "role"), *by = amp_json_str(h, "by");
		const char *agent = amp_json_str(h, "agent");
		int64_t since = json_integer_value(json_object_get(h, "since")), base = since;
		char key[400];
		json_t *last = json_object_get(lw, write_key(key, sizeof(key), task,
							     role ? role : "", agent)), *affected;
		const char *msg = by, *path = NULL, *cause;
		int seen = 0;

		if (!role || !by || !json_is_array(fired_list))
			continue;
		if (last && json_integer_value(json_object_get(last, "ms")) >= base) {
			base = json_integer_value(json_object_get(last, "ms"));
			msg = amp_json_str(last, "msg");
			path = amp_json_str(last, "path");
		}
		if (!(cause = msg ? msg : path))
			continue;
		json_array_foreach(fired_list, j, f)
			seen |= json_string_value(f) && !strcmp(json_string_value(f), cause);
		/* An executor's silence that ran its lease out was told with the
		 * lease's release (evaluate_leases): one event, one escalation. */
		seen |= !strcmp(role, "executor") &&
			json_integer_value(json_object_get(t, "lease_expired")) >= base &&
			json_is_integer(json_object_get(t, "lease_expired"));
		if (seen || now <= base + w->o->heartbeat_ms)
			continue;
		prefix[0] = '\0';
		if (!msg)
			snprintf(prefix, sizeof(prefix), AMP_SILENCE_CAUSE "%.500s: ", path);
		snprintf(description, sizeof(description),
			 "%sThe %s%s%s holds %s (handed over by %s at %s) and has written nothing to the SSOT (a message, an ACK or a heartbeat) since %s (%lld min; amp.heartbeatTimeout %lld s).",
			 prefix, role, agent ? " instance " : "", agent ? agent : "", task, by,
			 amp_time_format(since, handed),
			 amp_time_format(base, when), (long long)((now - base) / 60000),
			 (long long)(w->o->heartbeat_ms / 1000));
		affected = msg && strcmp(msg, by) ? json_pack("[s,s]", msg, by) : json_pack("[s]", by);
		if (amp_watch_fire(w, task, "heartbeat_timeout", "warning", affected, NULL, description,
				   cause) == AMP_OK) {
			json_array_append_new(fired_list, json_string(cause));
			*fired = 1;
		}
		json_decref(affected);
	}
}

/* A lease or deadline write of watch's that failed: an error of the pass
 * ("cannot <what> <task>: <why>"), unless the task itself is broken. */
static void coord_write_failed(struct watch *w, const char *task, const char *what,
			       const amp_errlist *errs)
{
	if (amp_watch_escalation_broke_task(w, task))
		return;
	amp_errlist_add(w->errors, AMP_EIO, "", "cannot %s %s: %s", what, task,
			errs->count ? errs->items[0].message : "unknown error");
	w->failed = 1;
}

/*
 * Claims (coord.h): a lease whose holder wrote nothing for its ttl ends:
 * amp_coord_expire writes its release from system with a heartbeat_timeout
 * escalation (cause: the claim record), once, and the task is claimable
 * again.
 */
static void evaluate_leases(struct watch *w, const char *task, json_t *t, int *fired)
{
	json_t *l;
	amp_coord_result res;
	amp_errlist errs = { 0 };
	amp_watch_action a;
	size_t i;
	int due = 0, released = 0;

	json_array_foreach(json_object_get(t, "leases"), i, l)
		due |= w->o->now_ms > json_integer_value(json_object_get(l, "expires"));
	if (!due || amp_watch_need_schemas(w) < 0)
		return;
	if (amp_coord_expire(w->st, *w->set, task, w->o->now_ms, &res, &released, &errs) < 0) {
		coord_write_failed(w, task, "release the expired claims of", &errs);
	} else if (released) {
		json_object_del(t, "leases");
		*fired = 1;
		if (res.escalation_id[0]) {
			json_object_set_new(t, "lease_expired", json_integer(w->o->now_ms));
			w->stats->escalated++;
			if (w->report) {
				a.action = "escalated";
				a.escalation_type = "heartbeat_timeout";
				a.severity = "warning";
				a.task_id = task;
				a.cause = res.claim;
				a.msg_id = res.escalation_id;
				w->report(&a, w->ctx);
			}
		}
	}
	amp_errlist_free(&errs);
}

/* A plan's deadline passed before the approval: amp_coord_deadline
 * escalates it once per plan record. */
static void evaluate_deadline(struct watch *w, const char *task, json_t *t, int *fired)
{
	json_t *due = json_object_get(t, "deadline");
	amp_coord_result res;
	amp_errlist errs = { 0 };
	amp_watch_action a;
	int escalated = 0;

	if (!json_is_integer(due) || w->o->now_ms <= json_integer_value(due) || amp_watch_need_schemas(w) < 0)
		return;
	if (amp_coord_deadline(w->st, *w->set, task, w->o->now_ms, &res, &escalated, &errs) < 0) {
		coord_write_failed(w, task, "escalate the deadline of", &errs);
	} else {
		json_object_del(t, "deadline");
		if (escalated) {
			*fired = 1;
			w->stats->escalated++;
			if (w->report) {
				a.action = "escalated";
				a.escalation_type = "unknown";
				a.severity = "warning";
				a.task_id = task;
				a.cause = "deadline";
				a.msg_id = res.escalation_id;
				w->report(&a, w->ctx);
			}
		}
	}
	amp_errlist_free(&errs);
}

void amp_watch_evaluate_timers(struct watch *w, int *fired)
{
	json_t *tasks = json_object_get(w->state, "tasks"), *t;
	const char *task;

	json_object_foreach(tasks, task, t) {
		evaluate_leases(w, task, t, fired);
		evaluate_deadline(w, task, t, fired);
		evaluate_acks(w, task, t, fired);
		evaluate_questions(w, task, t, fired);
		evaluate_holders(w, task, t, fired);
	}
	/* A task found unreadable while escalating keeps no timers. */
	json_object_foreach(json_object_get(w->state, "broken"), task, t)
		json_object_del(tasks, task);
}
