/*
 * record_writer.c - the record writer every writer of write/ uses
 * (record_writer.h).
 */
#include "record_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"
#include "protocol/protocol.h"
#include "base/util.h"

/* Reports the first new error of `errors` through err, for the store. */
int amp_write_first_error(amp_errlist *errors, size_t base, int status,
			  amp_error *err)
{
	if (errors->count > base)
		return amp_error_set(err, status, errors->items[base].path, "%s",
				     errors->items[base].message);
	return amp_error_set(err, status, "", "refused");
}

int amp_write_add_record(amp_store_write *w, const amp_task_log *log,
			 amp_entry_kind kind, const char *id, const json_t *doc,
			 amp_error *err)
{
	char name[320], path[AMP_PATH_MAX], *text;
	size_t size;
	int status;

	if (log->layout < 0)
		return amp_store_layout_error(log->layout, err);
	/* In the layout of the tip the log was read from (store.h "Layout") */
	if (amp_store_entry_name(log->next_seq, kind, id, name, sizeof(name)) < 0 ||
	    amp_task_log_record_path(log, name, path, sizeof(path)) < 0)
		return amp_error_set(err, AMP_ESCHEMA, "", "%s %s: no valid record name in the SSOT",
				     log->task_id, id);
	if (!(text = amp_message_dump(doc)))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	/* amp_message_validate checked the size; a reassigned msg_id with one
	 * more digit must not slip past the reader's limit either. */
	size = strlen(text);
	if (size > AMP_LIMIT_MESSAGE_BYTES)
		status = amp_error_set(err, AMP_ESCHEMA, "",
				       "%zu bytes as stored, more than the %d-byte message size limit",
				       size, AMP_LIMIT_MESSAGE_BYTES);
	else
		status = amp_store_write_add(w, path, text, size, err);
	free(text);
	return status;
}

/* AMP/1.0 §05 system_state_snapshot, from the log the message goes into
 * (inside the compare-and-swap, so that a verdict landing meanwhile is
 * counted): the state the escalation puts the task in. */
void amp_write_fill_snapshot(json_t *msg, const amp_task_log *log)
{
	json_t *payload = json_object_get(msg, "payload");
	const char *type = amp_json_str(payload, "escalation_type");
	const char *severity = amp_json_str(payload, "severity");
	amp_task_state s;

	amp_task_state_compute(log, &s);
	json_object_set_new(payload, "system_state_snapshot",
			    json_pack("{s:s,s:i,s:s?}", "task_status",
				      severity && !strcmp(severity, "critical") ?
				      (type && !strcmp(type, "hallucination_lock") ?
				       "locked" : "suspended") : s.state,
				      "reject_count", s.reject_count,
				      "last_successful_msg_id", s.last_successful_msg_id));
	amp_task_state_free(&s);
}

/*
 * An escalation by system to the admin, written in the same commit as the
 * record that caused it: `log` holds every record of the task that commit
 * writes before it (send.c's log_plus), and gives the snapshot.  Its msg_id is the
 * first free one from now_ms on.  Added to w as the next record; its id goes
 * to res.
 */
int amp_write_add_escalation(amp_schema_set *set, amp_store_write *w,
			     const amp_task_log *log, const char *type,
			     const char *severity, const char *description,
			     json_t *affected, json_t *suggested, int64_t now_ms,
			     amp_send_result *res, json_t **out, amp_error *err)
{
	amp_message_fields f = { 0 };
	amp_errlist errors = { 0 };
	json_t *payload, *msg = NULL;
	int64_t ms = now_ms;
	int status;

	payload = json_pack("{s:s,s:s,s:s,s:s,s:O,s:{s:s,s:i,s:n},s:b}",
			    "escalation_type", type, "severity", severity,
			    "triggered_by", "system", "description", description,
			    "affected_msgs", affected, "system_state_snapshot",
			    "task_status", "new", "reject_count", 0, "last_successful_msg_id",
			    /* amp suspends the task at critical only (Critical
			     * = Suspend All): a warning of the system's suspends
			     * nothing, and says so (escalation.schema.json) */
			    "auto_suspended", strcmp(severity, "critical") == 0);
	if (!payload)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (suggested)
		json_object_set(payload, "suggested_actions", suggested);
	f.type = "escalation";
	f.task_id = log->task_id;
	f.from = "system";
	f.to = "admin";
	f.payload = payload;
	f.requires_ack = -1;
	f.ack_timeout_sec = -1;
	do {
		f.now_ms = ms++;
		json_decref(msg);
		msg = NULL;
		if ((status = amp_message_build(&msg, &f, err)) < 0)
			goto cleanup;
	} while (amp_task_log_id_taken(log, amp_json_str(msg, "msg_id")));
	amp_write_fill_snapshot(msg, log);
	if ((status = amp_message_validate(set, msg, 0, &errors)) < 0) {
		status = amp_write_first_error(&errors, 0, status, err);
		goto cleanup;
	}
	if ((status = amp_write_add_record(w, log, AMP_ENTRY_MSG, amp_json_str(msg, "msg_id"),
					msg, err)) < 0)
		goto cleanup;
	snprintf(res->escalation_id, sizeof(res->escalation_id), "%s", amp_json_str(msg, "msg_id"));
	snprintf(res->escalation_type, sizeof(res->escalation_type), "%s", type);
	if (out)
		*out = json_incref(msg);
cleanup:
	amp_errlist_free(&errors);
	json_decref(payload);
	json_decref(msg);
	return status;
}

