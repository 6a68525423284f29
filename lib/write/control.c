#include "control.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"
#include "base/clock.h"
#include "protocol/protocol.h"
#include "record_writer.h"
#include "base/util.h"

struct control_ctx {
	amp_schema_set *set;
	const char *type;
	const char *task_id;
	const char *from;
	const char *text;
	int64_t now_ms;
	amp_control_result *res;
	amp_errlist *errors;
	size_t errors_base;
	json_t *doc; /* the record of the last attempt */
};

/* Records a refusal in the caller's list and for the store. */
#define REFUSE(c, err, path, ...) \
	(amp_errlist_add((c)->errors, AMP_ERULE, (path), __VA_ARGS__), \
	 amp_error_set((err), AMP_ERULE, (path), __VA_ARGS__))

/* Who may write each control record. */
static int role_may(const char *type, const char *from)
{
	if (!strcmp(type, "resume") || !strcmp(type, "approve"))
		return !strcmp(from, "admin");
	if (!strcmp(type, "abort"))
		return !strcmp(from, "admin") || !strcmp(from, "coordinator");
	if (!strcmp(type, "claim"))
		return !strcmp(from, "executor");
	if (!strcmp(type, "release"))
		return amp_role_in(from, "executor coordinator admin system");
	if (!strcmp(type, "depend") || !strcmp(type, "plan"))
		return amp_role_in(from, "coordinator admin");
	if (!strcmp(type, "progress") || !strcmp(type, "question") || !strcmp(type, "answer_ack"))
		return !strcmp(from, "executor");
	if (!strcmp(type, "answer"))
		return amp_role_in(from, "coordinator admin");
	return amp_role_in(from, "coordinator executor reviewer");
}

/* The state the transition table looks up for a control record. */
static const char *control_state(const char *type, const amp_task_log *log,
				 const amp_task_state *s)
{
	if (!log->count)
		return "new";
	if (!strcmp(type, "approve"))
		return s->awaiting ? "awaiting_approval" : s->state;
	if (!strcmp(type, "abort") && s->aborted)
		return "aborted";
	return s->state;
}

/* 1 when the transition table lets `from` write a control record of
 * `type` on the task of `log` in state s; else 0 with the reason in why. */
static int control_allowed(const amp_task_log *log, const amp_task_state *s,
			   const char *type, const char *from, char *why, size_t whysz)
{
	const char *state = control_state(type, log, s);
	const amp_transition *t;
	char closed[512];

	/* Before the table: an aborted or suspended task takes the admin's
	 * records only (resume is the admin's; a second abort is the table's
	 * "aborted already"). */
	if (strcmp(type, "resume") && strcmp(state, "new") &&
	    !(!strcmp(type, "abort") && !strcmp(state, "aborted")) &&
	    amp_task_closed_to(s, from, closed, sizeof(closed))) {
		snprintf(why, whysz, "task %s %s", log->task_id, closed);
		return 0;
	}
	t = amp_transition_find(type, state);
	if (!t || !t->allowed) {
		snprintf(why, whysz, "%s %s is refused while task %s is %s: %s",
			 strchr("aeiou", type[0]) ? "an" : "a", type,
			 log->task_id, state, t ? t->effect : "no such transition");
		return 0;
	}
	return 1;
}

int amp_control_allowed(const amp_task_log *log, const char *type, const char *from,
			char *why, size_t whysz)
{
	amp_task_state s;
	int ok;

	/* Written with its message, by amp_send_message and amp_send_ack; a
	 * round or acked record is checked by amp_round_check_record. */
	if (type && amp_role_in(type, "idempotency_key address round acked"))
		return 1;
	/* amp sync's bookkeeping: it changes no state, and the hook checks
	 * that it sets aside a record of its own commit only. */
	if (type && !strcmp(type, "superseded") && from && !strcmp(from, "system"))
		return 1;
	if (!type || !from || !role_may(type, from)) {
		snprintf(why, whysz, "a %s may not come from %s", type ? type : "control record",
			 from ? from : "nobody");
		return 0;
	}
	amp_task_state_compute(log, &s);
	if (amp_role_in(type, "claim release depend plan progress question answer answer_ack")) {
		char closed[512];

		/* Leases are coord.h's (amp_coord_check_record); like a
		 * message, none while the task is closed to the role.  amp
		 * watch's release of an expired lease is system's. */
		ok = 1;
		if (!log->count && strcmp(type, "depend") && strcmp(type, "plan")) {
			snprintf(why, whysz, "a %s is refused while task %s is new: it has no records",
				 type, log->task_id);
			ok = 0;
		} else if (log->count && strcmp(from, "system") &&
			   amp_task_closed_to(&s, from, closed, sizeof(closed))) {
			snprintf(why, whysz, "task %s %s", log->task_id, closed);
			ok = 0;
		}
		amp_task_state_free(&s);
		return ok;
	}
	ok = control_allowed(log, &s, type, from, why, whysz);
	amp_task_state_free(&s);
	return ok;
}

