/*
 * coord_write.c - writing claims, releases, dependencies and plans
 * (coord_write.h), on the protocol's replay of them (protocol/coord.c).
 */
#include "coord_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/util.h"
#include "record/record.h"
#include "record_writer.h"

enum coord_op { OP_CLAIM, OP_RELEASE, OP_EXPIRE, OP_DEPEND, OP_PLAN, OP_DEADLINE, OP_PROGRESS,
		OP_QUESTION, OP_ANSWER, OP_ANSWER_ACK };

struct coord_ctx {
	enum coord_op op;
	amp_schema_set *set;
	const char *task_id;
	const char *subtask;
	const char *from;
	const char *agent;
	const char *reason;  /* release: its reason; progress: the note;
			      * question, answer: the text */
	long long ttl_sec;   /* claim: the lease; progress: the percent;
			      * question: seconds to answer; answer:
			      * seconds to acknowledge it (0: none) */
	int64_t now_ms;
	amp_coord_result *res;
	amp_errlist *errors;
	size_t errors_base;
	json_t *doc; /* the record of the last attempt */
	const char *on; /* depend: the task waited for; answer: the question;
			 * answer_ack: the answer */
	int soft;
	const amp_plan *plan; /* plan: the fields to write (-1, 0, NULL: none) */
};

/* Records a refusal in the caller's list and for the store. */
static int refuse(struct coord_ctx *c, amp_error *err, int status, const char *path,
		  const char *why)
{
	amp_errlist_add(c->errors, status, path, "%s", why);
	return amp_error_set(err, status, path, "%s", why);
}

/* The next free control name "<type>-<ms>" of the task. */
static void control_name(const amp_task_log *log, const char *type, int64_t ms,
			 char *buf, size_t bufsz)
{
	do
		snprintf(buf, bufsz, "%s-%lld", type, (long long)ms++);
	while (amp_task_log_find(log, AMP_ENTRY_CTL, buf));
}

/* Builds c->doc, checks it against the schema and adds it to w. */
static int add_doc(struct coord_ctx *c, const amp_task_log *log, const char *type,
		   json_t *extra, amp_store_write *w, amp_error *err)
{
	char when[AMP_TIME_BUFSZ];
	const char *k;
	json_t *v;
	int status;

	json_decref(c->doc);
	c->doc = json_pack("{s:s,s:s,s:s,s:s,s:s}", "protocol_version", AMP_PROTOCOL,
			   "type", type, "task_id", c->task_id, "from", c->from,
			   "timestamp", amp_time_format(c->now_ms, when));
	if (!c->doc)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	json_object_foreach(extra, k, v)
		json_object_set(c->doc, k, v);
	if ((status = amp_control_validate(c->set, c->doc, c->errors)) < 0) {
		const amp_error *first = &c->errors->items[c->errors_base];

		return amp_error_set(err, status, first->path, "%s", first->message);
	}
	return amp_write_add_record(w, log, AMP_ENTRY_CTL, c->res->name, c->doc, err);
}

