#include "watch.h"
#include "store/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/record.h"
#include "base/clock.h"
#include "protocol/protocol.h"
#include "read/read.h"
#include "write/write.h"
#include "base/util.h"

#define STATE_VERSION 2

struct watch {
	amp_store *st;
	amp_schema_set **set;
	const amp_watch_opts *o;
	amp_watch_report_fn report;
	void *ctx;
	amp_watch_stats *stats;
	amp_errlist *errors;
	json_t *state;    /* see load_state */
	git_tree *tree;   /* the tree being processed */
	amp_record_times *arrivals; /* when the commits of the range being
				     * processed first held each record */
	int failed;       /* an escalation could not be written, or nothing
			   * could be checked: keep no state */
	int no_schemas;   /* they could not be loaded (reported once) */
	int broken;       /* tasks found unreadable for the first time */
};

/* One task being read again. */
struct task_pass {
	struct watch *w;
	const amp_task_log *log;
	const json_t *old;     /* its timers of the last pass (may be NULL) */
};

/* ---- reading ------------------------------------------------------------ */

static void entry_name(const amp_entry *e, char *buf, size_t bufsz)
{
	amp_store_entry_name(e->seq, e->kind, e->id, buf, bufsz);
}

/* The path of record `name` of the task, into buf. */
static void record_path(const amp_task_log *log, const char *name, char *buf, size_t bufsz)
{
	char dir[128];

	amp_store_task_dir(log->task_id, dir, sizeof(dir));
	/* a file name is any bytes; what amp writes of it is UTF-8 */
	snprintf(buf, bufsz, "%s/%.300s", dir, amp_json_text(name));
}

/* 1 when the task already holds a system escalation of `type` for `cause`. */
static int has_cause(const amp_task_log *log, const char *type, const char *cause)
{
	return amp_task_has_escalation(log, type, "system", cause) != NULL;
}

/* 1 when `id` is a msg_id, so it may stand in affected_msgs. */
static int is_msg_id(const char *id)
{
	return id && amp_msg_id_parse(id, NULL, NULL, NULL) == 0;
}

static int is_type(const json_t *doc, const char *type)
{
	const char *t = amp_json_str(doc, "type");

	return t && !strcmp(t, type);
}

/* The "arrival" of the entry of `list` whose `key` is id, or -1. */
static int64_t saved_arrival(const json_t *list, const char *key, const char *id)
{
	const json_t *v;
	size_t i;

	json_array_foreach(list, i, v) {
		const char *k = amp_json_str(v, key);

		if (k && !strcmp(k, id) && json_is_integer(json_object_get(v, "arrival")))
			return json_integer_value(json_object_get(v, "arrival"));
	}
	return -1;
}

/*
 * When the SSOT first held record e: the committer time (ms) of the commit
 * that brought it, found by this pass's walk of the new commits, else kept
 * from the last pass by the task's timers (for the messages they wait on
 * and hand-offs they time); -1 when unknown, and the timestamp alone
 * counts.
 */
static int64_t arrival_of(const struct task_pass *t, const amp_entry *e)
{
	char name[300];
	int64_t ms;

	entry_name(e, name, sizeof(name));
	if ((ms = amp_record_times_get(t->w->arrivals, t->log->task_id, name)) >= 0)
		return ms;
	if (e->kind != AMP_ENTRY_MSG || !e->id)
		return -1;
	if ((ms = saved_arrival(json_object_get(t->old, "acks"), "msg", e->id)) >= 0)
		return ms;
	return saved_arrival(json_object_get(t->old, "holders"), "by", e->id);
}

/* The time record e counts from (amp_task_trusted_time). */
static int64_t trusted_time(const struct task_pass *t, const amp_entry *e, int *skewed)
{
	return amp_task_trusted_time(t->log, amp_record_time(e->doc), arrival_of(t, e), skewed);
}

/* trusted_time as an amp_time_of_fn, for amp_task_holders. */
static int64_t holder_time(const amp_entry *e, void *ctx)
{
	return trusted_time(ctx, e, NULL);
}

/* ---- escalating ---------------------------------------------------------- */

static int need_schemas(struct watch *w)
{
	amp_error err;

	if (*w->set)
		return AMP_OK;
	/* Said once: a pass over 200,000 records said it 200,000 times, in
	 * 400 MB of error list. */
	if (w->no_schemas)
		return AMP_EIO;
	if (amp_schema_set_load_amp(w->set, NULL, &err) < 0) {
		/* Nothing can be checked: the pass fails and keeps no state,
		 * so the next one checks these records (No Silent Failure). */
		w->no_schemas = w->failed = 1;
		return amp_errlist_add(w->errors, AMP_EIO, err.path, "%s", err.message);
	}
	return AMP_OK;
}

/*
 * A task whose directory cannot be read (its tree is missing or corrupt) is
 * skipped, so that the other tasks are still enforced.  No escalation can be
 * written into it (that needs its tree), so it is reported on stderr, once:
 * the pass that first finds it (or finds a new reason) fails with exit 4,
 * and watch.json remembers it under "broken"; each later pass reads it
 * again, silently, until it can be read, and then checks all its records.
 * The caller drops the task's timers.
 */
static void task_broken(struct watch *w, const char *task, const amp_error *err)
{
	json_t *broken = json_object_get(w->state, "broken");
	const char *before = amp_json_str(broken, task);

	if (before && !strcmp(before, err->message))
		return;
	json_object_set_new(broken, task, json_string(err->message));
	amp_errlist_add(w->errors, AMP_EIO, err->path,
			"%s; task %s is skipped until it can be read", err->message, task);
	w->broken++;
}

/* After an escalation into `task` failed: 1 when the reason is that the
 * task's directory cannot be read (it broke after its timers were set),
 * which task_broken then reports, 0 when the failure is another one. */
static int escalation_broke_task(struct watch *w, const char *task)
{
	git_tree *tip = NULL;
	amp_task_log log;
	amp_error err;
	int broke = 0;

	if (amp_store_tip(w->st, amp_store_messages_ref(w->st), NULL, &tip, &err) < 0)
		return 0;
	if (amp_store_read_task(w->st, tip, task, &log, &err) < 0) {
		task_broken(w, task, &err);
		broke = 1;
	} else {
		amp_task_log_free(&log);
	}
	git_tree_free(tip);
	return broke;
}

/*
 * Escalates one cause as system, once.  `cause` is what the report and the
 * commit name; NULL means the first affected message (the once-check inside
 * the compare-and-swap derives the cause from the escalation itself, see
 * amp_escalation_cause).  Returns AMP_OK when the escalation is in the SSOT (written now or
 * before), else the failure, recorded in w->errors.
 */