/* The latest rejecting verdict of the log (the one a due lock names). */
static const char *last_reject(const amp_task_log *log)
{
	size_t i = log->count;

	while (i--) {
		const json_t *doc = log->entries[i].doc;
		const char *t = amp_json_str(doc, "type");
		const char *d = amp_json_str(json_object_get(doc, "payload"), "decision");

		if (log->entries[i].kind == AMP_ENTRY_MSG && t && !strcmp(t, "review_verdict") &&
		    d && !strcmp(d, "rejected"))
			return log->entries[i].id;
	}
	return NULL;
}

static int build_control(amp_store *st, git_tree *tip, void *vctx,
			 amp_store_write *w, amp_error *err)
{
	struct control_ctx *c = vctx;
	amp_task_log log, with_lock = { 0 };
	amp_task_state s = { 0 };
	amp_send_result lock = { 0 };
	const char *target = NULL;
	char when[AMP_TIME_BUFSZ], why[512];
	int64_t ms = c->now_ms;
	int status;

	amp_errlist_truncate(c->errors, c->errors_base);
	c->res->escalation_id[0] = '\0';
	if ((status = amp_store_read_task(st, tip, c->task_id, &log, err)) < 0)
		return status;
	amp_task_state_compute(&log, &s);
	if (!control_allowed(&log, &s, c->type, c->from, why, sizeof(why))) {
		status = REFUSE(c, err, "/task_id", "%s", why);
		goto cleanup;
	}
	if (!strcmp(c->type, "heartbeat") &&
	    amp_coord_check_write(&log, c->from, amp_store_agent(st), c->now_ms, why,
				  sizeof(why)) < 0) {
		status = REFUSE(c, err, "/from", "%s", why);
		goto cleanup;
	}
	c->res->lost[0] = '\0';
	if (!strcmp(c->type, "heartbeat") && amp_store_agent(st)) {
		const char *lost = amp_coord_lost_lease(&log, amp_store_agent(st), c->now_ms);

		snprintf(c->res->lost, sizeof(c->res->lost), "%s", lost ? lost : "");
	}
	snprintf(c->res->was, sizeof(c->res->was), "%s", s.state);
	if (!strcmp(c->type, "resume")) {
		/* A lock that is due (a rejecting verdict that came by fetch,
		 * or a lowered amp.lockThreshold) but not recorded: the admin
		 * lifts it, so it is recorded first, in the same commit. */
		if (s.lock_due && !s.suspended) {
			const char *verdict = last_reject(&log);

			if ((status = amp_write_add_lock_if_due(c->set, w, &log, NULL, verdict ? verdict : "",
								c->now_ms, &lock, NULL, err)) < 0)
				goto cleanup;
			snprintf(c->res->escalation_id, sizeof(c->res->escalation_id), "%s",
				 lock.escalation_id);
			target = c->res->escalation_id;
			with_lock = log;
			with_lock.next_seq += (int)w->nfiles;
		} else {
			target = s.suspended_by;
		}
		snprintf(c->res->now, sizeof(c->res->now), "%s", s.flow_state);
	} else if (!strcmp(c->type, "approve")) {
		target = amp_json_str(s.awaiting, "msg_id");
		snprintf(c->res->now, sizeof(c->res->now), "dispatched");
	} else if (!strcmp(c->type, "abort")) {
		snprintf(c->res->now, sizeof(c->res->now), "aborted");
	} else {
		snprintf(c->res->now, sizeof(c->res->now), "%s", s.state);
	}
	snprintf(c->res->target, sizeof(c->res->target), "%s", target ? target : "");
	/* One record per millisecond of the task's control names. */
	do {
		snprintf(c->res->name, sizeof(c->res->name), "%s-%lld", c->type, (long long)ms);
		ms++;
	} while (amp_task_log_find(&log, AMP_ENTRY_CTL, c->res->name));
	json_decref(c->doc);
	c->doc = json_pack("{s:s,s:s,s:s,s:s,s:s}", "protocol_version", AMP_PROTOCOL,
			   "type", c->type, "task_id", c->task_id, "from", c->from,
			   "timestamp", amp_time_format(c->now_ms, when));
	if (!c->doc) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if (c->text)
		json_object_set_new(c->doc, strcmp(c->type, "heartbeat") ? "reason" : "note",
				    json_string(c->text));
	/* A named executor's heartbeat renews its own leases (coord.h). */
	if (!strcmp(c->type, "heartbeat") && amp_store_agent(st))
		json_object_set_new(c->doc, "agent", json_string(amp_store_agent(st)));
	if (!strcmp(c->type, "resume"))
		json_object_set_new(c->doc, "lifts", json_string(c->res->target));
	else if (!strcmp(c->type, "approve"))
		json_object_set_new(c->doc, "approves", json_string(c->res->target));
	if ((status = amp_control_validate(c->set, c->doc, c->errors)) < 0) {
		const amp_error *first = &c->errors->items[c->errors_base];

		status = amp_error_set(err, status, first->path, "%s", first->message);
		goto cleanup;
	}
	if ((status = amp_write_add_record(w, with_lock.task_id[0] ? &with_lock : &log,
					   AMP_ENTRY_CTL, c->res->name, c->doc, err)) < 0)
		goto cleanup;
	if (!strcmp(c->type, "resume"))
		snprintf(w->subject, sizeof(w->subject), "resume %s admin: lifts %s",
			 c->task_id, c->res->target);
	else if (!strcmp(c->type, "approve"))
		snprintf(w->subject, sizeof(w->subject), "approve %s admin: approves %s",
			 c->task_id, c->res->target);
	else
		snprintf(w->subject, sizeof(w->subject), "%s %s %s", c->type, c->task_id, c->from);
	snprintf(w->trailers, sizeof(w->trailers), "Amp-Type: %s\nAmp-Task: %s\n%s%s%s",
		 c->type, c->task_id, c->res->target[0] ? "Amp-Target: " : "",
		 c->res->target, c->res->target[0] ? "\n" : "");
	snprintf(w->author, sizeof(w->author), "%s", c->from);
	status = AMP_OK;
cleanup:
	amp_task_state_free(&s);
	amp_task_log_free(&log);
	return status;
}