static int build_claim(struct coord_ctx *c, const amp_task_log *log, const amp_task_state *s,
		       amp_store_write *w, amp_error *err)
{
	amp_leases ls;
	const amp_lease *l;
	const amp_subtask *sub = NULL;
	char why[600];
	json_t *extra;
	int status;

	if (!s->last_dispatch)
		return refuse(c, err, AMP_ERULE, "/task_id",
			      "nothing to claim: the task has no task_dispatch");
	if (c->subtask && !(sub = amp_task_subtask(s, c->subtask))) {
		snprintf(why, sizeof(why), "task %s has no subtask %s", c->task_id, c->subtask);
		return refuse(c, err, AMP_ERULE, "/subtask_id", why);
	}
	if (sub ? !strcmp(sub->state, "approved") : !strcmp(s->state, "approved")) {
		snprintf(why, sizeof(why), "%s%s of %s is approved: nothing left to claim",
			 sub ? "subtask " : "the task", sub ? sub->id : "", c->task_id);
		return refuse(c, err, AMP_ERULE, "/task_id", why);
	}
	amp_coord_leases(log, &ls);
	if ((l = amp_coord_conflict(&ls, c->subtask, c->agent, c->now_ms))) {
		char until[AMP_TIME_BUFSZ];

		snprintf(c->res->holder, sizeof(c->res->holder), "%s", l->agent);
		c->res->expires_ms = amp_lease_expires(l);
		snprintf(why, sizeof(why), "%s%s%s%s is claimed by %s until %s",
			 l->subtask[0] ? "subtask " : "", l->subtask, l->subtask[0] ? " of " : "task ",
			 c->task_id, l->agent, amp_time_format(c->res->expires_ms, until));
		return refuse(c, err, AMP_ECLAIMED, "/task_id", why);
	}
	for (size_t i = 0; i < ls.n; i++)
		c->res->renewed |= amp_lease_in_force(&ls.v[i], c->now_ms) && !strcmp(ls.v[i].agent, c->agent) &&
				   !strcmp(ls.v[i].subtask, c->subtask ? c->subtask : "");
	control_name(log, "claim", c->now_ms, c->res->name, sizeof(c->res->name));
	extra = json_pack("{s:s,s:I,s:s*}", "agent", c->agent, "ttl_sec", (json_int_t)c->ttl_sec,
			  "subtask_id", c->subtask);
	status = extra ? add_doc(c, log, "claim", extra, w, err)
		       : amp_error_set(err, AMP_EIO, "", "out of memory");
	json_decref(extra);
	c->res->expires_ms = c->now_ms + (int64_t)c->ttl_sec * 1000;
	return status;
}

/* The lease a release by c takes: the caller's own, else (admin,
 * coordinator) the only one in force, of c->subtask when given. */
static const amp_lease *release_target(struct coord_ctx *c, const amp_leases *ls)
{
	const amp_lease *found = NULL;
	size_t i, n = 0;

	for (i = 0; i < ls->n; i++) {
		const amp_lease *l = &ls->v[i];

		if (l->released || (c->subtask && strcmp(l->subtask, c->subtask)) ||
		    (!strcmp(c->from, "executor") && (!c->agent || strcmp(l->agent, c->agent))))
			continue;
		/* The holder's own lease counts even when it has expired. */
		if (!amp_lease_in_force(l, c->now_ms) && strcmp(c->from, "executor"))
			continue;
		found = l;
		n++;
	}
	return n == 1 ? found : NULL;
}

static int build_release(struct coord_ctx *c, const amp_task_log *log, amp_store_write *w,
			 amp_error *err)
{
	amp_leases ls;
	const amp_lease *l;
	char why[600];
	json_t *extra;
	int status;

	amp_coord_leases(log, &ls);
	if (!(l = release_target(c, &ls))) {
		snprintf(why, sizeof(why), "%s holds no single lease of task %s%s%s to release",
			 !strcmp(c->from, "executor") ? (c->agent ? c->agent : "an unnamed executor") :
			 "nobody", c->task_id, c->subtask ? " subtask " : "", c->subtask ? c->subtask : "");
		return refuse(c, err, AMP_ERULE, "/task_id", why);
	}
	snprintf(c->res->claim, sizeof(c->res->claim), "%s", l->claim);
	snprintf(c->res->agent, sizeof(c->res->agent), "%s", l->agent);
	control_name(log, "release", c->now_ms, c->res->name, sizeof(c->res->name));
	extra = json_pack("{s:s,s:s,s:s*,s:s*}", "agent", l->agent, "releases", l->claim,
			  "subtask_id", l->subtask[0] ? l->subtask : NULL, "reason", c->reason);
	status = extra ? add_doc(c, log, "release", extra, w, err)
		       : amp_error_set(err, AMP_EIO, "", "out of memory");
	json_decref(extra);
	return status;
}

/* amp watch: the first expired lease of the task, released by system with
 * its escalation in the same commit; AMP_NOOP when none is left. */
