/*
 * watch_rules.c - the rules amp watch checks each new record against, as
 * amp send would have (watch_rules.h).
 */
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/util.h"
#include "protocol/protocol.h"
#include "read/read.h"
#include "watch_fire.h"
#include "watch_rules.h"

/*
 * AMP/1.0 No Silent Failure: record `name` of the task cannot be used.  Its
 * cause is the record's path, named first in the description
 * (AMP_RECORD_CAUSE), so that a record with no msg_id, or one whose msg_id
 * another record names too (a message and its ACK), is escalated exactly
 * once.  `id` goes to affected_msgs when it names a message of the task.
 * Returns 1 (the record is escalated).
 */
int amp_watch_escalate_unknown(struct watch *w, const amp_task_log *log, const char *id,
			       const char *name, const char *what)
{
	json_t *affected;
	char description[1700], path[512];

	amp_watch_record_path(log, name, path, sizeof(path));
	if (amp_watch_has_cause(log, "unknown", path))
		return 1;
	/* affected_msgs names messages in the SSOT: an ACK whose message is
	 * not there (an orphan) affects none; its path is the cause. */
	affected = amp_watch_is_msg_id(id) && amp_task_log_id_taken(log, id) ?
		   json_pack("[s]", id) : json_array();
	snprintf(description, sizeof(description),
		 AMP_RECORD_CAUSE "%s: %.900s. Fix or supersede the record; agents must not act on it (No Silent Failure).",
		 path, what);
	amp_watch_fire(w, log->task_id, "unknown", "warning", affected, NULL, description, path);
	json_decref(affected);
	return 1;
}

/*
 * AMP/1.0 §05 permission_denied ("operation exceeds risk_level
 * authorization scope"): record e, which reached the SSOT without amp (a
 * fetch, a hand-made commit), acts on `dispatch` before the admin approved
 * it (git config amp.approvalRequired).  `amp send` and `amp ack` refuse
 * such an act and record the same escalation: its cause is the dispatch,
 * so there is one per dispatch, whoever found it.
 */
static void escalate_unapproved(struct watch *w, const amp_task_log *log,
				const amp_entry *e, const char *dispatch)
{
	json_t *affected;
	char description[1024], id[256], act[200];

	snprintf(id, sizeof(id), "%s", dispatch); /* static storage of rules.c */
	if (amp_watch_has_cause(log, "permission_denied", id))
		return;
	affected = json_pack("[s]", id);
	if (amp_watch_is_type(e->doc, "task_dispatch")) {
		snprintf(description, sizeof(description),
			 "The %.20s dispatched again in %.100s the subtasks of %s, whose risk_level needs the admin's approval (git config amp.approvalRequired), at a level that needs none; the record reached the SSOT without amp (a fetch or a hand-made commit). Only the admin may lower it.",
			 amp_or_none(amp_json_str(e->doc, "from")), e->id, id);
	} else {
		if (e->kind == AMP_ENTRY_ACK)
			snprintf(act, sizeof(act), "ACKed");
		else
			snprintf(act, sizeof(act), "reported %.100s on", e->id);
		snprintf(description, sizeof(description),
			 "The %.20s %s %s, whose risk_level needs the admin's approval (git config amp.approvalRequired), before the admin approved it; the record reached the SSOT without amp (a fetch or a hand-made commit). The admin approves with 'amp approve %s' or aborts the task.",
			 amp_or_none(amp_json_str(e->doc, "from")), act, id, log->task_id);
	}
	amp_watch_fire(w, log->task_id, "permission_denied", "warning", affected, NULL, description, NULL);
	json_decref(affected);
}

/* AMP/1.0 §04 Confidence Threshold, for a verdict that came without amp
 * (amp send and amp verdict write the escalation with it). */
static void check_confidence(struct watch *w, const amp_task_log *log, const amp_entry *e)
{
	json_t *affected;
	char description[1024];

	if (!amp_confidence_low(e->doc, description, sizeof(description)))
		return;
	affected = json_pack("[s]", e->id);
	amp_watch_fire(w, log->task_id, "conflict", "info", affected, NULL, description, NULL);
	json_decref(affected);
}

/* 1 for a dispatch to a protected branch that is otherwise schema-valid
 * (amp_rules_branch_refusal): junk naming main is not a branch_violation. */
static int branch_refused(struct watch *w, json_t *doc)
{
	amp_errlist errs = { 0 };
	int refused;

	if (!amp_rules_is_protected_branch(w->st, doc) || amp_watch_need_schemas(w) < 0)
		return 0;
	refused = amp_message_validate(*w->set, doc, 0, &errs) != AMP_EIO &&
		  amp_rules_branch_refusal(w->st, doc, &errs, 0);
	amp_errlist_free(&errs);
	return refused;
}

