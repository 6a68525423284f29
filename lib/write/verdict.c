#include "verdict.h"

#include <string.h>

#include "record/record.h"
#include "protocol/protocol.h"

/* The message `msg_id` of log, or its latest of `type` when msg_id is NULL. */
static const amp_entry *find(const amp_task_log *log, const char *msg_id,
			     const char *type)
{
	const amp_entry *best = NULL;
	size_t i;

	if (msg_id)
		return amp_task_log_find(log, AMP_ENTRY_MSG, msg_id);
	for (i = 0; i < log->count; i++) {
		const char *t = amp_json_str(log->entries[i].doc, "type");

		if (log->entries[i].kind == AMP_ENTRY_MSG && t && !strcmp(t, type))
			best = &log->entries[i];
	}
	return best;
}

/* One "not assessed" result per acceptance criterion of the dispatch the
 * request names; NULL when it cannot be found. */
static json_t *criteria_from_dispatch(const amp_task_log *log, const json_t *request)
{
	const char *ref = amp_json_str(json_object_get(request, "payload"),
				       "original_dispatch_ref");
	const amp_entry *d = ref ? amp_task_log_find(log, AMP_ENTRY_MSG, ref) : NULL;
	json_t *criteria, *v, *out;
	size_t i;

	if (!d)
		return NULL;
	criteria = json_object_get(json_object_get(d->doc, "payload"), "acceptance_criteria");
	out = json_array();
	json_array_foreach(criteria, i, v)
		json_array_append_new(out, json_pack("{s:O,s:n,s:s}", "criterion", v,
						     "passed", "evidence", ""));
	return out;
}

int amp_verdict_send(amp_store *st, amp_schema_set *set,
		     const amp_verdict_fields *f, amp_send_result *res,
		     amp_errlist *errors)
{
	amp_message_fields mf = { 0 };
	amp_send_opts opts = { "verdict", "built", NULL, 0, 1, f->idempotency_key, 0, NULL };
	amp_task_log log = { 0 };
	const amp_entry *request;
	git_tree *tip = NULL;
	json_t *payload = NULL, *context = NULL, *msg = NULL;
	amp_error err;
	int status;

	memset(res, 0, sizeof(*res));
	/* The send reads the task again, at its tip: what this read built
	 * serves it. */
	amp_store_share_records(st, 1);
	if ((status = amp_store_tip(st, amp_store_messages_ref(st), NULL, &tip, &err)) < 0 ||
	    (status = amp_store_read_task(st, tip, f->task_id, &log, &err)) < 0) {
		amp_errlist_add(errors, status, err.path, "%s", err.message);
		goto cleanup;
	}
	/* The request awaiting a verdict, when the reviewer names none. */
	if (!f->context_ref) {
		amp_task_state s;
		const amp_subtask *sub;
		json_t *probe = json_object();
		const json_t *open;

		amp_task_state_compute(&log, &s);
		open = amp_task_verdict_request(&log, &s, probe, &sub);
		request = open ? amp_task_log_find(&log, AMP_ENTRY_MSG, amp_json_str(open, "msg_id")) : NULL;
		amp_task_state_free(&s);
		json_decref(probe);
		if (!request)
			request = find(&log, NULL, "review_request");
	} else {
		request = find(&log, f->context_ref, "review_request");
	}
	if (!request || strcmp(amp_json_str(request->doc, "type") ?
			       amp_json_str(request->doc, "type") : "", "review_request")) {
		size_t base = errors->count;
		json_t *attempt;

		status = amp_errlist_add(errors, AMP_ERULE, "/context_ref",
					 f->context_ref ? "%s is not a review_request of task %s in the SSOT"
							: "%sno review_request of task %s in the SSOT: nothing to give a verdict on",
					 f->context_ref ? f->context_ref : "", f->task_id);
		/* Refused before a message could be built: the error log keeps
		 * what was asked for, as for any refused message. */
		attempt = json_pack("{s:s,s:s,s:s?,s:s?,s:s?}", "type", "review_verdict",
				    "task_id", f->task_id, "from", f->from ? f->from : "reviewer",
				    "decision", f->decision, "context_ref", f->context_ref);
		amp_write_log_rejection(st, &opts, attempt, status, errors, base);
		json_decref(attempt);
		goto cleanup;
	}
	payload = f->payload ? json_deep_copy(f->payload) : json_object();
	if (!json_is_object(payload)) {
		status = amp_errlist_add(errors, AMP_ESCHEMA, "/payload", "must be an object");
		goto cleanup;
	}
	if (f->decision)
		json_object_set_new(payload, "decision", json_string(f->decision));
	if (f->confidence >= 0)
		json_object_set_new(payload, "confidence", json_real(f->confidence));
	if (f->architecture_notes)
		json_object_set_new(payload, "architecture_notes",
				    json_string(f->architecture_notes));
	if (!json_object_get(payload, "criteria_results")) {
		json_t *c = criteria_from_dispatch(&log, request->doc);

		if (c)
			json_object_set_new(payload, "criteria_results", c);
	}
	context = json_pack("[s]", request->id);
	mf.type = "review_verdict";
	mf.task_id = f->task_id;
	mf.from = f->from ? f->from : "reviewer";
	mf.to = "coordinator";
	mf.payload = payload;
	mf.context_ref = context;
	mf.requires_ack = -1;
	mf.ack_timeout_sec = -1;
	mf.now_ms = f->now_ms;
	if ((status = amp_message_build(&msg, &mf, &err)) < 0) {
		amp_errlist_add(errors, status, err.path, "%s", err.message);
		goto cleanup;
	}
	status = amp_send_message(st, set, msg, &opts, res, errors);
cleanup:
	amp_task_log_free(&log);
	amp_store_share_records(st, 0);
	git_tree_free(tip);
	json_decref(payload);
	json_decref(context);
	json_decref(msg);
	return status;
}