static int build_expire(struct coord_ctx *c, const amp_task_log *log, const amp_task_state *s,
			amp_store_write *w, amp_error *err)
{
	amp_leases ls;
	const amp_lease *l = NULL;
	amp_task_log after;
	amp_send_result sres = { 0 };
	char path[AMP_PATH_MAX], description[1400], until[AMP_TIME_BUFSZ];
	char entry[320], cause[600];
	const char *dispatch = amp_json_str(s->last_dispatch, "msg_id");
	json_t *extra, *affected;
	size_t i;
	int status;

	amp_coord_leases(log, &ls);
	for (i = 0; i < ls.n && !l; i++)
		if (!ls.v[i].released && c->now_ms > amp_lease_expires(&ls.v[i]))
			l = &ls.v[i];
	if (!l)
		return AMP_NOOP;
	snprintf(c->res->claim, sizeof(c->res->claim), "%s", l->claim);
	snprintf(c->res->agent, sizeof(c->res->agent), "%s", l->agent);
	control_name(log, "release", c->now_ms, c->res->name, sizeof(c->res->name));
	snprintf(description, sizeof(description), "the lease of %s ran out at %s",
		 l->agent, amp_time_format(amp_lease_expires(l), until));
	extra = json_pack("{s:s,s:s,s:s*,s:s}", "agent", l->agent, "releases", l->claim,
			  "subtask_id", l->subtask[0] ? l->subtask : NULL, "reason", description);
	status = extra ? add_doc(c, log, "release", extra, w, err)
		       : amp_error_set(err, AMP_EIO, "", "out of memory");
	json_decref(extra);
	if (status < 0)
		return status;
	/* The escalation's cause is the claim record (it has no msg_id). */
	for (i = 0; i < log->count; i++)
		if (log->entries[i].kind == AMP_ENTRY_CTL && !strcmp(log->entries[i].id, l->claim))
			break;
	if (i == log->count || !dispatch ||
	    amp_store_entry_name(log->entries[i].seq, AMP_ENTRY_CTL, l->claim, entry,
				 sizeof(entry)) < 0 ||
	    amp_task_log_record_path(log, entry, path, sizeof(path)) < 0)
		return AMP_OK;
	snprintf(cause, sizeof(cause), "%s", path);
	if (amp_task_has_escalation(log, "heartbeat_timeout", "system", cause))
		return AMP_OK;
	snprintf(description, sizeof(description),
		 AMP_SILENCE_CAUSE "%s: %s claimed %s%s%s on a lease of %lld s and wrote nothing to the task after %s; amp watch released the claim, and the task is claimable again.",
		 path, l->agent, c->task_id, l->subtask[0] ? " subtask " : "", l->subtask,
		 (long long)(l->ttl_ms / 1000), amp_time_format(l->renewed_ms, until));
	after = *log;
	after.next_seq += (int)w->nfiles;
	affected = json_pack("[s]", dispatch);
	status = affected ? amp_write_add_escalation(c->set, w, &after, "heartbeat_timeout", "warning",
						     description, affected, NULL, c->now_ms, &sres,
						     NULL, err)
			  : amp_error_set(err, AMP_EIO, "", "out of memory");
	json_decref(affected);
	snprintf(c->res->escalation_id, sizeof(c->res->escalation_id), "%s", sres.escalation_id);
	return status;
}

static int build_plan(struct coord_ctx *c, const amp_task_log *log, amp_store_write *w,
		      amp_error *err)
{
	const amp_plan *p = c->plan;
	char when[AMP_TIME_BUFSZ], prio[3] = "P0";
	json_t *extra = json_object();
	int status;

	if (!extra)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	prio[1] = (char)('0' + (p->priority >= 0 ? p->priority : 0));
	if (p->priority >= 0)
		json_object_set_new(extra, "priority", json_string(prio));
	if (p->deadline_ms >= 0)
		json_object_set_new(extra, "deadline", json_string(amp_time_format(p->deadline_ms, when)));
	if (p->max_iterations > 0)
		json_object_set_new(extra, "max_iterations", json_integer(p->max_iterations));
	if (p->capability)
		json_object_set_new(extra, "capability", json_string(p->capability));
	control_name(log, "plan", c->now_ms, c->res->name, sizeof(c->res->name));
	status = add_doc(c, log, "plan", extra, w, err);
	json_decref(extra);
	return status;
}

