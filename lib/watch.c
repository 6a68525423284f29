#include "watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bounds.h"
#include "clock.h"
#include "message.h"
#include "rules.h"
#include "send.h"
#include "task.h"
#include "util.h"

#define STATE_VERSION 1

struct watch {
	amp_store *st;
	amp_schema_set **set;
	const amp_watch_opts *o;
	amp_watch_report_fn report;
	void *ctx;
	amp_watch_stats *stats;
	amp_errlist *errors;
	json_t *state;  /* see load_state */
	git_tree *tree; /* the tree being processed */
	int failed;     /* an escalation could not be written: keep no state */
	int broken;     /* tasks found unreadable for the first time */
};

/* ---- reading ------------------------------------------------------------ */

static void entry_name(const amp_entry *e, char *buf, size_t bufsz)
{
	amp_store_entry_name(e->seq, e->kind, e->id, buf, bufsz);
}

/* 1 when the task already holds a system escalation of `type` for `cause`. */
static int has_cause(const amp_task_log *log, const char *type, const char *cause)
{
	return amp_task_has_escalation(log, type, "system", cause);
}

/* 1 when `id` is a msg_id, so it may stand in affected_msgs. */
static int is_msg_id(const char *id)
{
	return id && amp_msg_id_parse(id, NULL, NULL, NULL) == 0;
}

/* ---- escalating ---------------------------------------------------------- */

static int need_schemas(struct watch *w)
{
	amp_error err;

	if (*w->set)
		return AMP_OK;
	if (amp_schema_set_load_amp(w->set, NULL, &err) < 0)
		return amp_errlist_add(w->errors, AMP_EIO, err.path, "%s", err.message);
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
 * amp_escalation_cause).  Returns AMP_OK when the escalation is in the SSOT
 * (written now or before), else the failure, recorded in w->errors.
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

/* ---- message rules -------------------------------------------------------- */

/*
 * AMP/1.0 No Silent Failure: record `name` of the task cannot be used.  Its
 * cause is the record's path, named first in the description
 * (AMP_RECORD_CAUSE), so that a record with no msg_id, or one whose msg_id
 * another record names too (a message and its ACK), is escalated exactly
 * once.  `id` goes to affected_msgs when it names a message of the task.
 */