/* The rules `amp ack` applies (amp_rules_check_ack), for ACK i of the log
 * that reached the SSOT without it.  1 with the reason in `what` when it
 * breaks one. */
static int ack_problem(const amp_task_log *log, size_t i, char *what, size_t whatsz)
{
	amp_errlist errs = { 0 };
	int broken = amp_rules_check_ack(log, i, &errs) < 0;

	if (broken)
		snprintf(what, whatsz, "%s", errs.items[0].message);
	amp_errlist_free(&errs);
	return broken;
}

/* The named instance that wrote record e, into buf, when a rule asks: an
 * executor record when a lease was ever taken on the task before it
 * (coord.h), any record when an instance was named as a round's starter
 * or ACKer before it (round.h): the Amp-Agent of the commit that added
 * it, never the watcher's own.  NULL otherwise (unnamed, or not asked). */
static const char *writer_of(struct watch *w, const amp_task_log *before, const amp_entry *e,
			     char *buf, size_t bufsz)
{
	const char *from = amp_json_str(e->doc, "from");
	amp_leases ls;
	amp_error err;

	buf[0] = '\0';
	if (!from)
		return NULL;
	if (!amp_round_named(before)) {
		if (strcmp(from, "executor"))
			return NULL;
		amp_coord_leases(before, &ls);
		if (!ls.n)
			return NULL;
	}
	if (amp_read_writer(w->st, before->task_id, e->kind, e->id, buf, bufsz, &err) < 0) {
		amp_errlist_add(w->errors, AMP_EIO, "", "%s", err.message);
		w->failed = 1;
	}
	return buf[0] ? buf : NULL;
}

/* The rules for message i of a task, new since the last pass.  Returns 1
 * when the record was escalated as unknown. */
int amp_watch_check_message(const struct task_pass *t, size_t i)
{
	struct watch *w = t->w;
	const amp_task_log *log = t->log;
	const amp_entry *e = &log->entries[i];
	const char *type = amp_json_str(e->doc, "type");
	const char *id = amp_json_str(e->doc, "msg_id");
	const char *task = amp_json_str(e->doc, "task_id");
	const char *denied;
	amp_task_log before = *log;
	amp_errlist errs = { 0 };
	char name[300], what[1200], agent[AMP_AGENT_MAX + 1];
	int status, unknown = 0;

	amp_watch_entry_name(e, name, sizeof(name));
	/* First: a record out of its place (its name is no msg_id, say) has no
	 * msg_id any other escalation could name. */
	if (!amp_watch_is_msg_id(e->id)) {
		snprintf(what, sizeof(what), "its name holds no msg_id");
		return amp_watch_escalate_unknown(w, log, e->id, name, what);
	}
	if (!id || strcmp(id, e->id) || !task || strcmp(task, log->task_id)) {
		snprintf(what, sizeof(what), "its msg_id/task_id (%s, %s) do not match its place",
			 id ? id : "none", task ? task : "none");
		return amp_watch_escalate_unknown(w, log, e->id, name, what);
	}
	/* AMP/1.0 §01 Branch Validation, for a dispatch that did not come
	 * through amp send; decided as amp send decides it. */
	if (branch_refused(w, e->doc)) {
		json_t *affected = json_pack("[s]", e->id);
		char description[1024];

		if (!amp_watch_has_cause(log, "branch_violation", e->id)) {
			snprintf(description, sizeof(description),
				 "%s in the SSOT dispatches %s to protected branch '%s' (Branch Validation): the executor must refuse it; re-dispatch on a feature branch.",
				 e->id, log->task_id,
				 amp_json_str(json_object_get(e->doc, "payload"), "branch"));
			amp_watch_fire(w, log->task_id, "branch_violation", "warning", affected, NULL,
				       description, NULL);
		}
		json_decref(affected);
		return 0;
	}
	if (amp_watch_need_schemas(w) < 0)
		return 0;
	before.count = i;
	status = amp_message_validate(*w->set, e->doc, 0, &errs);
	/* A result for a subtask whose dispatch awaits the admin's approval,
	 * or a dispatch taking a subtask out of the approval path, is an act
	 * beyond the task's risk level, not an unknown record. */
	if (status == AMP_OK && type &&
	    (!strcmp(type, "task_result") || !strcmp(type, "task_dispatch")) &&
	    (denied = amp_rules_unapproved_dispatch(&before, amp_task_fold_to(t->fold, log, i),
						     e->doc, NULL))) {
		escalate_unapproved(w, log, e, denied);
		goto done;
	}
	if (status == AMP_OK)
		status = amp_rules_check_replayed(w->st, w->tree, &before,
						  amp_task_fold_to(t->fold, log, i), e->doc,
						  writer_of(w, &before, e, agent, sizeof(agent)),
						  &errs);
	if (status == AMP_EIO) {
		amp_errlist_extend(w->errors, &errs);
		w->failed = 1;
	} else if (status < 0 && errs.count) {
		const char *kind = "unknown";
		size_t k;

		/* AMP/1.0 §03 CI Gating has an escalation type of its own. */
		for (k = 0; k < errs.count; k++)
			if (!strncmp(errs.items[k].path, "/payload/ci_status", 18))
				kind = "ci_failure";
		snprintf(what, sizeof(what), "%s %.200s%s%.600s (%zu problem%s)",
			 status == AMP_ESCHEMA ? "not schema-valid:" : "breaks a send-time rule:",
			 errs.items[0].path, errs.items[0].path[0] ? ": " : "",
			 errs.items[0].message, errs.count, errs.count > 1 ? "s" : "");
		if (!strcmp(kind, "unknown")) {
			unknown = amp_watch_escalate_unknown(w, log, e->id, name, what);
		} else if (!amp_watch_has_cause(log, kind, e->id)) {
			json_t *affected = json_pack("[s]", e->id);
			char description[1400];

			snprintf(description, sizeof(description),
				 "%s in the SSOT asks for a review although CI failed (%s): the coordinator must re-dispatch instead (CI Gating).",
				 e->id, errs.items[0].path);
			amp_watch_fire(w, log->task_id, kind, "warning", affected, NULL, description, NULL);
			json_decref(affected);
		}
	}
	if (status == AMP_OK && type && !strcmp(type, "review_verdict") &&
	    !amp_watch_has_cause(log, "conflict", e->id))
		check_confidence(w, log, e);
done:
	amp_errlist_free(&errs);
	return unknown;
}