/* amp watch: a deadline passed before the approval, escalated once per plan
 * record; AMP_NOOP when there is nothing (more) to say. */
static int build_deadline(struct coord_ctx *c, const amp_task_log *log, const amp_task_state *s,
			  amp_store_write *w, amp_error *err)
{
	amp_plan p;
	amp_send_result sres = { 0 };
	const amp_entry *rec;
	char entry[320], path[AMP_PATH_MAX], due[AMP_TIME_BUFSZ], description[1400];
	const char *dispatch = amp_json_str(s->last_dispatch, "msg_id");
	json_t *affected;
	int status;

	amp_coord_plan(log, &p);
	if (p.deadline_ms < 0 || c->now_ms <= p.deadline_ms || s->aborted ||
	    !strcmp(s->state, "approved") || !dispatch ||
	    !(rec = amp_task_log_find(log, AMP_ENTRY_CTL, p.deadline_record)) ||
	    amp_store_entry_name(rec->seq, AMP_ENTRY_CTL, rec->id, entry, sizeof(entry)) < 0 ||
	    amp_task_log_record_path(log, entry, path, sizeof(path)) < 0)
		return AMP_NOOP;
	if (amp_task_has_escalation(log, "unknown", "system", path))
		return AMP_NOOP;
	snprintf(description, sizeof(description),
		 AMP_DEADLINE_CAUSE "%s: task %s was due at %s (amp plan --deadline) and is %s.",
		 path, c->task_id, amp_time_format(p.deadline_ms, due), s->state);
	if (!(affected = json_pack("[s]", dispatch)))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	status = amp_write_add_escalation(c->set, w, log, "unknown", "warning", description,
					  affected, NULL, c->now_ms, &sres, NULL, err);
	json_decref(affected);
	snprintf(c->res->escalation_id, sizeof(c->res->escalation_id), "%s", sres.escalation_id);
	return status;
}

static int build_depend(struct coord_ctx *c, amp_store *st, git_tree *tip,
			const amp_task_log *log, amp_store_write *w, amp_error *err)
{
	amp_dep deps[AMP_DEPS_MAX];
	char why[700];
	json_t *extra;
	int status;

	if ((status = amp_coord_check_depend(st, tip, c->task_id, c->on, why, sizeof(why), err)) < 0)
		return status == AMP_ERULE ? refuse(c, err, AMP_ERULE, "/on", why) : status;
	if (amp_coord_deps(log, deps) >= AMP_DEPS_MAX) {
		snprintf(why, sizeof(why), "task %s depends on %d tasks already, the most it may",
			 c->task_id, AMP_DEPS_MAX);
		return refuse(c, err, AMP_ERULE, "/on", why);
	}
	control_name(log, "depend", c->now_ms, c->res->name, sizeof(c->res->name));
	extra = json_pack("{s:s,s:b}", "on", c->on, "soft", c->soft);
	status = extra ? add_doc(c, log, "depend", extra, w, err)
		       : amp_error_set(err, AMP_EIO, "", "out of memory");
	json_decref(extra);
	return status;
}

/* SPEC-022 task_progress: only the instance that holds the task (or the
 * subtask, or the whole task) reports on it. */
