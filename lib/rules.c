#include "rules.h"

#include <stdio.h>
#include <string.h>

#include "message.h"
#include "util.h"

int amp_rules_is_protected_branch(const json_t *msg)
{
	const char *type = amp_json_str(msg, "type");
	const char *branch = amp_json_str(json_object_get(msg, "payload"), "branch");

	if (!type || strcmp(type, "task_dispatch") || !branch)
		return 0;
	/* Git would resolve "refs/heads/main" to main as well. */
	if (!strncmp(branch, "refs/heads/", 11))
		branch += 11;
	return !strcmp(branch, "main") || !strcmp(branch, "master");
}

static int check_msg_id(const json_t *msg, amp_errlist *errors)
{
	const char *id = amp_json_str(msg, "msg_id");
	const char *type = amp_json_str(msg, "type");
	const char *task = amp_json_str(msg, "task_id");
	char expect[256];
	size_t n;

	if (!id || !type || !task)
		return AMP_OK;
	n = (size_t)snprintf(expect, sizeof(expect), "%s-%s-", type, task);
	if (strncmp(id, expect, n) != 0 || amp_msg_id_ms(id) < 0)
		return amp_errlist_add(errors, AMP_ERULE, "/msg_id",
				       "must be \"%s<unix_ms>\" (type and task_id of this message)",
				       expect);
	return AMP_OK;
}

/* Looks a referenced message up, in the message's own task log or in the
 * SSOT.  Returns 1 found (doc copied into *found when wanted), 0 missing,
 * <0 on read failure. */
static int find_message(amp_store *st, git_tree *tip, const amp_task_log *log,
			const char *msg_id, json_t **found, amp_error *err)
{
	char task[64];
	amp_task_log other;
	const amp_entry *e;
	int status;

	if (found)
		*found = NULL;
	if (amp_msg_id_task(msg_id, task, sizeof(task)) < 0)
		return 0;
	if (!strcmp(task, log->task_id)) {
		e = amp_task_log_find(log, AMP_ENTRY_MSG, msg_id);
		if (e && found)
			*found = json_incref(e->doc);
		return e != NULL;
	}
	if ((status = amp_store_read_task(st, tip, task, &other, err)) < 0)
		return status;
	e = amp_task_log_find(&other, AMP_ENTRY_MSG, msg_id);
	if (e && found)
		*found = json_incref(e->doc);
	status = e != NULL;
	amp_task_log_free(&other);
	return status;
}

static int check_context(amp_store *st, git_tree *tip, const amp_task_log *log,
			 const json_t *msg, amp_errlist *errors)
{
	json_t *refs = json_object_get(msg, "context_ref"), *v;
	char path[64];
	amp_error err;
	size_t i;
	int found, status = AMP_OK;

	json_array_foreach(refs, i, v) {
		if (!json_is_string(v))
			continue;
		snprintf(path, sizeof(path), "/context_ref/%zu", i);
		found = find_message(st, tip, log, json_string_value(v), NULL, &err);
		if (found < 0)
			return amp_errlist_add(errors, AMP_EIO, path, "%s", err.message);
		if (!found)
			status = amp_errlist_add(errors, AMP_ERULE, path,
						 "%s is not in the SSOT (Context Completeness)",
						 json_string_value(v));
	}
	return status;
}

/* A payload reference that must name a message of `type` of this task. */
static int check_payload_ref(amp_store *st, git_tree *tip,
			     const amp_task_log *log, const json_t *payload,
			     const char *key, const char *type,
			     amp_errlist *errors)
{
	const char *ref = amp_json_str(payload, key);
	char path[64], task[64];
	json_t *doc = NULL;
	amp_error err;
	int found, status = AMP_OK;

	if (!ref)
		return AMP_OK;
	snprintf(path, sizeof(path), "/payload/%s", key);
	if (amp_msg_id_task(ref, task, sizeof(task)) < 0 || strcmp(task, log->task_id))
		return amp_errlist_add(errors, AMP_ERULE, path,
				       "%s does not belong to task %s", ref, log->task_id);
	found = find_message(st, tip, log, ref, &doc, &err);
	if (found < 0)
		return amp_errlist_add(errors, AMP_EIO, path, "%s", err.message);
	if (!found)
		status = amp_errlist_add(errors, AMP_ERULE, path,
					 "%s is not in the SSOT (Context Completeness)", ref);
	else if (strcmp(amp_json_str(doc, "type") ? amp_json_str(doc, "type") : "", type))
		status = amp_errlist_add(errors, AMP_ERULE, path,
					 "%s is a %s, not a %s", ref,
					 amp_json_str(doc, "type"), type);
	/* AMP/1.0 §03 trigger: "task_result received with completion_status
	 * = complete"; a partial or failed result goes back to dispatch. */
	else if (!strcmp(type, "task_result") &&
		 strcmp(amp_json_str(json_object_get(doc, "payload"), "completion_status") ?
			amp_json_str(json_object_get(doc, "payload"), "completion_status") : "",
			"complete"))
		status = amp_errlist_add(errors, AMP_ERULE, path,
					 "%s is not complete (completion_status %s): re-dispatch instead of asking for review",
					 ref, amp_json_str(json_object_get(doc, "payload"), "completion_status"));
	json_decref(doc);
	return status;
}