/*
 * AMP/1.0 requires_ack: an ACK that reached the SSOT without `amp ack` (a
 * fetch, a hand-made commit) after its message's deadline is the truth, and
 * late.  `amp ack` writes the ack_timeout escalation with a late ACK; this
 * is the same for the others, once per message (none when the message was
 * escalated already).  No clock runs while the task is aborted, suspended or
 * due to lock.
 */
static void check_late_ack(const struct task_pass *t, size_t i)
{
	const amp_entry *e = &t->log->entries[i];
	const amp_entry *m = amp_task_log_find(t->log, AMP_ENTRY_MSG, e->id);
	amp_task_log before = *t->log;
	const amp_task_state *s;
	amp_task_state computed = { 0 };
	char description[1024], due[AMP_TIME_BUFSZ], when[AMP_TIME_BUFSZ];
	int64_t deadline, at;
	json_t *affected;

	if (!m || amp_watch_has_cause(t->log, "ack_timeout", e->id))
		return;
	before.count = i;
	if (!(s = amp_task_fold_to(t->fold, t->log, i))) {
		amp_task_state_compute(&before, &computed);
		s = &computed;
	}
	deadline = s->aborted || s->suspended || s->lock_due ? -1 :
		   amp_task_ack_deadline(&before, s, m, amp_watch_arrival_of(t, m));
	at = amp_watch_trusted_time(t, e, NULL);
	if (deadline >= 0 && at > deadline) {
		snprintf(description, sizeof(description),
			 "%s from %s to %s required an ACK by %s; the ACK came %lld s late, at %s (%s), and reached the SSOT without 'amp ack' (AMP/1.0 requires_ack).",
			 e->id, amp_or_none(amp_json_str(m->doc, "from")),
			 amp_or_none(amp_json_str(e->doc, "from")), amp_time_format(deadline, due),
			 (long long)((at - deadline + 999) / 1000), amp_time_format(at, when),
			 amp_watch_arrival_source(t, e));
		affected = json_pack("[s]", e->id);
		amp_watch_fire(t->w, t->log->task_id, "ack_timeout", "warning", affected, NULL,
			       description, NULL);
		json_decref(affected);
	}
	amp_task_state_free(&computed);
}

/* The rules for ACK i of a task, new since the last pass.  Returns 1 when
 * the record was escalated as unknown. */