static int build_progress(struct coord_ctx *c, const amp_task_log *log, amp_store_write *w,
			  amp_error *err)
{
	amp_leases ls;
	char why[600];
	json_t *extra;
	size_t i;
	int status;

	amp_coord_leases(log, &ls);
	for (i = 0; i < ls.n; i++)
		if (amp_lease_in_force(&ls.v[i], c->now_ms) && !strcmp(ls.v[i].agent, c->agent) &&
		    (!ls.v[i].subtask[0] || !c->subtask || !strcmp(ls.v[i].subtask, c->subtask)))
			break;
	if (i == ls.n) {
		snprintf(why, sizeof(why), "%s holds no claim of %s%s%s in force: the holder reports progress (amp claim)",
			 c->agent, c->subtask ? "subtask " : "task ", c->subtask ? c->subtask : c->task_id,
			 c->subtask ? " of the task" : "");
		return refuse(c, err, AMP_ERULE, "/task_id", why);
	}
	control_name(log, "progress", c->now_ms, c->res->name, sizeof(c->res->name));
	extra = json_pack("{s:s,s:I,s:s*,s:s*}", "agent", c->agent, "percent", (json_int_t)c->ttl_sec,
			  "subtask_id", c->subtask, "note", c->reason);
	status = extra ? add_doc(c, log, "progress", extra, w, err)
		       : amp_error_set(err, AMP_EIO, "", "out of memory");
	json_decref(extra);
	return status;
}

static const char *op_type(enum coord_op op);

/* SPEC-022 feedback: a question, its one answer, or the asker's
 * acknowledgement of the answer (protocol/question.h). */
static int build_feedback(struct coord_ctx *c, const amp_task_log *log, const amp_task_state *s,
			  amp_store_write *w, amp_error *err)
{
	char why[600];
	json_t *extra;
	int status;

	if (c->op == OP_QUESTION) {
		if (c->subtask && !amp_task_subtask(s, c->subtask)) {
			snprintf(why, sizeof(why), "task %s has no subtask %s", c->task_id, c->subtask);
			return refuse(c, err, AMP_ERULE, "/subtask_id", why);
		}
		if (amp_coord_check_write(log, "executor", c->agent, c->now_ms, why, sizeof(why)) < 0)
			return refuse(c, err, AMP_ERULE, "/from", why);
		control_name(log, "question", c->now_ms, c->res->name, sizeof(c->res->name));
		extra = json_pack("{s:s*,s:s*,s:s,s:I}", "agent", c->agent, "subtask_id", c->subtask,
				  "question", c->reason, "ack_timeout_sec", (json_int_t)c->ttl_sec);
	} else {
		int ack = c->op == OP_ANSWER_ACK;
		json_t *probe = json_pack("{s:s,s:s,s:s,s:s*}", "type", ack ? "answer_ack" : "answer",
					  ack ? "acks" : "answers", c->on, "from", c->from,
					  "agent", c->agent);

		status = amp_question_check_record(log, probe, why, sizeof(why));
		json_decref(probe);
		if (status < 0)
			return refuse(c, err, AMP_ERULE, ack ? "/acks" : "/answers", why);
		control_name(log, ack ? "answer_ack" : "answer", c->now_ms, c->res->name,
			     sizeof(c->res->name));
		extra = ack ? json_pack("{s:s*,s:s}", "agent", c->agent, "acks", c->on)
			    : json_pack("{s:s*,s:s,s:s}", "agent", c->agent, "answers", c->on,
					"answer", c->reason);
		if (extra && !ack && c->ttl_sec > 0)
			json_object_set_new(extra, "ack_timeout_sec", json_integer(c->ttl_sec));
	}
	status = extra ? add_doc(c, log, op_type(c->op), extra, w, err)
		       : amp_error_set(err, AMP_ESCHEMA, "", "the text must be valid UTF-8");
	json_decref(extra);
	return status;
}