static int fire(struct watch *w, const char *task, const char *type,
		const char *severity, json_t *affected, json_t *suggested,
		const char *description, const char *cause)
{
	amp_escalation e = { 0 };
	amp_send_result res;
	amp_errlist errs = { 0 };
	amp_watch_action a;
	const char *first = json_string_value(json_array_get(affected, 0));
	char trailers[1100];
	int status;

	if ((status = need_schemas(w)) < 0) {
		w->failed = 1;
		return status;
	}
	e.task_id = task;
	e.from = "system";
	e.escalation_type = type;
	e.severity = severity;
	e.triggered_by = "system";
	e.description = description;
	e.affected_msgs = affected;
	e.suggested_actions = suggested;
	e.auto_suspended = -1;
	e.now_ms = w->o->now_ms;
	e.once = 1;
	if (!cause)
		cause = first;
	snprintf(trailers, sizeof(trailers), "Amp-Cause: %s %s\n", type, cause ? cause : "-");
	status = amp_send_escalation(w->st, *w->set, &e, trailers, &res, &errs);
	if (status < 0 && escalation_broke_task(w, task)) {
		/* reported by task_broken; the other tasks go on */
	} else if (status < 0) {
		amp_errlist_add(w->errors, AMP_EIO, "", "cannot escalate %s on %s (%s): %s",
				type, task, cause ? cause : "-",
				errs.count ? errs.items[0].message : "unknown error");
		w->failed = 1;
	} else if (!res.duplicate) {
		w->stats->escalated++;
		if (w->report) {
			a.action = "escalated";
			a.escalation_type = type;
			a.severity = severity;
			a.task_id = task;
			a.cause = first ? first : cause ? cause : "";
			a.msg_id = res.msg_id;
			w->report(&a, w->ctx);
		}
	}
	amp_errlist_free(&errs);
	return status;
}

/* ---- record rules --------------------------------------------------------- */

/*
 * AMP/1.0 No Silent Failure: record `name` of the task cannot be used.  Its
 * cause is the record's path, named first in the description
 * (AMP_RECORD_CAUSE), so that a record with no msg_id, or one whose msg_id
 * another record names too (a message and its ACK), is escalated exactly
 * once.  `id` goes to affected_msgs when it names a message of the task.
 * Returns 1 (the record is escalated).
 */