/*
 * AMP/1.0 §05 hallucination_lock, at write time: when the verdict in
 * `after` (the log with it) brings the rejects since the last resume to
 * amp.lockThreshold (>=, so that no missed count dodges it), the lock is
 * written in the same commit.
 */
int amp_write_add_lock_if_due(amp_schema_set *set, amp_store_write *w,
			      const amp_task_log *after, const amp_task_state *state,
			      const char *verdict_id, int64_t now_ms, amp_send_result *res,
			      json_t **out, amp_error *err)
{
	amp_task_state own = { 0 };
	const amp_task_state *s = state;
	json_t *affected = NULL, *suggested = NULL;
	char description[1024];
	const char *dispatch;
	int status = AMP_OK;

	if (!s) {
		amp_task_state_compute(after, &own);
		s = &own;
	}
	if (!s->lock_due)
		goto cleanup;
	dispatch = s->last_dispatch ? amp_json_str(s->last_dispatch, "msg_id") : NULL;
	affected = dispatch ? json_pack("[s,s]", verdict_id, dispatch)
			    : json_pack("[s]", verdict_id);
	suggested = amp_lock_suggestions();
	amp_lock_description(description, sizeof(description), after->task_id, s,
			     s->lock_threshold, verdict_id);
	status = amp_write_add_escalation(set, w, after, "hallucination_lock", "critical",
					  description, affected, suggested, now_ms, res, out, err);
cleanup:
	json_decref(affected);
	json_decref(suggested);
	amp_task_state_free(&own);
	return status;
}

void amp_write_log_rejection(amp_store *st, const amp_send_opts *opts,
			     const json_t *msg, int status, amp_errlist *errors,
			     size_t base)
{
	amp_errlist reasons = { 0 };
	amp_error err;
	char *dump = NULL;
	const char *raw = opts->raw;
	size_t len = opts->raw_len, i;

	if (!raw) {
		dump = amp_message_dump(msg);
		raw = dump ? dump : "";
		len = strlen(raw);
	}
	for (i = base; i < errors->count; i++)
		amp_errlist_add(&reasons, errors->items[i].status, errors->items[i].path,
				"%s", errors->items[i].message);
	/* A message we could not log is still refused; say so rather than
	 * lose the reason.  Strict mode not logging a refusal it cannot sign
	 * (AMP_ERULE) leaves the exit code the refusal's. */
	if (amp_store_log_rejection(st, opts->command ? opts->command : "send",
				    opts->source, raw, len, opts->raw_total, status, &reasons,
				    &err) < 0)
		amp_errlist_add(errors, err.status == AMP_ERULE ? AMP_ERULE : AMP_EIO, "",
				"could not write the error log: %s", err.message);
	amp_errlist_free(&reasons);
	free(dump);
}

int amp_write_logged(amp_store *st, int status, const char *command,
		     amp_store_build_fn build, void *ctx, json_t *const *built,
		     json_t *(*asked)(void *ctx), amp_errlist *errors, size_t base)
{
	amp_error err;

	if (status == AMP_OK) {
		status = amp_store_update(st, amp_store_messages_ref(st), build, ctx, NULL, &err);
		if (status < 0 && errors->count == base)
			amp_errlist_add(errors, status, err.path, "%s", err.message);
	}
	/* A lost race is no non-conforming record: only refusals are logged. */
	if ((status == AMP_ERULE || status == AMP_ESCHEMA) && (built || asked)) {
		amp_send_opts opts = { command, "built", NULL, 0, 0, NULL, 0, NULL };
		json_t *attempt = built && *built ? json_incref(*built) : asked ? asked(ctx) : NULL;

		amp_write_log_rejection(st, &opts, attempt, status, errors, base);
		json_decref(attempt);
	}
	return status;
}