static int build(amp_store *st, git_tree *tip, void *vctx, amp_store_write *w, amp_error *err)
{
	struct coord_ctx *c = vctx;
	amp_task_log log;
	amp_task_state s;
	char closed[512], why[700];
	const char *type = op_type(c->op);
	int status;

	amp_errlist_truncate(c->errors, c->errors_base);
	memset(c->res, 0, sizeof(*c->res));
	if ((status = amp_store_read_task(st, tip, c->task_id, &log, err)) < 0)
		return status;
	amp_task_state_compute(&log, &s);
	/* Refused while the task is closed to the role, exactly like a
	 * message (aborted, suspended, locked). */
	if (log.count && c->op != OP_EXPIRE && amp_task_closed_to(&s, c->from, closed, sizeof(closed))) {
		snprintf(why, sizeof(why), "task %s %s", c->task_id, closed);
		status = refuse(c, err, AMP_ERULE, "/task_id", why);
	} else if (c->op == OP_DEPEND || c->op == OP_PLAN) {
		/* Planned before the dispatch: a new task too. */
		status = c->op == OP_DEPEND ? build_depend(c, st, tip, &log, w, err)
					    : build_plan(c, &log, w, err);
	} else if (c->op == OP_DEADLINE) {
		status = log.count ? build_deadline(c, &log, &s, w, err) : AMP_NOOP;
	} else if (!log.count) {
		snprintf(why, sizeof(why), "task %s has no records", c->task_id);
		status = refuse(c, err, AMP_ERULE, "/task_id", why);
	} else if (c->op == OP_CLAIM) {
		status = build_claim(c, &log, &s, w, err);
	} else if (c->op == OP_PROGRESS) {
		status = build_progress(c, &log, w, err);
	} else if (c->op == OP_QUESTION || c->op == OP_ANSWER || c->op == OP_ANSWER_ACK) {
		status = build_feedback(c, &log, &s, w, err);
	} else if (c->op == OP_RELEASE) {
		status = build_release(c, &log, w, err);
	} else {
		status = build_expire(c, &log, &s, w, err);
	}
	if (status == AMP_OK) {
		if (c->op == OP_DEADLINE)
			snprintf(w->subject, sizeof(w->subject), "escalation %s system -> admin: deadline missed",
				 c->task_id);
		else if (c->op == OP_PLAN)
			snprintf(w->subject, sizeof(w->subject), "plan %s %s", c->task_id, c->from);
		else if (c->op == OP_DEPEND)
			snprintf(w->subject, sizeof(w->subject), "depend %s %s: on %s%s", c->task_id,
				 c->from, c->on, c->soft ? " (soft)" : "");
		else if (c->op == OP_PROGRESS)
			snprintf(w->subject, sizeof(w->subject), "progress %s %s: %s %lld%%", c->task_id,
				 c->from, c->agent, c->ttl_sec);
		else if (c->op == OP_QUESTION || c->op == OP_ANSWER || c->op == OP_ANSWER_ACK)
			snprintf(w->subject, sizeof(w->subject), "%s %s %s%s%s%s%s", type, c->task_id,
				 c->from, c->agent ? " " : "", c->agent ? c->agent : "",
				 c->op == OP_ANSWER ? ": answers " : c->op == OP_ANSWER_ACK ? ": acks " : "",
				 c->op == OP_QUESTION ? "" : c->on);
		else if (c->op == OP_CLAIM)
			snprintf(w->subject, sizeof(w->subject), "claim %s %s: %s%s%s", c->task_id,
				 c->from, c->agent, c->subtask ? " subtask " : "",
				 c->subtask ? c->subtask : "");
		else
			snprintf(w->subject, sizeof(w->subject), "release %s %s: %s of %s", c->task_id,
				 c->from, c->res->claim, c->res->agent);
		snprintf(w->trailers, sizeof(w->trailers), "%s%s%sAmp-Type: %s\nAmp-Task: %s\n%s%s%s",
			 c->op == OP_DEADLINE ? "Amp-Msg-Id: " : "",
			 c->op == OP_DEADLINE ? c->res->escalation_id : "",
			 c->op == OP_DEADLINE ? "\n" : "", type, c->task_id, c->res->escalation_id[0] ? "Amp-Escalation: " : "",
			 c->op == OP_DEADLINE ? "" : c->res->escalation_id,
			 c->res->escalation_id[0] && c->op != OP_DEADLINE ? "\n" : "");
		snprintf(w->author, sizeof(w->author), "%s", c->from);
	}
	amp_task_state_free(&s);
	amp_task_log_free(&log);
	return status;
}