/* What was asked for, for the error log when no record was built. */
static json_t *control_asked(void *vctx)
{
	struct control_ctx *c = vctx;

	return json_pack("{s:s,s:s,s:s,s:s?}", "type", c->type, "task_id", c->task_id,
			 "from", c->from, "reason", c->text);
}

int amp_control_write(amp_store *st, amp_schema_set *set, const char *type,
		      const char *task_id, const char *from, const char *text,
		      int64_t now_ms, amp_control_result *res, amp_errlist *errors)
{
	struct control_ctx c = { set, type, task_id, from, text, now_ms, res, errors,
				 errors->count, NULL };
	int status = AMP_OK;

	memset(res, 0, sizeof(*res));
	if (!role_may(type, from))
		/* AMP/1.0 §05: "The Admin is the sole arbiter". */
		status = amp_errlist_add(errors, AMP_ERULE, "/from",
					 !strcmp(type, "abort") ? "only the admin or the coordinator may %s a task, not %s" :
					 !strcmp(type, "heartbeat") ? "a %s comes from the coordinator, the executor or the reviewer, not %s" :
					 "only the admin may %s a task, not %s", type, from);
	status = amp_write_logged(st, status, type, build_control, &c, &c.doc, control_asked,
				  errors, c.errors_base);
	json_decref(c.doc);
	return status;
}