static void escalate_unknown(struct watch *w, const amp_task_log *log, const char *id,
			     const char *name, const char *what)
{
	json_t *affected;
	char description[1700], dir[128], path[512];

	amp_store_task_dir(log->task_id, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%.300s", dir, name);
	if (has_cause(log, "unknown", path))
		return;
	/* affected_msgs names messages in the SSOT: an ACK whose message is
	 * not there (an orphan) affects none; its path is the cause. */
	affected = is_msg_id(id) && amp_task_log_id_taken(log, id) ?
		   json_pack("[s]", id) : json_array();
	snprintf(description, sizeof(description),
		 AMP_RECORD_CAUSE "%s: %.900s. Fix or supersede the record; agents must not act on it (No Silent Failure).",
		 path, what);
	fire(w, log->task_id, "unknown", "warning", affected, NULL, description, path);
	json_decref(affected);
}

static void check_lock(struct watch *w, const amp_task_log *log, size_t i)
{
	const amp_entry *e = &log->entries[i];
	amp_task_log upto = *log;
	amp_task_state s;
	json_t *affected, *suggested;
	const char *dispatch;
	char description[1024];

	upto.count = i + 1;
	amp_task_state_compute(&upto, &s);
	/* Exactly at the threshold: the verdict that reaches it is the cause;
	 * later ones cannot be sent while the lock holds. */
	if (s.locked || s.rejects_since_resume != w->o->lock_threshold)
		return;
	dispatch = s.last_dispatch ? amp_json_str(s.last_dispatch, "msg_id") : NULL;
	affected = dispatch ? json_pack("[s,s]", e->id, dispatch) : json_pack("[s]", e->id);
	suggested = json_pack("[s,s,s]",
			      "Admin directly reviews the diff and gives specific code modification guidance",
			      "Split the task into smaller subtasks and re-issue them",
			      "Roll back to checkpoint and terminate the current task branch");
	snprintf(description, sizeof(description),
		 "%s Hallucination Lock has been triggered: %d rejected verdicts %s (amp.lockThreshold %d), the last %s. The task is locked: only the admin may act until 'amp resume'.",
		 log->task_id, s.rejects_since_resume,
		 s.reject_count > s.rejects_since_resume ? "since the last resume" : "in a row",
		 w->o->lock_threshold, e->id);
	fire(w, log->task_id, "hallucination_lock", "critical", affected, suggested,
	     description, NULL);
	json_decref(affected);
	json_decref(suggested);
}

static void check_confidence(struct watch *w, const amp_task_log *log, const amp_entry *e)
{
	json_t *c = json_object_get(json_object_get(e->doc, "payload"), "confidence");
	json_t *affected;
	char description[1024];

	if (!json_is_number(c) || json_number_value(c) >= AMP_WATCH_CONFIDENCE_MIN)
		return;
	affected = json_pack("[s]", e->id);
	snprintf(description, sizeof(description),
		 "Review verdict %s (%s) has confidence %.2f < %.1f: the admin should see it before the coordinator forwards it to the executor (Confidence Threshold).",
		 e->id, amp_json_str(json_object_get(e->doc, "payload"), "decision"),
		 json_number_value(c), AMP_WATCH_CONFIDENCE_MIN);
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

/* The rules `amp ack` applies, for an ACK that reached the SSOT without
 * it: it acknowledges a message of its task that is in the SSOT, and only
 * the addressee ACKs.  1 with the reason in `what` when it breaks one. */
static int ack_problem(const amp_task_log *log, const amp_entry *e, char *what,
		       size_t whatsz)
{
	const amp_entry *m = amp_task_log_find(log, AMP_ENTRY_MSG, e->id);
	const char *from = amp_json_str(e->doc, "from");
	const char *to = m ? amp_json_str(m->doc, "to") : NULL;

	if (!amp_task_entry_in_place(log, e))
		snprintf(what, whatsz, "its ack_for/task_id do not match its place");
	else if (!m)
		snprintf(what, whatsz, "it acknowledges %.60s, which is not in the SSOT", e->id);
	else if (!from || !to || strcmp(from, to))
		snprintf(what, whatsz, "it is an ACK by %.20s, but only the addressee (%.20s) may ACK",
			 from ? from : "nobody", to ? to : "nobody");
	else
		return 0;
	return 1;
}

/* The rules for message i of a task, new since the last pass. */
static void check_message(struct watch *w, const amp_task_log *log, size_t i)
{
	const amp_entry *e = &log->entries[i];
	const char *type = amp_json_str(e->doc, "type");
	const char *id = amp_json_str(e->doc, "msg_id");
	const char *task = amp_json_str(e->doc, "task_id");
	amp_task_log before = *log;
	amp_errlist errs = { 0 };
	char name[300], what[1200];
	int status;

	entry_name(e, name, sizeof(name));
	/* First: a record out of its place (its name is no msg_id, say) has no
	 * msg_id any other escalation could name. */
	if (!is_msg_id(e->id)) {
		snprintf(what, sizeof(what), "its name holds no msg_id");
		escalate_unknown(w, log, e->id, name, what);
		return;
	}
	if (!id || strcmp(id, e->id) || !task || strcmp(task, log->task_id)) {
		snprintf(what, sizeof(what), "its msg_id/task_id (%s, %s) do not match its place",
			 id ? id : "none", task ? task : "none");
		escalate_unknown(w, log, e->id, name, what);
		return;
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
		return;
	}
	if (need_schemas(w) < 0)
		return;
	before.count = i;
	status = amp_message_validate(*w->set, e->doc, 0, &errs);
	if (status == AMP_OK)
		status = amp_rules_check_send(w->st, w->tree, &before, e->doc, &errs);
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
			escalate_unknown(w, log, e->id, name, what);
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
	if (status == AMP_OK && type && !strcmp(type, "review_verdict")) {
		const char *d = amp_json_str(json_object_get(e->doc, "payload"), "decision");

		if (d && !strcmp(d, "rejected") && !has_cause(log, "hallucination_lock", e->id))
			check_lock(w, log, i);
		if (!has_cause(log, "conflict", e->id))
			check_confidence(w, log, e);
	}
	amp_errlist_free(&errs);
}

/* ---- timers ---------------------------------------------------------------- */

/* The timers of a task from its whole log: ACKs awaited and the open
 * dispatch; NULL when it has none (or is suspended: Critical = Suspend
 * All stops the clocks too, and a resume restarts them). */
static json_t *derive_timers(const amp_task_log *log)
{
	amp_task_state s;
	json_t *acks = json_array(), *out = NULL;
	int64_t resume_ms = -1;
	size_t i;

	amp_task_state_compute(log, &s);
	if (s.suspended)
		goto done;
	for (i = 0; i < log->count; i++) {
		const char *t = amp_json_str(log->entries[i].doc, "type");

		if (log->entries[i].kind == AMP_ENTRY_CTL && t && !strcmp(t, "resume"))
			resume_ms = amp_record_time(log->entries[i].doc);
	}
	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		int64_t deadline, sent;

		/* A message out of its place is escalated as unknown; no
		 * ACK timeout could name it. */
		if (e->kind != AMP_ENTRY_MSG || !amp_task_entry_in_place(log, e) ||
		    (deadline = amp_message_ack_deadline(e->doc)) < 0 ||
		    amp_task_ack_of(log, e->id) || has_cause(log, "ack_timeout", e->id))
			continue;
		sent = amp_record_time(e->doc);
		if (resume_ms > sent)
			deadline = resume_ms + (deadline - sent);
		json_array_append_new(acks, json_pack("{s:s,s:I,s:s?,s:s?}", "msg", e->id,
						      "deadline", (json_int_t)deadline,
						      "from", amp_json_str(e->doc, "from"),
						      "to", amp_json_str(e->doc, "to")));
	}
	out = json_object();
	if (json_array_size(acks))
		json_object_set(out, "acks", acks);
	/* Heartbeat: the assignee of a dispatch holds the task until it
	 * reports (task_result). */
	if (s.last_dispatch && (!strcmp(s.flow_state, "dispatched") ||
				!strcmp(s.flow_state, "in_progress"))) {
		int64_t since = amp_record_time(s.last_dispatch);
		json_t *fired = json_array();

		if (resume_ms > since)
			since = resume_ms;
		for (i = 0; i < log->count; i++) {
			const json_t *p = json_object_get(log->entries[i].doc, "payload");
			const char *k = amp_json_str(p, "escalation_type");

			if (k && !strcmp(k, "heartbeat_timeout") &&
			    json_string_value(json_array_get(json_object_get(p, "affected_msgs"), 0)))
				json_array_append(fired, json_array_get(json_object_get(p, "affected_msgs"), 0));
		}
		json_object_set_new(out, "open", json_pack("{s:s?,s:I,s:s?,s:o}",
			"agent", amp_json_str(s.last_dispatch, "to"), "since", (json_int_t)since,
			"dispatch", amp_json_str(s.last_dispatch, "msg_id"), "fired", fired));
	}
	if (!json_object_size(out)) {
		json_decref(out);
		out = NULL;
	}
done:
	json_decref(acks);
	return out;
}

/* Remembers the newest SSOT write of each role (for heartbeats). */
static void note_writes(struct watch *w, const amp_task_log *log)
{
	json_t *lw = json_object_get(w->state, "last_write");
	size_t i;

	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *from = amp_json_str(e->doc, "from");
		int64_t t = amp_record_time(e->doc);
		json_t *cur;

		if (e->kind == AMP_ENTRY_CTL || !from || t < 0)
			continue;
		cur = json_object_get(lw, from);
		if (cur && json_integer_value(json_object_get(cur, "ms")) >= t)
			continue;
		/* An ACK stands for the message it acknowledges. */
		json_object_set_new(lw, from, json_pack("{s:I,s:s}", "ms", (json_int_t)t,
							"msg", e->id));
	}
}