/* The type of the record an operation writes, for the error log. */
static const char *op_type(enum coord_op op)
{
	static const char *const types[] = { "claim", "release", "release", "depend", "plan",
					     "escalation", "progress", "question", "answer",
					     "answer_ack" };

	return types[op];
}

/* What was asked for, for the error log when no record was built. */
static json_t *coord_asked(void *vctx)
{
	struct coord_ctx *c = vctx;

	return json_pack("{s:s,s:s,s:s,s:s?,s:s?}", "type", op_type(c->op), "task_id",
			 c->task_id, "from", c->from, "agent", c->agent, "subtask_id", c->subtask);
}

static int run(amp_store *st, struct coord_ctx *c)
{
	int status;

	status = amp_write_logged(st, AMP_OK, op_type(c->op), build, c, &c->doc, coord_asked,
				  c->errors, c->errors_base);
	json_decref(c->doc);
	c->doc = NULL;
	return status;
}

int amp_coord_claim(amp_store *st, amp_schema_set *set, const char *task_id,
		    const char *subtask, const char *from, const char *agent,
		    long long ttl_sec, int64_t now_ms, amp_coord_result *res,
		    amp_errlist *errors)
{
	struct coord_ctx c = { OP_CLAIM, set, task_id, subtask, from, agent, NULL, ttl_sec,
			       now_ms, res, errors, errors->count, NULL, NULL, 0, NULL };

	memset(res, 0, sizeof(*res));
	if (strcmp(from, "executor"))
		return amp_errlist_add(errors, AMP_ERULE, "/from",
				       "a claim comes from the executor, not %s", from);
	if (!agent)
		return amp_errlist_add(errors, AMP_EUSAGE, "/agent",
				       "a claim names its instance: --agent NAME (or AMP_AGENT, git config amp.agent)");
	return run(st, &c);
}

int amp_coord_release(amp_store *st, amp_schema_set *set, const char *task_id,
		      const char *subtask, const char *from, const char *agent,
		      const char *reason, int64_t now_ms, amp_coord_result *res,
		      amp_errlist *errors)
{
	struct coord_ctx c = { OP_RELEASE, set, task_id, subtask, from, agent, reason, 0,
			       now_ms, res, errors, errors->count, NULL, NULL, 0, NULL };

	memset(res, 0, sizeof(*res));
	if (!amp_role_in(from, "executor coordinator admin"))
		return amp_errlist_add(errors, AMP_ERULE, "/from",
				       "a release comes from the holder (executor), the coordinator or the admin, not %s",
				       from);
	return run(st, &c);
}

int amp_coord_progress(amp_store *st, amp_schema_set *set, const char *task_id,
		       const char *subtask, const char *agent, int percent, const char *note,
		       int64_t now_ms, amp_coord_result *res, amp_errlist *errors)
{
	struct coord_ctx c = { OP_PROGRESS, set, task_id, subtask, "executor", agent, note, percent,
			       now_ms, res, errors, errors->count, NULL, NULL, 0, NULL };

	memset(res, 0, sizeof(*res));
	if (!agent)
		return amp_errlist_add(errors, AMP_EUSAGE, "/agent",
				       "a progress report names its instance: --agent NAME (or AMP_AGENT, git config amp.agent)");
	return run(st, &c);
}

int amp_coord_ask(amp_store *st, amp_schema_set *set, const char *task_id,
		  const char *subtask, const char *agent, const char *question,
		  long long timeout_sec, int64_t now_ms, amp_coord_result *res,
		  amp_errlist *errors)
{
	struct coord_ctx c = { OP_QUESTION, set, task_id, subtask, "executor", agent, question,
			       timeout_sec, now_ms, res, errors, errors->count, NULL, NULL, 0, NULL };

	memset(res, 0, sizeof(*res));
	return run(st, &c);
}