static int escalate_unknown(struct watch *w, const amp_task_log *log, const char *id,
			    const char *name, const char *what)
{
	json_t *affected;
	char description[1700], path[512];

	record_path(log, name, path, sizeof(path));
	if (has_cause(log, "unknown", path))
		return 1;
	/* affected_msgs names messages in the SSOT: an ACK whose message is
	 * not there (an orphan) affects none; its path is the cause. */
	affected = is_msg_id(id) && amp_task_log_id_taken(log, id) ?
		   json_pack("[s]", id) : json_array();
	snprintf(description, sizeof(description),
		 AMP_RECORD_CAUSE "%s: %.900s. Fix or supersede the record; agents must not act on it (No Silent Failure).",
		 path, what);
	fire(w, log->task_id, "unknown", "warning", affected, NULL, description, path);
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
	if (has_cause(log, "permission_denied", id))
		return;
	affected = json_pack("[s]", id);
	if (is_type(e->doc, "task_dispatch")) {
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
	fire(w, log->task_id, "permission_denied", "warning", affected, NULL, description, NULL);
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
	fire(w, log->task_id, "conflict", "info", affected, NULL, description, NULL);
	json_decref(affected);
}

/* 1 for a dispatch to a protected branch that is otherwise schema-valid
 * (amp_rules_branch_refusal): junk naming main is not a branch_violation. */
static int branch_refused(struct watch *w, json_t *doc)
{
	amp_errlist errs = { 0 };
	int refused;

	if (!amp_rules_is_protected_branch(w->st, doc) || need_schemas(w) < 0)
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

/* The named instance that wrote executor record e, into buf, when a lease
 * was ever taken on the task before it (the only rule that asks, coord.h):
 * the Amp-Agent of the commit that added it, never the watcher's own.
 * NULL otherwise (unnamed, or not asked). */
static const char *writer_of(struct watch *w, const amp_task_log *before, const amp_entry *e,
			     char *buf, size_t bufsz)
{
	const char *from = amp_json_str(e->doc, "from");
	amp_leases ls;
	amp_error err;

	buf[0] = '\0';
	if (!from || strcmp(from, "executor"))
		return NULL;
	amp_coord_leases(before, &ls);
	if (!ls.n)
		return NULL;
	if (amp_read_writer(w->st, before->task_id, e->kind, e->id, buf, bufsz, &err) < 0) {
		amp_errlist_add(w->errors, AMP_EIO, "", "%s", err.message);
		w->failed = 1;
	}
	return buf[0] ? buf : NULL;
}

/* The rules for message i of a task, new since the last pass.  Returns 1
 * when the record was escalated as unknown. */
static int check_message(struct watch *w, const amp_task_log *log, size_t i)
{
	const amp_entry *e = &log->entries[i];
	const char *type = amp_json_str(e->doc, "type");
	const char *id = amp_json_str(e->doc, "msg_id");
	const char *task = amp_json_str(e->doc, "task_id");
	const char *denied;
	amp_task_log before = *log;
	amp_errlist errs = { 0 };
	char name[300], what[1200], agent[AMP_AGENT_MAX + 1];
	int status, unknown = 0;

	entry_name(e, name, sizeof(name));
	/* First: a record out of its place (its name is no msg_id, say) has no
	 * msg_id any other escalation could name. */
	if (!is_msg_id(e->id)) {
		snprintf(what, sizeof(what), "its name holds no msg_id");
		return escalate_unknown(w, log, e->id, name, what);
	}
	if (!id || strcmp(id, e->id) || !task || strcmp(task, log->task_id)) {
		snprintf(what, sizeof(what), "its msg_id/task_id (%s, %s) do not match its place",
			 id ? id : "none", task ? task : "none");
		return escalate_unknown(w, log, e->id, name, what);
	}
	/* AMP/1.0 §01 Branch Validation, for a dispatch that did not come
	 * through amp send; decided as amp send decides it. */
	if (branch_refused(w, e->doc)) {
		json_t *affected = json_pack("[s]", e->id);
		char description[1024];

		if (!has_cause(log, "branch_violation", e->id)) {
			snprintf(description, sizeof(description),
				 "%s in the SSOT dispatches %s to protected branch '%s' (Branch Validation): the executor must refuse it; re-dispatch on a feature branch.",
				 e->id, log->task_id,
				 amp_json_str(json_object_get(e->doc, "payload"), "branch"));
			fire(w, log->task_id, "branch_violation", "warning", affected, NULL,
			     description, NULL);
		}
		json_decref(affected);
		return 0;
	}
	if (need_schemas(w) < 0)
		return 0;
	before.count = i;
	status = amp_message_validate(*w->set, e->doc, 0, &errs);
	/* A result for a subtask whose dispatch awaits the admin's approval,
	 * or a dispatch taking a subtask out of the approval path, is an act
	 * beyond the task's risk level, not an unknown record. */
	if (status == AMP_OK && type &&
	    (!strcmp(type, "task_result") || !strcmp(type, "task_dispatch")) &&
	    (denied = amp_rules_unapproved_dispatch(&before, NULL, e->doc, NULL))) {
		escalate_unapproved(w, log, e, denied);
		goto done;
	}
	if (status == AMP_OK)
		status = amp_rules_check_replayed(w->st, w->tree, &before, e->doc,
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
			unknown = escalate_unknown(w, log, e->id, name, what);
		} else if (!has_cause(log, kind, e->id)) {
			json_t *affected = json_pack("[s]", e->id);
			char description[1400];

			snprintf(description, sizeof(description),
				 "%s in the SSOT asks for a review although CI failed (%s): the coordinator must re-dispatch instead (CI Gating).",
				 e->id, errs.items[0].path);
			fire(w, log->task_id, kind, "warning", affected, NULL, description, NULL);
			json_decref(affected);
		}
	}
	if (status == AMP_OK && type && !strcmp(type, "review_verdict") &&
	    !has_cause(log, "conflict", e->id))
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
	amp_task_state s;
	char description[1024], due[AMP_TIME_BUFSZ], when[AMP_TIME_BUFSZ];
	int64_t deadline, at;
	json_t *affected;

	if (!m || has_cause(t->log, "ack_timeout", e->id))
		return;
	before.count = i;
	amp_task_state_compute(&before, &s);
	deadline = s.aborted || s.suspended || s.lock_due ? -1 :
		   amp_task_ack_deadline(&before, &s, m, arrival_of(t, m));
	at = trusted_time(t, e, NULL);
	if (deadline >= 0 && at > deadline) {
		snprintf(description, sizeof(description),
			 "%s from %s to %s required an ACK by %s; the ACK came %lld s late, at %s, and reached the SSOT without 'amp ack' (AMP/1.0 requires_ack).",
			 e->id, amp_or_none(amp_json_str(m->doc, "from")),
			 amp_or_none(amp_json_str(e->doc, "from")), amp_time_format(deadline, due),
			 (long long)((at - deadline + 999) / 1000), amp_time_format(at, when));
		affected = json_pack("[s]", e->id);
		fire(t->w, t->log->task_id, "ack_timeout", "warning", affected, NULL,
		     description, NULL);
		json_decref(affected);
	}
	amp_task_state_free(&s);
}

/* The rules for ACK i of a task, new since the last pass.  Returns 1 when
 * the record was escalated as unknown. */
static int check_ack(const struct task_pass *t, size_t i)
{
	const amp_entry *e = &t->log->entries[i];
	amp_task_log before = *t->log;
	amp_errlist errs = { 0 };
	const char *denied;
	char name[300], what[1200];
	int unknown = 0;

	if (need_schemas(t->w) < 0)
		return 0;
	entry_name(e, name, sizeof(name));
	before.count = i;
	if (amp_message_validate(*t->w->set, e->doc, 1, &errs) == AMP_ESCHEMA) {
		snprintf(what, sizeof(what), "ACK not schema-valid: %.200s: %.600s",
			 errs.items[0].path, errs.items[0].message);
		unknown = escalate_unknown(t->w, t->log, e->id, name, what);
	} else if (ack_problem(t->log, i, what, sizeof(what))) {
		unknown = escalate_unknown(t->w, t->log, e->id, name, what);
	} else if ((denied = amp_rules_unapproved_dispatch(&before, NULL, NULL, e->id))) {
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
static void check_clock(const struct task_pass *t, const amp_entry *e, const char *name)
{
	int64_t sent = amp_record_time(e->doc), arrival = arrival_of(t, e);
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
	escalate_unknown(t->w, t->log, e->id, name, what);
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
static void check_lock(struct watch *w, const amp_task_log *log, const amp_task_state *s)
{
	amp_task_log upto = *log;
	size_t i, from = 0;

	/* An aborted task takes no more work: there is nothing to lock. */
	if (!s->lock_due || s->aborted)
		return;
	for (i = 0; i < log->count; i++)
		if (log->entries[i].kind == AMP_ENTRY_CTL && is_type(log->entries[i].doc, "resume"))
			from = i + 1;
	for (i = from; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *d = amp_json_str(json_object_get(e->doc, "payload"), "decision");
		json_t *affected, *suggested;
		char description[1024];
		const char *dispatch;
		amp_task_state at;

		if (e->kind != AMP_ENTRY_MSG || !is_type(e->doc, "review_verdict") || !d ||
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
		fire(w, log->task_id, "hallucination_lock", "critical", affected, suggested,
		     description, NULL);
		json_decref(affected);
		json_decref(suggested);
		amp_task_state_free(&at);
		return;
	}
}

/* ---- timers ---------------------------------------------------------------- */

/* Sets "arrival" of timer entry o when it is known. */
static json_t *with_arrival(json_t *o, int64_t arrival)
{
	if (o && arrival >= 0)
		json_object_set_new(o, "arrival", json_integer(arrival));
	return o;
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
static json_t *derive_timers(const struct task_pass *t, const amp_task_state *s)
{
	const amp_task_log *log = t->log;
	amp_holder holders[AMP_MAX_HOLDERS];
	json_t *acks, *held, *fired, *out;
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
		    amp_task_ack_of(log, e->id) || has_cause(log, "ack_timeout", e->id))
			continue;
		arrival = arrival_of(t, e);
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
	n = amp_task_holders(log, s, holder_time, (void *)t, holders);
	for (i = 0; i < n; i++) {
		const char *by = amp_json_str(holders[i].handed_by, "msg_id");
		const amp_entry *e = by ? amp_task_log_find(log, AMP_ENTRY_MSG, by) : NULL;

		if (!e)
			continue;
		json_array_append_new(held, with_arrival(json_pack("{s:s,s:s,s:I}",
			"role", holders[i].role, "by", by, "since", (json_int_t)holders[i].since_ms),
			arrival_of(t, e)));
	}
	for (i = 0; n && i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *kind = amp_json_str(json_object_get(e->doc, "payload"), "escalation_type");
		const char *by = amp_json_str(e->doc, "from");
		char buf[1024];

		if (e->kind == AMP_ENTRY_MSG && kind && !strcmp(kind, "heartbeat_timeout") &&
		    by && !strcmp(by, "system") && amp_escalation_cause(e->doc, buf, sizeof(buf)))
			json_array_append_new(fired, json_string(buf));
	}
	out = json_object();
	/* Leases (coord.h) run out on the clock too: amp watch releases them. */
	{
		amp_leases ls;
		json_t *leases = json_array();

		amp_coord_leases(log, &ls);
		for (i = 0; i < ls.n; i++)
			if (!ls.v[i].released)
				json_array_append_new(leases, json_pack("{s:s,s:s,s:I}",
					"claim", ls.v[i].claim, "agent", ls.v[i].agent,
					"expires", (json_int_t)amp_lease_expires(&ls.v[i])));
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
	if (json_array_size(held)) {
		json_object_set(out, "holders", held);
		json_object_set(out, "fired", fired);
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

/*
 * Remembers the newest SSOT write of each role (for heartbeats): a message,
 * an ACK (it stands for the message it acknowledges) or a heartbeat record
 * (named by its path: it has no msg_id), at its amp_task_trusted_time.
 */
static void note_write(const struct task_pass *t, const amp_entry *e, const char *name)
{
	json_t *lw = json_object_get(t->w->state, "last_write"), *cur;
	const char *from = amp_json_str(e->doc, "from");
	int64_t at = trusted_time(t, e, NULL);
	char path[512];

	if ((e->kind == AMP_ENTRY_CTL && !is_type(e->doc, "heartbeat")) || !from ||
	    amp_record_time(e->doc) < 0 || !amp_task_entry_in_place(t->log, e))
		return;
	cur = json_object_get(lw, from);
	if (cur && json_integer_value(json_object_get(cur, "ms")) >= at)
		return;
	record_path(t->log, name, path, sizeof(path));
	json_object_set_new(lw, from, e->kind == AMP_ENTRY_CTL ?
			    json_pack("{s:I,s:s}", "ms", (json_int_t)at, "path", path) :
			    json_pack("{s:I,s:s}", "ms", (json_int_t)at, "msg", e->id));
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
		if (fire(w, task, "ack_timeout", "warning", affected, NULL, description, NULL) < 0)
			json_array_append(kept, a);
		else
			*fired = 1;
		json_decref(affected);
	}
	if (json_array_size(kept) != json_array_size(acks))
		json_object_set(t, "acks", kept);
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
		int64_t since = json_integer_value(json_object_get(h, "since")), base = since;
		json_t *last = json_object_get(lw, role ? role : ""), *affected;
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
		if (seen || now <= base + w->o->heartbeat_ms)
			continue;
		prefix[0] = '\0';
		if (!msg)
			snprintf(prefix, sizeof(prefix), AMP_SILENCE_CAUSE "%.500s: ", path);
		snprintf(description, sizeof(description),
			 "%sThe %s holds %s (handed over by %s at %s) and has written nothing to the SSOT (a message, an ACK or a heartbeat) since %s (%lld min; amp.heartbeatTimeout %lld s).",
			 prefix, role, task, by, amp_time_format(since, handed),
			 amp_time_format(base, when), (long long)((now - base) / 60000),
			 (long long)(w->o->heartbeat_ms / 1000));
		affected = msg && strcmp(msg, by) ? json_pack("[s,s]", msg, by) : json_pack("[s]", by);
		if (fire(w, task, "heartbeat_timeout", "warning", affected, NULL, description,
			 cause) == AMP_OK) {
			json_array_append_new(fired_list, json_string(cause));
			*fired = 1;
		}
		json_decref(affected);
	}
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
	if (!due || need_schemas(w) < 0)
		return;
	if (amp_coord_expire(w->st, *w->set, task, w->o->now_ms, &res, &released, &errs) < 0) {
		if (!escalation_broke_task(w, task)) {
			amp_errlist_add(w->errors, AMP_EIO, "", "cannot release the expired claims of %s: %s",
					task, errs.count ? errs.items[0].message : "unknown error");
			w->failed = 1;
		}
	} else if (released) {
		json_object_del(t, "leases");
		*fired = 1;
		if (res.escalation_id[0]) {
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

	if (!json_is_integer(due) || w->o->now_ms <= json_integer_value(due) || need_schemas(w) < 0)
		return;
	if (amp_coord_deadline(w->st, *w->set, task, w->o->now_ms, &res, &escalated, &errs) < 0) {
		if (!escalation_broke_task(w, task)) {
			amp_errlist_add(w->errors, AMP_EIO, "", "cannot escalate the deadline of %s: %s",
					task, errs.count ? errs.items[0].message : "unknown error");
			w->failed = 1;
		}
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

static void evaluate_timers(struct watch *w, int *fired)
{
	json_t *tasks = json_object_get(w->state, "tasks"), *t;
	const char *task;

	json_object_foreach(tasks, task, t) {
		evaluate_leases(w, task, t, fired);
		evaluate_deadline(w, task, t, fired);
		evaluate_acks(w, task, t, fired);
		evaluate_holders(w, task, t, fired);
	}
	/* A task found unreadable while escalating keeps no timers. */
	json_object_foreach(json_object_get(w->state, "broken"), task, t)
		json_object_del(tasks, task);
}

/* ---- passes --------------------------------------------------------------- */

static void state_path(amp_store *st, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/watch.json", amp_store_state_dir(st));
}

/* The build (cache.h) and the settings the timers were derived with: a
 * state kept by another build or under other settings is foreign. */
static json_t *policy_key(struct watch *w)
{
	const amp_policy *p = amp_store_policy(w->st);

	return json_pack("{s:s,s:i,s:I,s:i}", "build", amp_build_id(),
			 "lock_threshold", w->o->lock_threshold,
			 "max_clock_skew_ms", (json_int_t)p->max_clock_skew_ms,
			 "approval_levels", (int)p->approval_levels);
}

static json_t *fresh_state(struct watch *w)
{
	return json_pack("{s:i,s:s,s:o,s:n,s:{},s:{},s:{}}", "version", STATE_VERSION,
			 "ref", amp_store_messages_ref(w->st), "policy", policy_key(w),
			 "tip", "last_write", "tasks", "broken");
}

/*
 * The saved state:
 *   {"version":2, "ref":..., "policy":{"build","lock_threshold",
 *    "max_clock_skew_ms","approval_levels"}, "tip":"<commit>"|null,
 *    "last_write":{"<role>":{"ms":..,"msg":..|"path":..}},
 *    "tasks":{"<task_id>":{"acks":[{"msg","deadline","from","to","arrival"}],
 *                          "holders":[{"role","by","since","arrival"}],
 *                          "fired":[<heartbeat causes>],
 *                          "leases":[{"claim","agent","expires"}],
 *                          "deadline":<ms>}},
 *    "broken":{"<task_id>":"<why its directory cannot be read>"}}
 * ("arrival": when the SSOT first held the message, when known.)
 * Anything else (missing, not a regular file, too big, unreadable, other
 * version, ref, build or settings) means a fresh state, hence a full
 * rescan: what was escalated is in the SSOT (has_cause), so a rescan
 * escalates nothing twice.
 */
static void load_state(struct watch *w)
{
	char path[4200];
	json_t *s, *key = policy_key(w);
	const char *ref;

	state_path(w->st, path, sizeof(path));
	s = w->o->full ? NULL : amp_cache_json(w->st, path);
	ref = amp_json_str(s, "ref");
	if (!json_is_object(s) ||
	    json_integer_value(json_object_get(s, "version")) != STATE_VERSION ||
	    !ref || strcmp(ref, amp_store_messages_ref(w->st)) ||
	    !json_equal(json_object_get(s, "policy"), key) ||
	    !json_is_object(json_object_get(s, "tasks")) ||
	    !json_is_object(json_object_get(s, "last_write"))) {
		json_decref(s);
		s = fresh_state(w);
	}
	json_decref(key);
	if (!json_is_object(json_object_get(s, "broken")))
		json_object_set_new(s, "broken", json_object());
	w->state = s;
}

/* Written to a temporary file and renamed, so a reader (another watcher)
 * sees the old state or the new one, never half of one. */
static int save_state(struct watch *w)
{
	char path[4200], tmp[4300];

	state_path(w->st, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	if ((mkdir(amp_store_state_dir(w->st), 0777) < 0 && errno != EEXIST) ||
	    json_dump_file(w->state, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0) {
		unlink(tmp);
		return amp_errlist_add(w->errors, AMP_EIO, "", "cannot write %s: %s", path,
				       strerror(errno));
	}
	return AMP_OK;
}

/* 1 when record `name` is new since the last pass: listed in `new_files`;
 * true (a task directory the last pass did not have), null or NULL (a task
 * read again after it was unreadable) mean every record.  A name that is
 * not UTF-8 no list can hold (JSON names are UTF-8), and amp never writes
 * one: such a record is looked at whenever its task is read, and
 * escalated once (has_cause). */
static int is_new(const json_t *new_files, const char *name)
{
	if (!amp_utf8_valid(name))
		return 1;
	return !json_is_object(new_files) || json_object_get(new_files, name);
}

static void process_task(struct watch *w, const char *task, const json_t *new_files)
{
	json_t *tasks = json_object_get(w->state, "tasks"), *timers;
	struct task_pass t;
	amp_task_state s;
	amp_task_log log;
	amp_error err;
	char name[300];
	size_t i;

	if (amp_store_read_task(w->st, w->tree, task, &log, &err) < 0) {
		task_broken(w, task, &err);
		json_object_del(tasks, task);
		return;
	}
	json_object_del(json_object_get(w->state, "broken"), task);
	w->stats->tasks_read++;
	t.w = w;
	t.log = &log;
	t.old = json_object_get(tasks, task);
	/* AMP/1.0 No Silent Failure: a record nobody can read is reported. */
	for (i = 0; i < log.nbad; i++)
		if (is_new(new_files, log.bad[i].name))
			escalate_unknown(w, &log, log.bad[i].id, log.bad[i].name,
					 log.bad[i].reason);
	for (i = 0; i < log.count; i++) {
		const amp_entry *e = &log.entries[i];
		int unknown = 0;

		entry_name(e, name, sizeof(name));
		if (!is_new(new_files, name))
			continue;
		if (e->kind == AMP_ENTRY_MSG)
			unknown = check_message(w, &log, i);
		else if (e->kind == AMP_ENTRY_ACK)
			unknown = check_ack(&t, i);
		if (!unknown && (e->kind != AMP_ENTRY_CTL || is_type(e->doc, "heartbeat")))
			check_clock(&t, e, name);
		note_write(&t, e, name);
	}
	amp_task_state_compute(&log, &s);
	check_lock(w, &log, &s);
	if ((timers = derive_timers(&t, &s)))
		json_object_set_new(tasks, task, timers);
	else
		json_object_del(tasks, task);
	amp_task_state_free(&s);
	amp_task_log_free(&log);
}

/*
 * Sender clocks ("amp watch measures deadlines from the later of the
 * timestamp and the commit time it first saw"): for each record added by
 * the commits between `from` (NULL: the beginning) and `to`, the committer
 * time of the commit that added it (the oldest wins), into w->arrivals.
 * Each commit is compared with its first parent,
 * reading only the subtrees that differ.  Best effort: a commit that cannot
 * be read adds nothing, and its records count from their timestamps.
 */
static void walk_arrivals(struct watch *w, const git_oid *from, const git_oid *to)
{
	amp_watch_walk_records(amp_store_repo(w->st), from, to, w->arrivals, 1);
}

/*
 * Strict mode (sign.h): escalates each record of a commit in (from, to]
 * that is not signed by a key allowed to write as its role -- critical
 * permission_denied ("operation exceeds risk_level authorization scope":
 * here, beyond the key's), once per record, so the task is suspended until
 * the admin resumes.  The cause is the record's path (AMP_RECORD_CAUSE).
 * A commit below where trust starts on `to` (sign.h, amp_trust) passes.
 */
static void verify_range(struct watch *w, const git_oid *from, const git_oid *to)
{
	git_repository *repo = amp_store_repo(w->st);
	const amp_signing *signing = amp_store_signing(w->st);
	git_revwalk *walk = NULL;
	amp_trust trust;
	git_oid id;

	if (!signing->require)
		return;
	amp_trust_init(&trust, to);
	if (git_revwalk_new(&walk, repo) < 0 || git_revwalk_push(walk, to) < 0 ||
	    (from && git_revwalk_hide(walk, from) < 0)) {
		amp_error err;

		amp_error_git(&err, AMP_EIO, "cannot walk %s", amp_store_messages_ref(w->st));
		amp_errlist_add(w->errors, AMP_EIO, "", "%s", err.message);
		w->failed = 1;
		goto cleanup;
	}
	while (!w->failed && git_revwalk_next(&id, walk) == 0) {
		git_commit *c = NULL, *parent = NULL;
		git_tree *ct = NULL, *pt = NULL;
		json_t *touched = json_object(), *files, *v, *docs = json_array();
		const char *task, *name;
		amp_signed_record froms[1000];
		char agent[AMP_AGENT_MAX + 1];
		char why[600], dir[AMP_PATH_MAX], path[AMP_PATH_MAX * 2];
		size_t n = 0, k;
		amp_error err;
		int ok;

		amp_store_walk_step();
		if (git_commit_lookup(&c, repo, &id) < 0 || git_commit_tree(&ct, c) < 0 ||
		    (git_commit_parentcount(c) &&
		     (git_commit_parent(&parent, c, 0) < 0 || git_commit_tree(&pt, parent) < 0)) ||
		    amp_store_diff_tasks(repo, pt, ct, touched, -1) < 0) {
			git_error_clear();
			goto next;
		}
		/* The "from" of each record the commit adds. */
		json_object_foreach(touched, task, files) {
			if (!json_is_object(files) || amp_store_task_dir(task, dir, sizeof(dir)) < 0)
				continue;
			json_object_foreach(files, name, v) {
				git_tree_entry *e = NULL;
				git_blob *b = NULL;
				json_t *doc = NULL;

				snprintf(path, sizeof(path), "%s/%s", dir, name);
				amp_error perr;

				/* Fetched bytes: read within the record bounds. */
				if (git_tree_entry_bypath(&e, ct, path) == 0 &&
				    git_blob_lookup(&b, repo, git_tree_entry_id(e)) == 0 &&
				    amp_bounds_parse_record(git_blob_rawcontent(b),
							    (size_t)git_blob_rawsize(b), &doc, &perr) < 0)
					doc = NULL;
				git_error_clear();
				json_array_append_new(docs, json_pack("{s:s,s:s,s:s,s:o?}", "task", task,
								      "path", path, "name", name,
								      "doc", doc));
				git_blob_free(b);
				git_tree_entry_free(e);
			}
		}
		json_array_foreach(docs, k, v)
			if (n < sizeof(froms) / sizeof(froms[0])) {
				const json_t *doc = json_object_get(v, "doc");

				froms[n].from = amp_or_none(amp_json_str(doc, "from"));
				froms[n].task = amp_json_str(v, "task");
				froms[n++].agent = doc ? amp_coord_record_instance(doc) : NULL;
			}
		amp_commit_agent(c, agent, sizeof(agent));
		/* As the hook: more records than can be checked is a refusal,
		 * never a partial check. */
		if (json_array_size(docs) > n) {
			ok = 0;
			snprintf(why, sizeof(why), "it adds more than %zu records: too many to check", n);
		} else {
			ok = amp_signing_check_commit(repo, signing, c, froms, n, agent, why, sizeof(why),
						      &err);
		}
		/* Below where trust starts (sign.h): the admin vouched for it. */
		if (ok == 0)
			ok = amp_trust_vouches(&trust, repo, signing, &id, &err);
		if (ok < 0) {
			amp_errlist_add(w->errors, AMP_EIO, "", "%s", err.message);
			w->failed = 1;
			goto next;
		}
		json_array_foreach(docs, k, v) {
			const json_t *doc = json_object_get(v, "doc");
			const char *vtask = amp_json_str(v, "task"), *vpath = amp_json_str(v, "path");
			const char *msg = amp_json_str(doc, "msg_id"), *ack = amp_json_str(doc, "ack_for");
			json_t *affected;
			char description[1600], gone[64];
			amp_task_log log;

			if (ok)
				break;
			/* affected_msgs name messages of the SSOT: the record's own
			 * msg_id, or the message an ACK acknowledges. */
			if (amp_store_read_task(w->st, w->tree, vtask, &log, &err) < 0)
				continue;
			affected = json_array();
			if (msg && amp_task_log_find(&log, AMP_ENTRY_MSG, msg))
				json_array_append_new(affected, json_string(msg));
			else if (ack && amp_task_log_find(&log, AMP_ENTRY_MSG, ack))
				json_array_append_new(affected, json_string(ack));
			snprintf(gone, sizeof(gone), "%.12s", git_oid_tostr_s(&id));
			snprintf(description, sizeof(description),
				 AMP_RECORD_CAUSE "%s: commit %s is refused in strict mode: %.900s. The task is suspended until the admin resumes it (git config amp.requireSigned).",
				 vpath, gone, why);
			if (!has_cause(&log, "permission_denied", vpath))
				fire(w, vtask, "permission_denied", "critical", affected, NULL, description,
				     vpath);
			json_decref(affected);
			amp_task_log_free(&log);
		}
next:
		json_decref(docs);
		json_decref(touched);
		git_tree_free(ct);
		git_tree_free(pt);
		git_commit_free(parent);
		git_commit_free(c);
	}
cleanup:
	amp_trust_free(&trust);
	git_revwalk_free(walk);
}

/* Reads what changed between the trees of `from` (NULL: nothing) and `to`
 * and applies the rules to it. */
static int process_range(struct watch *w, const git_oid *from, const git_oid *to)
{
	git_repository *repo = amp_store_repo(w->st);
	git_commit *old_c = NULL, *new_c = NULL;
	git_tree *old_t = NULL;
	json_t *touched = json_object(), *files;
	const char *task;
	int status = AMP_OK;

	if (from && (git_commit_lookup(&old_c, repo, from) < 0 ||
		     git_commit_tree(&old_t, old_c) < 0)) {
		/* The last commit we saw is gone (history rewritten): start over. */
		git_error_clear();
		from = NULL;
	}
	if (!from) {
		json_decref(w->state);
		w->state = fresh_state(w);
		w->stats->rescanned = 1;
	}
	if (git_commit_lookup(&new_c, repo, to) < 0 ||
	    git_commit_tree(&w->tree, new_c) < 0 ||
	    amp_store_diff_tasks_whole(repo, w->st, from ? old_t : NULL, w->tree, touched) < 0) {
		amp_error err;

		amp_error_git(&err, AMP_EIO, "cannot read %s", amp_store_messages_ref(w->st));
		status = amp_errlist_add(w->errors, AMP_EIO, "", "%s", err.message);
		goto cleanup;
	}
	/* Without it (out of memory), records count from their timestamps. */
	w->arrivals = amp_record_times_new();
	walk_arrivals(w, from, to);
	/* Tasks that were unreadable are tried again, whole. */
	json_object_foreach(json_object_get(w->state, "broken"), task, files)
		if (!json_object_get(touched, task))
			json_object_set_new(touched, task, json_null());
	json_object_foreach(touched, task, files)
		process_task(w, task, files);
	verify_range(w, from, to);
	if (!w->failed) {
		char hex[GIT_OID_HEXSZ + 1];

		json_object_set_new(w->state, "tip", json_string(git_oid_tostr(hex, sizeof(hex), to)));
	}
cleanup:
	amp_record_times_free(w->arrivals);
	w->arrivals = NULL;
	git_tree_free(w->tree);
	w->tree = NULL;
	git_tree_free(old_t);
	git_commit_free(old_c);
	git_commit_free(new_c);
	json_decref(touched);
	return status;
}

/* ---- rewrites ------------------------------------------------------------- */

/* 1 when an escalation of escalate_rewrite in log already names record
 * `name` lost since `seen_hex`: each lost record is escalated once. */
static int rewrite_known(const amp_task_log *log, const char *seen_hex, const char *name)
{
	char prefix[64];
	size_t i;

	snprintf(prefix, sizeof(prefix), AMP_RECORD_CAUSE "%.12s:", seen_hex);
	for (i = 0; i < log->count; i++) {
		const json_t *p = json_object_get(log->entries[i].doc, "payload");
		const char *d = amp_json_str(p, "description");
		const char *from = amp_json_str(log->entries[i].doc, "from");

		if (log->entries[i].kind == AMP_ENTRY_MSG && is_type(log->entries[i].doc, "escalation") &&
		    from && !strcmp(from, "system") && d &&
		    !strncmp(d, prefix, strlen(prefix)) && strstr(d, name))
			return 1;
	}
	return 0;
}

/*
 * AMP/1.0 "append-only, never rewritten": escalates, in task `task`, the
 * records of it the tip lost since the last intact tip `seen` (`lost`:
 * amp_seen_lost's objects, those of other tasks skipped).  Critical, so
 * the task is suspended until the admin resumes it.  The description names
 * the old and new tips and every record lost; the cause is "<seen
 * commit>:<path>" (a revision git show reads) of the first lost record no
 * such escalation names yet, and there is none when all are named: each
 * rewrite is escalated once, a later one that loses more records again.
 */
static void escalate_rewrite(struct watch *w, git_tree *tip_tree, const char *task,
			     const json_t *lost, const char *seen_hex, const char *tip_hex,
			     const char *seen_ref)
{
	amp_task_log log;
	amp_error err;
	json_t *l, *affected = json_array();
	char cause[600], description[3200], list[1300];
	const char *first = NULL;
	size_t i, len = 0, n = 0;

	if (amp_store_read_task(w->st, tip_tree, task, &log, &err) < 0) {
		task_broken(w, task, &err);
		json_decref(affected);
		return;
	}
	list[0] = '\0';
	json_array_foreach(lost, i, l) {
		const char *path = amp_json_str(l, "path"), *name = strrchr(path, '/') + 1, *id;
		amp_entry_kind kind;
		size_t id_len;
		char buf[300];

		if (strcmp(amp_json_str(l, "task"), task))
			continue;
		n++;
		if (!first && !rewrite_known(&log, seen_hex, name))
			first = path;
		if (len < sizeof(list) - 1)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s (%s)", n > 1 ? ", " : "",
						name, amp_json_str(l, "change"));
		/* A message still there (changed) may be named. */
		if (amp_store_entry_parse(name, NULL, &kind, &id, &id_len) == 0 &&
		    kind == AMP_ENTRY_MSG && id_len < sizeof(buf)) {
			snprintf(buf, sizeof(buf), "%.*s", (int)id_len, id);
			if (amp_task_log_find(&log, AMP_ENTRY_MSG, buf) && json_array_size(affected) < 1000)
				json_array_append_new(affected, json_string(buf));
		}
	}
	if (first) {
		snprintf(cause, sizeof(cause), "%.12s:%s", seen_hex, first);
		snprintf(description, sizeof(description),
			 AMP_RECORD_CAUSE "%.600s: the history of %.300s was rewritten: it moved from %.40s (kept as %.300s) to %.40s, which lost %zu record%s of this task: %.1300s. Read them with git show %.12s:<path>; run amp fsck; the admin resumes the task once the history is restored or the loss accepted (append-only, never rewritten).",
			 cause, amp_store_messages_ref(w->st), seen_hex, seen_ref, tip_hex, n,
			 n == 1 ? "" : "s", list, seen_hex);
		/* affected_msgs[0] would be the cause: the path is. */
		fire(w, task, "unknown", "critical", affected, NULL, description, cause);
	}
	json_decref(affected);
	amp_task_log_free(&log);
}

/*
 * Rewrite detection: compares the records of the last intact tip (the seen
 * ref, seen.h; on the first pass the tip of the saved state) with those of
 * `tip` by identity and content.  When none is lost, *intact is set and
 * the caller moves the seen ref to tip after the pass; else each task that
 * lost records is escalated (escalate_rewrite) and the seen ref stays,
 * keeping the lost records readable.
 */
static int check_rewrite(struct watch *w, const git_oid *tip, git_oid *seen, int *have_seen,
			 int *intact)
{
	git_repository *repo = amp_store_repo(w->st);
	git_commit *sc = NULL, *tc = NULL;
	git_tree *st = NULL, *tt = NULL;
	json_t *lost = json_array(), *l, *tasks = json_object();
	const char *hex = amp_json_str(w->state, "tip"), *task;
	char seen_ref[AMP_PATH_MAX], seen_hex[GIT_OID_HEXSZ + 1], tip_hex[GIT_OID_HEXSZ + 1];
	amp_error err;
	size_t i;
	int status;

	*intact = 0;
	if ((status = amp_seen_read(w->st, seen, &err)) < 0)
		goto fail;
	*have_seen = status;
	status = AMP_OK;
	/* An SSOT watched before the seen ref existed starts from the tip the
	 * last pass saw, when it is still there. */
	if (!*have_seen && hex && git_oid_fromstr(seen, hex) == 0 &&
	    git_commit_lookup(&sc, repo, seen) == 0) {
		if ((status = amp_seen_move(w->st, NULL, seen, &err)) < 0)
			goto fail;
		*have_seen = 1;
	}
	git_error_clear();
	if (!*have_seen || git_oid_equal(seen, tip)) {
		*intact = 1;
		goto cleanup;
	}
	git_commit_free(sc);
	sc = NULL;
	amp_seen_ref(w->st, seen_ref, sizeof(seen_ref));
	if (git_commit_lookup(&sc, repo, seen) < 0 || git_commit_tree(&st, sc) < 0 ||
	    git_commit_lookup(&tc, repo, tip) < 0 || git_commit_tree(&tt, tc) < 0 ||
	    amp_seen_lost(repo, st, tt, lost) < 0) {
		status = amp_error_git(&err, AMP_EIO, "cannot compare %s with %s", seen_ref,
				       amp_store_messages_ref(w->st));
		goto fail;
	}
	if (!json_array_size(lost)) {
		*intact = 1;
		goto cleanup;
	}
	git_oid_tostr(seen_hex, sizeof(seen_hex), seen);
	git_oid_tostr(tip_hex, sizeof(tip_hex), tip);
	json_array_foreach(lost, i, l)
		json_object_set_new(tasks, amp_json_str(l, "task"), json_true());
	json_object_foreach(tasks, task, l)
		escalate_rewrite(w, tt, task, lost, seen_hex, tip_hex, seen_ref);
	goto cleanup;
fail:
	amp_errlist_add(w->errors, status, "", "%s", err.message);
cleanup:
	json_decref(tasks);
	json_decref(lost);
	git_tree_free(st);
	git_tree_free(tt);
	git_commit_free(sc);
	git_commit_free(tc);
	return status;
}

int amp_watch_opts_load(amp_store *st, amp_watch_opts *o, amp_error *err)
{
	const amp_policy *p = amp_store_policy(st);

	memset(o, 0, sizeof(*o));
	o->lock_threshold = p->lock_threshold;
	o->heartbeat_ms = p->heartbeat_ms;
	return amp_clock_now_ms(&o->now_ms, err);
}

int amp_watch_pass(amp_store *st, amp_schema_set **set, const amp_watch_opts *o,
		   amp_watch_report_fn report, void *ctx, amp_watch_stats *stats,
		   amp_errlist *errors)
{
	struct watch w = { st, set, o, report, ctx, stats, errors, NULL, NULL, NULL, 0, 0, 0 };
	char *before = NULL;
	git_oid tip, last, seen, intact_tip;
	int iter, rc, status = AMP_OK, fired, have_seen = 0, intact = 0;

	memset(stats, 0, sizeof(*stats));
	load_state(&w);
	before = json_dumps(w.state, JSON_COMPACT);
	for (iter = 0; iter < 16; iter++) {
		const char *hex = amp_json_str(w.state, "tip");
		int have_last = hex && git_oid_fromstr(&last, hex) == 0;

		rc = git_reference_name_to_id(&tip, amp_store_repo(st), amp_store_messages_ref(st));
		if (rc < 0) {
			amp_error err;

			if (rc == GIT_ENOTFOUND)
				amp_error_set(&err, AMP_EIO, "",
					      "no AMP store in this repository (%s is missing): run 'amp init'",
					      amp_store_messages_ref(st));
			else
				amp_error_git(&err, AMP_EIO, "cannot read %s", amp_store_messages_ref(st));
			status = amp_errlist_add(errors, AMP_EIO, "", "%s", err.message);
			goto cleanup;
		}
		/* Before anything else reads it: what the tip lost since the
		 * last intact one. */
		if (iter == 0) {
			if ((status = check_rewrite(&w, &tip, &seen, &have_seen, &intact)) < 0 ||
			    w.failed)
				goto cleanup;
			git_oid_cpy(&intact_tip, &tip);
			if (!intact)
				continue;
		}
		if (!have_last || !git_oid_equal(&tip, &last) ||
		    (iter == 0 && json_object_size(json_object_get(w.state, "broken")))) {
			if ((status = process_range(&w, have_last ? &last : NULL, &tip)) < 0 || w.failed)
				goto cleanup;
			continue;
		}
		if (iter == 0)
			stats->unchanged = 1;
		fired = 0;
		evaluate_timers(&w, &fired);
		if (!fired || w.failed)
			break;
	}
cleanup:
	if (intact && !w.failed && status == AMP_OK &&
	    (!have_seen || !git_oid_equal(&seen, &intact_tip))) {
		amp_error err;

		if ((status = amp_seen_move(st, have_seen ? &seen : NULL, &intact_tip, &err)) < 0)
			amp_errlist_add(errors, status, "", "%s", err.message);
	}
	/* A pass that could not write an escalation keeps the old state, so
	 * the next one tries again. */
	if (!w.failed && status == AMP_OK) {
		char *after = json_dumps(w.state, JSON_COMPACT);

		if (!before || !after || strcmp(before, after))
			save_state(&w);
		free(after);
	}
	free(before);
	json_decref(w.state);
	if ((w.failed || w.broken) && status == AMP_OK)
		status = AMP_EIO;
	return status;
}

int amp_watch_diff_records(git_repository *repo, git_tree *a, git_tree *b, json_t *touched)
{
	return amp_store_diff_tasks(repo, a, b, touched, -1);
}

/* Puts the records commit c adds to its first parent into `times`, with
 * time `ms` (by_time: its committer time).  A commit whose trees cannot be
 * read adds nothing: its records count from their timestamps. */
static void walk_one(git_repository *repo, git_commit *c, amp_record_times *times, int64_t ms,
		     int by_time)
{
	git_commit *parent = NULL;
	git_tree *tree = NULL, *ptree = NULL;

	if (git_commit_tree(&tree, c) == 0 &&
	    (!git_commit_parentcount(c) ||
	     (git_commit_parent(&parent, c, 0) == 0 && git_commit_tree(&ptree, parent) == 0)))
		amp_store_diff_times(repo, ptree, tree, times,
				     by_time ? (int64_t)git_commit_time(c) * 1000 : ms);
	git_error_clear();
	git_tree_free(ptree);
	git_tree_free(tree);
	git_commit_free(parent);
}

int amp_watch_walk_records(git_repository *repo, const git_oid *from, const git_oid *to,
			   amp_record_times *times, int by_time)
{
	amp_first_parents chain;
	git_revwalk *walk = NULL;
	git_commit *c = NULL;
	int64_t index = 0;
	git_oid id;
	int rc = -1;

	if (!times)
		return -1;
	/*
	 * The whole history, as amp writes it (one parent each): down the
	 * first parents (amp_first_parents).  A merge (made by hand) leaves
	 * it all to the revwalk, which also reaches the other parents; what
	 * the chain put in is what the revwalk puts (the least wins, and above
	 * the first merge both visit the commits in the same order).  `to`
	 * unreadable: the walk cannot start, as the revwalk's push fails; an
	 * older commit ends it, as it ends the revwalk.
	 */
	if (!from) {
		amp_first_parents_start(&chain, repo, to);
		while ((rc = amp_first_parents_next(&chain, &c)) == 0 && git_commit_parentcount(c) < 2) {
			walk_one(repo, c, times, AMP_WATCH_WALK_LAST - index++, by_time);
			git_commit_free(c);
		}
		git_error_clear();
		if (rc < 0)
			return rc == GIT_ITEROVER || index ? 0 : -1;
		git_commit_free(c);
		c = NULL;
		index = 0;
		rc = -1;
	}
	/* Newest first, each commit's parent next: libgit2's object cache
	 * then reads each tree once. */
	if (git_revwalk_new(&walk, repo) < 0 || git_revwalk_push(walk, to) < 0 ||
	    (from && git_revwalk_hide(walk, from) < 0))
		goto cleanup;
	while (git_revwalk_next(&id, walk) == 0) {
		amp_store_walk_step();
		if (git_commit_lookup(&c, repo, &id) == 0)
			walk_one(repo, c, times, AMP_WATCH_WALK_LAST - index, by_time);
		index++;
		git_commit_free(c);
		c = NULL;
	}
	rc = 0;
cleanup:
	git_error_clear();
	git_revwalk_free(walk);
	return rc;
}