/* The latest dispatch of the task listing `subtask_id`, or NULL. */
static const json_t *dispatch_with_subtask(const amp_task_log *log,
					   const char *subtask_id)
{
	const json_t *best = NULL;
	size_t i, j;

	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		json_t *subtasks, *st;
		const char *type = amp_json_str(e->doc, "type");

		if (e->kind != AMP_ENTRY_MSG || !type || strcmp(type, "task_dispatch"))
			continue;
		subtasks = json_object_get(json_object_get(e->doc, "payload"), "subtasks");
		json_array_foreach(subtasks, j, st) {
			const char *id = amp_json_str(st, "subtask_id");

			if (id && !strcmp(id, subtask_id))
				best = e->doc;
		}
	}
	return best;
}

static int check_result(const amp_task_log *log, const json_t *payload,
			amp_errlist *errors)
{
	const char *subtask = amp_json_str(payload, "subtask_id");
	const json_t *dispatch, *criteria, *met;
	size_t want, got;

	if (!subtask)
		return AMP_OK;
	if (!(dispatch = dispatch_with_subtask(log, subtask)))
		return amp_errlist_add(errors, AMP_ERULE, "/payload/subtask_id",
				       "%s is not a subtask of any task_dispatch of %s",
				       subtask, log->task_id);
	criteria = json_object_get(json_object_get(dispatch, "payload"),
				   "acceptance_criteria");
	met = json_object_get(json_object_get(payload, "self_assessment"),
			      "criteria_met");
	want = json_array_size(criteria);
	got = json_array_size(met);
	if (json_is_array(met) && got != want)
		return amp_errlist_add(errors, AMP_ERULE,
				       "/payload/self_assessment/criteria_met",
				       "has %zu entries; the dispatch %s has %zu acceptance criteria (one entry each)",
				       got, amp_json_str(dispatch, "msg_id"), want);
	return AMP_OK;
}

static int check_review_request(const amp_task_state *s, const json_t *payload,
				amp_errlist *errors)
{
	json_t *count = json_object_get(payload, "reject_count");
	json_t *ci = json_object_get(payload, "ci_status"), *v;
	const char *notes = amp_json_str(payload, "coordinator_notes");
	const char *key;
	char path[AMP_PATH_MAX];
	int status = AMP_OK;

	/* AMP/1.0 §03: reject_count is "the cumulative number of rejects for
	 * the current task_id"; the SSOT is the one source of that number. */
	if (json_is_integer(count) && json_integer_value(count) != s->reject_count)
		status = amp_errlist_add(errors, AMP_ERULE, "/payload/reject_count",
					 "is %lld but the SSOT counts %d rejected verdicts for this task",
					 (long long)json_integer_value(count), s->reject_count);
	/* AMP/1.0 §03 Lock Warning. */
	if (s->reject_count >= 2 && (!notes || !strstr(notes, "Lock is approaching")))
		status = amp_errlist_add(errors, AMP_ERULE, "/payload/coordinator_notes",
					 "must say \"Lock is approaching\": the task has %d rejects",
					 s->reject_count);
	/* AMP/1.0 §03 CI Gating: re-dispatch instead of asking for review. */
	json_object_foreach(ci, key, v) {
		if (json_is_string(v) && !strcmp(json_string_value(v), "failed")) {
			path[0] = '\0';
			snprintf(path, sizeof(path), "/payload/ci_status");
			amp_pointer_append(path, sizeof(path), key);
			status = amp_errlist_add(errors, AMP_ERULE, path,
						 "CI failed: send a task_dispatch to fix it instead of a review_request (CI Gating)");
		}
	}
	return status;
}

int amp_rules_check_send(amp_store *st, git_tree *tip, const amp_task_log *log,
			 const json_t *msg, amp_errlist *errors)
{
	const char *type = amp_json_str(msg, "type");
	const char *from = amp_json_str(msg, "from");
	const json_t *payload = json_object_get(msg, "payload");
	size_t before = errors->count, i;
	amp_task_state s;

	amp_task_state_compute(log, &s);
	check_msg_id(msg, errors);
	/* AMP/1.0 §05 Critical = Suspend All: nothing moves until the admin
	 * resumes.  Escalations stay open: they are how anyone tells the admin
	 * (No Silent Failure). */
	if (s.suspended && from && strcmp(from, "admin") &&
	    (!type || strcmp(type, "escalation")))
		amp_errlist_add(errors, AMP_ERULE, "/task_id",
				"task %s is %s by escalation %s: only the admin may act until 'amp resume'",
				log->task_id, s.state, s.suspended_by);
	check_context(st, tip, log, msg, errors);
	if (type && !strcmp(type, "task_result")) {
		check_result(log, payload, errors);
	} else if (type && !strcmp(type, "review_request")) {
		check_payload_ref(st, tip, log, payload, "original_dispatch_ref",
				  "task_dispatch", errors);
		check_payload_ref(st, tip, log, payload, "task_result_ref",
				  "task_result", errors);
		check_review_request(&s, payload, errors);
	}
	for (i = before; i < errors->count; i++)
		if (errors->items[i].status == AMP_EIO)
			return AMP_EIO;
	return errors->count > before ? AMP_ERULE : AMP_OK;
}