int amp_coord_answer(amp_store *st, amp_schema_set *set, const char *task_id,
		     const char *question_name, const char *from, const char *agent,
		     const char *answer, long long ack_timeout_sec, int64_t now_ms,
		     amp_coord_result *res, amp_errlist *errors)
{
	struct coord_ctx c = { OP_ANSWER, set, task_id, NULL, from, agent, answer, ack_timeout_sec,
			       now_ms, res, errors, errors->count, NULL, question_name, 0, NULL };

	memset(res, 0, sizeof(*res));
	if (!amp_role_in(from, "coordinator admin"))
		return amp_errlist_add(errors, AMP_ERULE, "/from",
				       "a question is answered by the coordinator or the admin, not %s", from);
	return run(st, &c);
}

int amp_coord_ack_answer(amp_store *st, amp_schema_set *set, const char *task_id,
			 const char *answer_name, const char *agent, int64_t now_ms,
			 amp_coord_result *res, amp_errlist *errors)
{
	struct coord_ctx c = { OP_ANSWER_ACK, set, task_id, NULL, "executor", agent, NULL, 0,
			       now_ms, res, errors, errors->count, NULL, answer_name, 0, NULL };

	memset(res, 0, sizeof(*res));
	return run(st, &c);
}

int amp_coord_depend(amp_store *st, amp_schema_set *set, const char *task_id,
		     const char *on, int soft, const char *from, int64_t now_ms,
		     amp_coord_result *res, amp_errlist *errors)
{
	struct coord_ctx c = { OP_DEPEND, set, task_id, NULL, from, NULL, NULL, 0,
			       now_ms, res, errors, errors->count, NULL, on, soft, NULL };

	memset(res, 0, sizeof(*res));
	if (!amp_role_in(from, "coordinator admin"))
		return amp_errlist_add(errors, AMP_ERULE, "/from",
				       "a dependency is planned by the coordinator or the admin, not %s", from);
	return run(st, &c);
}

int amp_coord_plan_write(amp_store *st, amp_schema_set *set, const char *task_id,
			 int priority, int64_t deadline_ms, int max_iterations,
			 const char *capability, const char *from, int64_t now_ms,
			 amp_coord_result *res, amp_errlist *errors)
{
	amp_plan p = { priority, deadline_ms, max_iterations, capability, NULL };
	struct coord_ctx c = { OP_PLAN, set, task_id, NULL, from, NULL, NULL, 0,
			       now_ms, res, errors, errors->count, NULL, NULL, 0, &p };

	memset(res, 0, sizeof(*res));
	if (!amp_role_in(from, "coordinator admin"))
		return amp_errlist_add(errors, AMP_ERULE, "/from",
				       "a plan is the coordinator's or the admin's, not %s", from);
	return run(st, &c);
}

int amp_coord_deadline(amp_store *st, amp_schema_set *set, const char *task_id,
		       int64_t now_ms, amp_coord_result *res, int *escalated,
		       amp_errlist *errors)
{
	struct coord_ctx c = { OP_DEADLINE, set, task_id, NULL, "system", NULL, NULL, 0,
			       now_ms, res, errors, errors->count, NULL, NULL, 0, NULL };
	int status = run(st, &c);

	*escalated = status == AMP_OK;
	return status == AMP_NOOP ? AMP_OK : status;
}

int amp_coord_expire(amp_store *st, amp_schema_set *set, const char *task_id,
		     int64_t now_ms, amp_coord_result *res, int *released,
		     amp_errlist *errors)
{
	amp_coord_result one;
	int status = AMP_OK, n;

	memset(res, 0, sizeof(*res));
	*released = 0;
	/* One commit per lease; AMP_LEASES_MAX bounds the loop. */
	for (n = 0; n < AMP_LEASES_MAX; n++) {
		struct coord_ctx c = { OP_EXPIRE, set, task_id, NULL, "system", NULL, NULL, 0,
				       now_ms, &one, errors, errors->count, NULL, NULL, 0, NULL };

		status = run(st, &c);
		if (status != AMP_OK)
			break;
		(*released)++;
		*res = one;
	}
	return status == AMP_NOOP ? AMP_OK : status;
}