static void evaluate_timers(struct watch *w, int *fired)
{
	json_t *tasks = json_object_get(w->state, "tasks"), *t;
	json_t *lw = json_object_get(w->state, "last_write");
	const char *task;
	int64_t now = w->o->now_ms;
	char when[AMP_TIME_BUFSZ], at[AMP_TIME_BUFSZ], description[1024];

	json_object_foreach(tasks, task, t) {
		json_t *acks = json_object_get(t, "acks"), *open = json_object_get(t, "open");
		json_t *kept = json_array(), *a;
		size_t i;

		json_array_foreach(acks, i, a) {
			int64_t deadline = json_integer_value(json_object_get(a, "deadline"));
			const char *msg = amp_json_str(a, "msg");
			json_t *affected;
			char type[64];

			if (now <= deadline) {
				json_array_append(kept, a);
				continue;
			}
			snprintf(type, sizeof(type), "%.*s", (int)(strcspn(msg, "-")), msg);
			snprintf(description, sizeof(description),
				 "%s from %s to %s required an ACK by %s; none was in the SSOT at %s (%lld s late). The Coordinator reports it automatically (AMP/1.0 requires_ack).",
				 msg, amp_json_str(a, "from") ? amp_json_str(a, "from") : "?",
				 amp_json_str(a, "to") ? amp_json_str(a, "to") : "?",
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
		if (open) {
			const char *agent = amp_json_str(open, "agent");
			const char *dispatch = amp_json_str(open, "dispatch");
			int64_t base = json_integer_value(json_object_get(open, "since"));
			json_t *last = json_object_get(lw, agent ? agent : "");
			json_t *fired_list = json_object_get(open, "fired"), *f, *affected;
			const char *cause = dispatch;
			int seen = 0;

			if (!agent || !dispatch)
				continue;
			if (last && json_integer_value(json_object_get(last, "ms")) >= base) {
				base = json_integer_value(json_object_get(last, "ms"));
				cause = amp_json_str(last, "msg");
			}
			json_array_foreach(fired_list, i, f)
				seen |= !strcmp(json_string_value(f) ? json_string_value(f) : "", cause);
			if (seen || now <= base + w->o->heartbeat_ms)
				continue;
			snprintf(description, sizeof(description),
				 "The %s holds %s (dispatch %s) and has written nothing to the SSOT since %s (%lld min; amp.heartbeatTimeout %lld s).",
				 agent, task, dispatch, amp_time_format(base, when),
				 (long long)((now - base) / 60000),
				 (long long)(w->o->heartbeat_ms / 1000));
			affected = strcmp(cause, dispatch) ? json_pack("[s,s]", cause, dispatch)
							   : json_pack("[s]", cause);
			if (fire(w, task, "heartbeat_timeout", "warning", affected, NULL, description, NULL) == AMP_OK) {
				json_array_append_new(fired_list, json_string(cause));
				*fired = 1;
			}
			json_decref(affected);
		}
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

static json_t *fresh_state(struct watch *w)
{
	return json_pack("{s:i,s:s,s:i,s:n,s:{},s:{},s:{}}", "version", STATE_VERSION,
			 "ref", amp_store_messages_ref(w->st), "lock_threshold",
			 w->o->lock_threshold, "tip", "last_write", "tasks", "broken");
}

/*
 * The saved state:
 *   {"version":1, "ref":..., "lock_threshold":3, "tip":"<commit>"|null,
 *    "last_write":{"<role>":{"ms":..,"msg":..}},
 *    "tasks":{"<task_id>":{"acks":[{"msg","deadline","from","to"}],
 *                          "open":{"agent","since","dispatch","fired":[..]}}},
 *    "broken":{"<task_id>":"<why its directory cannot be read>"}}
 * Anything else (missing, unreadable, other version, ref or threshold)
 * means a fresh state, hence a full rescan.
 */
static void load_state(struct watch *w)
{
	char path[4200];
	json_t *s;
	const char *ref;

	state_path(w->st, path, sizeof(path));
	s = w->o->full ? NULL : json_load_file(path, 0, NULL);
	ref = amp_json_str(s, "ref");
	if (!json_is_object(s) ||
	    json_integer_value(json_object_get(s, "version")) != STATE_VERSION ||
	    !ref || strcmp(ref, amp_store_messages_ref(w->st)) ||
	    json_integer_value(json_object_get(s, "lock_threshold")) != w->o->lock_threshold ||
	    !json_is_object(json_object_get(s, "tasks")) ||
	    !json_is_object(json_object_get(s, "last_write"))) {
		json_decref(s);
		s = fresh_state(w);
	}
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

/* 1 when record `name` is new since the last pass; `new_files` NULL (a
 * task read again after it was unreadable) means every record is. */
static int is_new(const json_t *new_files, const char *name)
{
	return !json_is_object(new_files) || json_object_get(new_files, name);
}

static void process_task(struct watch *w, const char *task, const json_t *new_files)
{
	json_t *tasks = json_object_get(w->state, "tasks"), *timers;
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
	note_writes(w, &log);
	/* AMP/1.0 No Silent Failure: a record nobody can read is reported. */
	for (i = 0; i < log.nbad; i++)
		if (is_new(new_files, log.bad[i].name))
			escalate_unknown(w, &log, log.bad[i].id, log.bad[i].name,
					 log.bad[i].reason);
	for (i = 0; i < log.count; i++) {
		const amp_entry *e = &log.entries[i];

		entry_name(e, name, sizeof(name));
		if (!is_new(new_files, name))
			continue;
		if (e->kind == AMP_ENTRY_MSG) {
			check_message(w, &log, i);
		} else if (e->kind == AMP_ENTRY_ACK && need_schemas(w) == AMP_OK) {
			amp_errlist errs = { 0 };
			char what[1200];

			if (amp_message_validate(*w->set, e->doc, 1, &errs) == AMP_ESCHEMA) {
				snprintf(what, sizeof(what), "ACK not schema-valid: %.200s: %.600s",
					 errs.items[0].path, errs.items[0].message);
				escalate_unknown(w, &log, e->id, name, what);
			} else if (ack_problem(&log, e, what, sizeof(what))) {
				escalate_unknown(w, &log, e->id, name, what);
			}
			amp_errlist_free(&errs);
		}
	}
	if ((timers = derive_timers(&log)))
		json_object_set_new(tasks, task, timers);
	else
		json_object_del(tasks, task);
	amp_task_log_free(&log);
}

/*
 * Adds to `touched` ({task: {file name: true}}) every record that differs
 * between trees a (NULL: empty) and b, `prefix` being their path.  Subtrees
 * with the same id are skipped, so the cost follows the change, not the
 * size of the SSOT (libgit2's tree diff reads more than that).
 */
static int diff_trees(git_repository *repo, git_tree *a, git_tree *b,
		      const char *prefix, int depth, json_t *touched)
{
	size_t i, n = git_tree_entrycount(b);
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		const git_tree_entry *be = git_tree_entry_byindex(b, i);
		const git_tree_entry *ae = a ? git_tree_entry_byname(a, git_tree_entry_name(be)) : NULL;
		const char *name = git_tree_entry_name(be);
		char path[512];

		if (ae && git_oid_equal(git_tree_entry_id(ae), git_tree_entry_id(be)))
			continue;
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "/" : "", name);
		if (depth == 4) {
			/* tasks/<year>/<shard>/<task>/<record> */
			const char *task = strrchr(prefix, '/') + 1;
			json_t *files = json_object_get(touched, task);

			if (!files)
				json_object_set_new(touched, task, files = json_object());
			json_object_set_new(files, name, json_true());
			continue;
		}
		if (git_tree_entry_type(be) != GIT_OBJECT_TREE ||
		    (depth == 0 && strcmp(name, "tasks")))
			continue;
		{
			git_tree *sa = NULL, *sb = NULL;

			if (git_tree_lookup(&sb, repo, git_tree_entry_id(be)) < 0 ||
			    (ae && git_tree_entry_type(ae) == GIT_OBJECT_TREE &&
			     git_tree_lookup(&sa, repo, git_tree_entry_id(ae)) < 0)) {
				/* A task directory that cannot be read: the task is
				 * read whole, or found broken (task_broken), alone. */
				git_error_clear();
				if (depth == 3)
					json_object_set_new(touched, name, json_null());
				else
					rc = -1;
			} else
				rc = diff_trees(repo, sa, sb, path, depth + 1, touched);
			git_tree_free(sa);
			git_tree_free(sb);
		}
	}
	/* A task whose records vanished (history rewritten) is re-read too. */
	if (a && depth == 3 && rc == 0) {
		n = git_tree_entrycount(a);
		for (i = 0; i < n; i++) {
			const char *name = git_tree_entry_name(git_tree_entry_byindex(a, i));

			if (!git_tree_entry_byname(b, name) && !json_object_get(touched, name))
				json_object_set_new(touched, name, json_object());
		}
	}
	return rc;
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
	    diff_trees(repo, from ? old_t : NULL, w->tree, "", 0, touched) < 0) {
		amp_error err;

		amp_error_git(&err, AMP_EIO, "cannot read %s", amp_store_messages_ref(w->st));
		status = amp_errlist_add(w->errors, AMP_EIO, "", "%s", err.message);
		goto cleanup;
	}
	/* Tasks that were unreadable are tried again, whole. */
	json_object_foreach(json_object_get(w->state, "broken"), task, files)
		if (!json_object_get(touched, task))
			json_object_set_new(touched, task, json_null());
	json_object_foreach(touched, task, files)
		process_task(w, task, files);
	if (!w->failed) {
		char hex[GIT_OID_HEXSZ + 1];

		json_object_set_new(w->state, "tip", json_string(git_oid_tostr(hex, sizeof(hex), to)));
	}
cleanup:
	git_tree_free(w->tree);
	w->tree = NULL;
	git_tree_free(old_t);
	git_commit_free(old_c);
	git_commit_free(new_c);
	json_decref(touched);
	return status;
}

int amp_watch_opts_load(amp_store *st, amp_watch_opts *o, amp_error *err)
{
	char buf[64];
	long long v;
	int status;

	memset(o, 0, sizeof(*o));
	o->lock_threshold = AMP_WATCH_LOCK_THRESHOLD;
	o->heartbeat_ms = (int64_t)AMP_WATCH_HEARTBEAT_SEC * 1000;
	if (amp_store_config(st, "amp.lockThreshold", buf, sizeof(buf))) {
		if ((status = amp_parse_int("git config amp.lockThreshold", buf, 1,
					    AMP_WATCH_LOCK_THRESHOLD_MAX, &v, err)) < 0)
			return status;
		o->lock_threshold = (int)v;
	}
	if (amp_store_config(st, "amp.heartbeatTimeout", buf, sizeof(buf))) {
		if ((status = amp_parse_int("git config amp.heartbeatTimeout", buf, 1,
					    AMP_WATCH_HEARTBEAT_SEC_MAX, &v, err)) < 0)
			return status;
		o->heartbeat_ms = (int64_t)v * 1000;
	}
	if ((status = amp_clock_now_ms(&o->now_ms, err)) < 0)
		return status;
	return AMP_OK;
}

int amp_watch_pass(amp_store *st, amp_schema_set **set, const amp_watch_opts *o,
		   amp_watch_report_fn report, void *ctx, amp_watch_stats *stats,
		   amp_errlist *errors)
{
	struct watch w = { st, set, o, report, ctx, stats, errors, NULL, NULL, 0, 0 };
	char *before = NULL;
	git_oid tip, last;
	int iter, rc, status = AMP_OK, fired;

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
