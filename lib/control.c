#include "control.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "clock.h"
#include "message.h"
#include "send.h"
#include "task.h"

struct resume_ctx {
	amp_schema_set *set;
	const char *task_id;
	const char *from;
	const char *reason;
	int64_t now_ms;
	amp_resume_result *res;
	amp_errlist *errors;
	size_t errors_base;
	json_t *doc; /* the record of the last attempt */
};

/* Records a refusal in the caller's list and for the store. */
#define REFUSE(c, err, ...) \
	(amp_errlist_add((c)->errors, AMP_ERULE, "/task_id", __VA_ARGS__), \
	 amp_error_set((err), AMP_ERULE, "/task_id", __VA_ARGS__))

static int build_resume(amp_store *st, git_tree *tip, void *vctx,
			amp_store_write *w, amp_error *err)
{
	struct resume_ctx *c = vctx;
	amp_task_log log;
	amp_task_state s;
	json_t *schema;
	char when[AMP_TIME_BUFSZ];
	int64_t ms = c->now_ms;
	int status;

	amp_errlist_truncate(c->errors, c->errors_base);
	if ((status = amp_store_read_task(st, tip, c->task_id, &log, err)) < 0)
		return status;
	amp_task_state_compute(&log, &s);
	if (!log.count) {
		status = REFUSE(c, err, "task %s is not in the SSOT: nothing to resume",
				c->task_id);
		goto cleanup;
	}
	if (!s.suspended) {
		status = REFUSE(c, err, "task %s is %s, not suspended or locked: nothing to resume",
				c->task_id, s.state);
		goto cleanup;
	}
	/* One record per millisecond of the task's control names. */
	do {
		snprintf(c->res->name, sizeof(c->res->name), "resume-%lld", (long long)ms);
		ms++;
	} while (amp_task_log_find(&log, AMP_ENTRY_CTL, c->res->name));
	snprintf(c->res->lifts, sizeof(c->res->lifts), "%s", s.suspended_by);
	snprintf(c->res->was, sizeof(c->res->was), "%s", s.state);
	snprintf(c->res->now, sizeof(c->res->now), "%s", s.flow_state);
	json_decref(c->doc);
	c->doc = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}",
			   "protocol_version", AMP_PROTOCOL, "type", "resume",
			   "task_id", c->task_id, "from", c->from,
			   "timestamp", amp_time_format(c->now_ms, when),
			   "reason", c->reason, "lifts", s.suspended_by);
	if (!c->doc) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if (!(schema = amp_schema_set_lookup(c->set, AMP_SCHEMA_CONTROL))) {
		amp_errlist_add(c->errors, AMP_EIO, "", "schema %s is not installed",
				AMP_SCHEMA_CONTROL);
		status = amp_error_set(err, AMP_EIO, "", "schema %s is not installed",
				       AMP_SCHEMA_CONTROL);
		goto cleanup;
	}
	if ((status = amp_bounds_check_value(c->doc, 0, "", c->errors)) < 0 ||
	    (status = amp_schema_validate(c->set, schema, NULL, c->doc, c->errors)) < 0) {
		const amp_error *first = &c->errors->items[c->errors_base];

		status = amp_error_set(err, status, first->path, "%s", first->message);
		goto cleanup;
	}
	if ((status = amp_send_add_record(w, &log, AMP_ENTRY_CTL, c->res->name, c->doc,
					   err)) < 0)
		goto cleanup;
	snprintf(w->subject, sizeof(w->subject), "resume %s admin: lifts %s",
		 c->task_id, s.suspended_by);
	snprintf(w->trailers, sizeof(w->trailers),
		 "Amp-Type: resume\nAmp-Task: %s\nAmp-Lifts: %s\n", c->task_id,
		 s.suspended_by);
	snprintf(w->author, sizeof(w->author), "admin");
	status = AMP_OK;
cleanup:
	amp_task_log_free(&log);
	return status;
}

int amp_control_resume(amp_store *st, amp_schema_set *set, const char *task_id,
		       const char *from, const char *reason, int64_t now_ms,
		       amp_resume_result *res, amp_errlist *errors)
{
	struct resume_ctx c = { set, task_id, from, reason, now_ms, res, errors,
				errors->count, NULL };
	amp_error err;
	int status;

	memset(res, 0, sizeof(*res));
	/* AMP/1.0 §05: "The Admin is the sole arbiter". */
	if (strcmp(from, "admin")) {
		status = amp_errlist_add(errors, AMP_ERULE, "/from",
					 "only the admin may resume a task, not %s", from);
	} else {
		status = amp_store_update(st, amp_store_messages_ref(st), build_resume,
					  &c, NULL, &err);
		if (status < 0 && errors->count == c.errors_base)
			amp_errlist_add(errors, status, err.path, "%s", err.message);
	}
	if (status == AMP_ERULE || status == AMP_ESCHEMA) {
		amp_send_opts opts = { "resume", "built", NULL, 0, 0 };
		json_t *attempt = c.doc ? json_incref(c.doc)
					: json_pack("{s:s,s:s,s:s,s:s}", "type", "resume",
						    "task_id", task_id, "from", from,
						    "reason", reason);

		amp_send_log_rejection(st, &opts, attempt, status, errors, c.errors_base);
		json_decref(attempt);
	}
	json_decref(c.doc);
	return status;
}