int amp_watch_check_ack(const struct task_pass *t, size_t i)
{
	const amp_entry *e = &t->log->entries[i];
	amp_task_log before = *t->log;
	amp_errlist errs = { 0 };
	const char *denied;
	char name[300], what[1200];
	int unknown = 0;

	if (amp_watch_need_schemas(t->w) < 0)
		return 0;
	amp_watch_entry_name(e, name, sizeof(name));
	before.count = i;
	if (amp_message_validate(*t->w->set, e->doc, 1, &errs) == AMP_ESCHEMA) {
		snprintf(what, sizeof(what), "ACK not schema-valid: %.200s: %.600s",
			 errs.items[0].path, errs.items[0].message);
		unknown = amp_watch_escalate_unknown(t->w, t->log, e->id, name, what);
	} else if (ack_problem(t->log, i, what, sizeof(what))) {
		unknown = amp_watch_escalate_unknown(t->w, t->log, e->id, name, what);
	} else if ((denied = amp_rules_unapproved_dispatch(&before,
							   amp_task_fold_to(t->fold, t->log, i),
							   NULL, e->id))) {
		escalate_unapproved(t->w, t->log, e, denied);
	} else {
		check_late_ack(t, i);
	}
	amp_errlist_free(&errs);
	return unknown;
}

/*
 * Sender clocks: AMP/1.0 deadlines run from a timestamp the sender wrote.
 * `amp send` refuses one further than amp.maxClockSkew from the writer's
 * clock; a message, ACK or heartbeat that came otherwise and is that far
 * from the commit that brought it is escalated as unknown (its deadlines
 * run from the commit time: amp_task_trusted_time).
 */
void amp_watch_check_clock(const struct task_pass *t, const amp_entry *e, const char *name)
{
	int64_t sent = amp_record_time(e->doc), arrival = amp_watch_arrival_of(t, e);
	int64_t off = sent > arrival ? sent - arrival : arrival - sent;
	char what[700], at[AMP_TIME_BUFSZ];
	int skewed;

	amp_task_trusted_time(t->log, sent, arrival, &skewed);
	if (!skewed)
		return;
	snprintf(what, sizeof(what),
		 "its timestamp %.40s is %lld s %s the commit that brought it (%s), more than git config amp.maxClockSkew (%lld s): the sender's clock is wrong, and amp measures the record's deadlines from the commit time",
		 amp_json_str(e->doc, "timestamp"), (long long)(off / 1000),
		 sent > arrival ? "ahead of" : "behind", amp_time_format(arrival, at),
		 (long long)(t->log->policy->max_clock_skew_ms / 1000));
	amp_watch_escalate_unknown(t->w, t->log, e->id, name, what);
}

/*
 * AMP/1.0 §05 hallucination_lock for what reached the SSOT without `amp
 * send` (which writes the lock with the verdict that reaches the
 * threshold): when the task is due to lock (s->lock_due: its rejecting
 * verdicts since the last resume, malformed ones included, reach
 * amp.lockThreshold, and no lock is in force), the lock is written.  Its
 * cause is the first rejecting verdict after the last resume at which the
 * count reached the threshold; affected [verdict, latest dispatch].
 */
void amp_watch_check_lock(struct watch *w, const amp_task_log *log, const amp_task_state *s)
{
	amp_task_log upto = *log;
	size_t i, from = 0;

	/* An aborted task takes no more work: there is nothing to lock. */
	if (!s->lock_due || s->aborted)
		return;
	for (i = 0; i < log->count; i++)
		if (log->entries[i].kind == AMP_ENTRY_CTL && amp_watch_is_type(log->entries[i].doc, "resume"))
			from = i + 1;
	for (i = from; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *d = amp_json_str(json_object_get(e->doc, "payload"), "decision");
		json_t *affected, *suggested;
		char description[1024];
		const char *dispatch;
		amp_task_state at;

		if (e->kind != AMP_ENTRY_MSG || !amp_watch_is_type(e->doc, "review_verdict") || !d ||
		    strcmp(d, "rejected") || !amp_task_entry_in_place(log, e))
			continue;
		upto.count = i + 1;
		amp_task_state_compute(&upto, &at);
		if (!at.lock_due) {
			amp_task_state_free(&at);
			continue;
		}
		dispatch = at.last_dispatch ? amp_json_str(at.last_dispatch, "msg_id") : NULL;
		affected = dispatch ? json_pack("[s,s]", e->id, dispatch) : json_pack("[s]", e->id);
		suggested = amp_lock_suggestions();
		amp_lock_description(description, sizeof(description), log->task_id, &at,
				     at.lock_threshold, e->id);
		amp_watch_fire(w, log->task_id, "hallucination_lock", "critical", affected, suggested,
			       description, NULL);
		json_decref(affected);
		json_decref(suggested);
		amp_task_state_free(&at);
		return;
	}
}
