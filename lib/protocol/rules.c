#include "rules.h"
#include "coord.h"
#include "round.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "record/record.h"
#include "base/refname.h"
#include "base/util.h"

int amp_rules_is_protected_branch(amp_store *st, const json_t *msg)
{
	const char *type = amp_json_str(msg, "type");
	const char *branch = amp_json_str(json_object_get(msg, "payload"), "branch");
	char extra[1024] = "";

	if (!type || strcmp(type, "task_dispatch") || !branch ||
	    amp_refname_branch_problem(branch))
		return 0;
	if (st)
		amp_store_config(st, "amp.protectedBranches", extra, sizeof(extra));
	return amp_refname_may_be_protected(branch, extra);
}

int amp_rules_branch_refusal(amp_store *st, const json_t *msg,
			     const amp_errlist *schema_errors, size_t base)
{
	size_t i;

	for (i = base; i < schema_errors->count; i++)
		if (strcmp(schema_errors->items[i].path, "/payload/branch"))
			return 0;
	return amp_rules_is_protected_branch(st, msg);
}

/* The words of a CI state that mean it failed; see rules.h. */
static const char *const ci_failing[] = {
	"fail", "failed", "failure", "failing", "error", "errored",
	"broken", "timed_out", "timedout", "timeout",
};

int amp_rules_ci_failed(const char *state)
{
	size_t i, n;

	if (!state)
		return 0;
	while (isspace((unsigned char)*state))
		state++;
	n = strlen(state);
	while (n && isspace((unsigned char)state[n - 1]))
		n--;
	for (i = 0; i < sizeof(ci_failing) / sizeof(ci_failing[0]); i++)
		if (strlen(ci_failing[i]) == n && !strncasecmp(state, ci_failing[i], n))
			return 1;
	return 0;
}

static int check_msg_id(const json_t *msg, amp_errlist *errors)
{
	const char *id = amp_json_str(msg, "msg_id");
	const char *type = amp_json_str(msg, "type");
	const char *task = amp_json_str(msg, "task_id");
	char expect[256];
	size_t n;

	const char *ts = amp_json_str(msg, "timestamp");
	int64_t id_ms, ts_ms;

	if (!id || !type || !task)
		return AMP_OK;
	n = (size_t)snprintf(expect, sizeof(expect), "%s-%s-", type, task);
	if (strncmp(id, expect, n) != 0 || (id_ms = amp_msg_id_ms(id)) < 0)
		return amp_errlist_add(errors, AMP_ERULE, "/msg_id",
				       "must be \"%s<unix_ms>\" (type and task_id of this message)",
				       expect);
	/* AMP/1.0 §00: msg_id is "{type}-{task_id}-{unix_ms}", the time of
	 * sending, which the timestamp states too.  They may differ a little:
	 * a timestamp to the second, two clock reads, and the next free
	 * millisecond amp takes when one is used. */
	if (ts && amp_time_parse(ts, &ts_ms) == 0 &&
	    (id_ms > ts_ms + AMP_RULES_MSG_ID_SKEW_MS ||
	     id_ms < ts_ms - AMP_RULES_MSG_ID_SKEW_MS))
		return amp_errlist_add(errors, AMP_ERULE, "/msg_id",
				       "its unix_ms %lld is %lld s away from the timestamp %s (at most %d s allowed)",
				       (long long)id_ms, (long long)((id_ms - ts_ms) / 1000),
				       ts, AMP_RULES_MSG_ID_SKEW_MS / 1000);
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

/* AMP/1.0 §03 Context Completeness: each msg_id of the array `refs`
 * (found at JSON pointer `where`) names a record of the SSOT.  A record of
 * this task counts even when unreadable: its id is taken, and the watcher
 * escalates exactly those (No Silent Failure). */
static int check_refs(amp_store *st, git_tree *tip, const amp_task_log *log,
		      const json_t *refs, const char *where, amp_errlist *errors)
{
	json_t *v;
	char path[96];
	amp_error err;
	size_t i;
	int found, status = AMP_OK;

	json_array_foreach(refs, i, v) {
		if (!json_is_string(v) || amp_task_log_id_taken(log, json_string_value(v)))
			continue;
		snprintf(path, sizeof(path), "%s/%zu", where, i);
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
					 amp_or_none(amp_json_str(doc, "type")), type);
	/* AMP/1.0 §03 trigger: "task_result received with completion_status
	 * = complete"; a partial or failed result goes back to dispatch. */
	else if (!strcmp(type, "task_result") &&
		 strcmp(amp_json_str(json_object_get(doc, "payload"), "completion_status") ?
			amp_json_str(json_object_get(doc, "payload"), "completion_status") : "",
			"complete"))
		status = amp_errlist_add(errors, AMP_ERULE, path,
					 "%s is not complete (completion_status %s): re-dispatch instead of asking for review",
					 ref, amp_or_none(amp_json_str(json_object_get(doc, "payload"), "completion_status")));
	json_decref(doc);
	return status;
}

/* A refusal by the transition table: `event` on subtask `sub` in `state`. */
static int refuse_transition(amp_errlist *errors, const char *path, const char *event,
			     const char *sub, const char *state)
{
	const amp_transition *t = amp_transition_find(event, state);

	return amp_errlist_add(errors, AMP_ERULE, path,
			       "a %s is refused while subtask %s is %s: %s",
			       event, sub, state, t ? t->effect : "no such transition");
}

static int check_result(const amp_task_log *log, const amp_task_state *s,
			const json_t *payload, amp_errlist *errors)
{
	const char *subtask = amp_json_str(payload, "subtask_id");
	const amp_subtask *sub;
	const json_t *dispatch, *criteria, *met;
	size_t want, got;

	if (!subtask)
		return AMP_OK;
	if (!(sub = amp_task_subtask(s, subtask)))
		return amp_errlist_add(errors, AMP_ERULE, "/payload/subtask_id",
				       "%s is not a subtask of any task_dispatch of %s: a task_result is refused while its subtask is new",
				       subtask, log->task_id);
	if (!amp_transition_find("task_result", sub->state)->allowed)
		return refuse_transition(errors, "/payload/subtask_id", "task_result",
					 subtask, sub->state);
	dispatch = sub->dispatch;
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
				       got, amp_or_none(amp_json_str(dispatch, "msg_id")), want);
	return AMP_OK;
}

/* A review_request names the current round of one subtask: its dispatch,
 * and its latest result (complete: check_payload_ref), and the subtask must
 * be waiting for a review. */
static int check_request_round(const amp_task_log *log, const amp_task_state *s,
			       const json_t *payload, amp_errlist *errors)
{
	const char *result_id = amp_json_str(payload, "task_result_ref");
	const char *dispatch_id = amp_json_str(payload, "original_dispatch_ref");
	const char *scope = amp_json_str(payload, "review_scope");
	const amp_entry *r = result_id ? amp_task_log_find(log, AMP_ENTRY_MSG, result_id) : NULL;
	const char *subtask = r ? amp_json_str(json_object_get(r->doc, "payload"), "subtask_id") : NULL;
	const amp_subtask *sub = amp_task_subtask(s, subtask);
	const char *latest, *current;

	if (!r)
		return AMP_OK; /* check_payload_ref says what is wrong */
	/* A result in the SSOT that no dispatch asked for (it came by a fetch
	 * or a hand-made commit): its subtask is new. */
	if (!sub)
		return refuse_transition(errors, "/payload/task_result_ref", "review_request",
					 amp_or_none(subtask), "new");
	latest = amp_json_str(sub->result, "msg_id");
	current = amp_json_str(sub->dispatch, "msg_id");
	if (!strcmp(sub->state, "submitted") && (!latest || strcmp(latest, result_id)))
		return amp_errlist_add(errors, AMP_ERULE, "/payload/task_result_ref",
				       "%s is not the latest task_result of subtask %s: review %s",
				       result_id, subtask, amp_or_none(latest));
	if (!amp_transition_find("review_request", sub->state)->allowed)
		return refuse_transition(errors, "/payload/task_result_ref", "review_request",
					 subtask, sub->state);
	if (dispatch_id && current && strcmp(dispatch_id, current))
		return amp_errlist_add(errors, AMP_ERULE, "/payload/original_dispatch_ref",
				       "%s is not the dispatch of subtask %s's current round (%s)",
				       dispatch_id, subtask, current);
	/* AMP/1.0 §03 review_scope: "incremental: Only new diffs since the
	 * last verdict are reviewed", so there must have been one. */
	if (scope && !strcmp(scope, "incremental") && !sub->rejects && !sub->verdict)
		return amp_errlist_add(errors, AMP_ERULE, "/payload/review_scope",
				       "is \"incremental\", but subtask %s has no earlier verdict to review from: its first review is \"full\"",
				       subtask);
	return AMP_OK;
}

/* AMP/1.0 §01 risk_level "Determines the approval path": the current
 * dispatch of a subtask `msg` (a dispatch not by the admin) lists again,
 * whose risk level needs the admin's approval while msg's does not: msg
 * would take the subtask out of the approval path.  NULL when none. */
static const json_t *lowered_risk(const amp_task_log *log, const amp_task_state *s,
				  const json_t *msg)
{
	json_t *subtasks = json_object_get(json_object_get(msg, "payload"), "subtasks"), *v;
	const char *from = amp_json_str(msg, "from");
	size_t i;

	if ((from && !strcmp(from, "admin")) || amp_task_needs_approval(log, msg))
		return NULL;
	json_array_foreach(subtasks, i, v) {
		const amp_subtask *sub = amp_task_subtask(s, amp_json_str(v, "subtask_id"));

		if (sub && sub->dispatch && amp_task_needs_approval(log, sub->dispatch))
			return sub->dispatch;
	}
	return NULL;
}

/* Every subtask a dispatch lists may be dispatched (again), and not out
 * of the approval path. */
static int check_dispatch_round(const amp_task_log *log, const amp_task_state *s,
				const json_t *msg, amp_errlist *errors)
{
	const json_t *payload = json_object_get(msg, "payload");
	json_t *subtasks = json_object_get(payload, "subtasks"), *v;
	const json_t *before = lowered_risk(log, s, msg);
	char path[64];
	size_t i;
	int status = AMP_OK;

	if (before)
		status = amp_errlist_add(errors, AMP_ERULE, "/payload/risk_level",
					 "is %s, but %s (risk_level %s) needs the admin's approval: only the admin may dispatch its subtasks again at a level that needs none (git config amp.approvalRequired)",
					 amp_or_none(amp_json_str(payload, "risk_level")),
					 amp_or_none(amp_json_str(before, "msg_id")),
					 amp_or_none(amp_json_str(json_object_get(before, "payload"), "risk_level")));
	json_array_foreach(subtasks, i, v) {
		const amp_subtask *sub = amp_task_subtask(s, amp_json_str(v, "subtask_id"));

		if (!sub || amp_transition_find("task_dispatch", sub->state)->allowed)
			continue;
		/* The admin reopens an aborted task with a new round (task.h). */
		if (s->aborted && !strcmp(sub->state, "in_review") &&
		    !strcmp(amp_or_none(amp_json_str(msg, "from")), "admin"))
			continue;
		snprintf(path, sizeof(path), "/payload/subtasks/%zu/subtask_id", i);
		status = refuse_transition(errors, path, "task_dispatch", sub->id, sub->state);
	}
	return status;
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
		if (amp_rules_ci_failed(json_string_value(v))) {
			path[0] = '\0';
			snprintf(path, sizeof(path), "/payload/ci_status");
			amp_pointer_append(path, sizeof(path), key);
			status = amp_errlist_add(errors, AMP_ERULE, path,
						 "CI failed (\"%s\"): send a task_dispatch to fix it instead of a review_request (CI Gating)",
						 json_string_value(v));
		}
	}
	return status;
}

/* AMP/1.0 §02: a task_result's subtask_id must "correlate accurately and
 * prevent ambiguity", which two subtasks of one id would defeat. */
static int check_dispatch(const json_t *payload, amp_errlist *errors)
{
	json_t *subtasks = json_object_get(payload, "subtasks");
	const char *a, *b;
	char path[64];
	size_t i, j;
	int status = AMP_OK;

	for (i = 0; i < json_array_size(subtasks); i++) {
		if (!(a = amp_json_str(json_array_get(subtasks, i), "subtask_id")))
			continue;
		for (j = 0; j < i; j++) {
			b = amp_json_str(json_array_get(subtasks, j), "subtask_id");
			if (b && !strcmp(a, b)) {
				snprintf(path, sizeof(path), "/payload/subtasks/%zu/subtask_id", i);
				status = amp_errlist_add(errors, AMP_ERULE, path,
							 "%s is also subtask %zu: subtask_ids are unique within a dispatch",
							 a, j);
				break;
			}
		}
	}
	return status;
}

/* A verdict naming review_request `named`, which awaits none: the table's
 * refusal for the state of the subtask it reviewed (approved or rejected:
 * it has its verdict; any other, or in review under a newer request: it is
 * not open). */
static int refuse_answered(const amp_task_log *log, const amp_task_state *s,
			   const char *named, amp_errlist *errors)
{
	const amp_entry *q = amp_task_log_find(log, AMP_ENTRY_MSG, named);
	const char *rid = q ? amp_json_str(json_object_get(q->doc, "payload"), "task_result_ref") : NULL;
	const amp_entry *r = rid ? amp_task_log_find(log, AMP_ENTRY_MSG, rid) : NULL;
	const char *sid = r ? amp_json_str(json_object_get(r->doc, "payload"), "subtask_id") : NULL;
	const amp_subtask *sub = amp_task_subtask(s, sid);
	const char *state = sub ? sub->state : "new";
	const amp_transition *t = amp_transition_find("review_verdict",
						      strcmp(state, "in_review") ? state : "*");

	return amp_errlist_add(errors, AMP_ERULE, "/context_ref",
			       "review_request %s is not awaiting a verdict: a review_verdict is refused while subtask %s is %s: %s (one verdict answers one review_request)",
			       named, amp_or_none(sid), state, t ? t->effect : "no such transition");
}

/* AMP/1.0 §04: a review_verdict answers a review_request, one verdict per
 * request; and its criteria_results "are given one by one against the
 * acceptance_criteria" of the dispatch under review.  The text is not
 * compared: the seed's own example paraphrases its criteria. */
static int check_verdict(const amp_task_log *log, const amp_task_state *s,
			 const json_t *msg, amp_errlist *errors)
{
	const json_t *payload = json_object_get(msg, "payload"), *refs, *v;
	const amp_subtask *sub;
	const json_t *request = amp_task_verdict_request(log, s, msg, &sub);
	const char *ref, *named = NULL;
	const amp_entry *e;
	json_t *criteria, *results = json_object_get(payload, "criteria_results");
	size_t i, open = 0;

	if (!sub) {
		refs = json_object_get(msg, "context_ref");
		json_array_foreach(refs, i, v) {
			const amp_entry *q = amp_task_log_find(log, AMP_ENTRY_MSG, json_string_value(v));
			const char *t = q ? amp_json_str(q->doc, "type") : NULL;

			if (t && !strcmp(t, "review_request")) {
				named = q->id;
				break;
			}
		}
		for (i = 0; i < s->nsubtasks; i++)
			open += !strcmp(s->subtasks[i].state, "in_review");
		if (named)
			return refuse_answered(log, s, named, errors);
		if (open > 1)
			return amp_errlist_add(errors, AMP_ERULE, "/context_ref",
					       "%zu review_requests of task %s await a verdict: name the one this verdict answers in context_ref",
					       open, log->task_id);
		return amp_errlist_add(errors, AMP_ERULE, "/context_ref",
				       "no review_request of task %s awaits a verdict (the task is %s): a review_verdict answers one",
				       log->task_id, s->state);
	}
	ref = amp_json_str(json_object_get(request, "payload"), "original_dispatch_ref");
	e = ref ? amp_task_log_find(log, AMP_ENTRY_MSG, ref) : NULL;
	if (!e)
		return AMP_OK;
	criteria = json_object_get(json_object_get(e->doc, "payload"), "acceptance_criteria");
	if (json_array_size(results) != json_array_size(criteria))
		return amp_errlist_add(errors, AMP_ERULE, "/payload/criteria_results",
				       "has %zu entries; the dispatch %s under review has %zu acceptance criteria (one entry each)",
				       json_array_size(results), ref, json_array_size(criteria));
	return AMP_OK;
}

/* AMP/1.0 §05: affected_msgs are messages, and the snapshot is the
 * system's, not the sender's account of it. */
static int check_escalation(amp_store *st, git_tree *tip, const amp_task_log *log,
			    const amp_task_state *s, const json_t *payload,
			    amp_errlist *errors)
{
	json_t *snap = json_object_get(payload, "system_state_snapshot");
	json_t *count = json_object_get(snap, "reject_count");
	json_t *last = json_object_get(snap, "last_successful_msg_id");
	const char *status_name = amp_json_str(snap, "task_status");
	const char *severity = amp_json_str(payload, "severity");
	const char *want_last = s->last_successful_msg_id;
	int status;

	if ((status = check_refs(st, tip, log, json_object_get(payload, "affected_msgs"),
				 "/payload/affected_msgs", errors)) == AMP_EIO)
		return status;
	if (json_is_integer(count) && json_integer_value(count) != s->reject_count)
		status = amp_errlist_add(errors, AMP_ERULE,
					 "/payload/system_state_snapshot/reject_count",
					 "is %lld but the SSOT counts %d rejected verdicts for this task",
					 (long long)json_integer_value(count), s->reject_count);
	if ((json_is_null(last) && want_last) ||
	    (json_is_string(last) && (!want_last || strcmp(json_string_value(last), want_last))))
		status = amp_errlist_add(errors, AMP_ERULE,
					 "/payload/system_state_snapshot/last_successful_msg_id",
					 "is %s but the SSOT's is %s",
					 json_is_string(last) ? json_string_value(last) : "null",
					 want_last ? want_last : "null");
	/* The state now, or the one a critical escalation puts the task in. */
	if (status_name && strcmp(status_name, s->state) &&
	    !(severity && !strcmp(severity, "critical") &&
	      (!strcmp(status_name, "suspended") || !strcmp(status_name, "locked"))))
		status = amp_errlist_add(errors, AMP_ERULE,
					 "/payload/system_state_snapshot/task_status",
					 "is \"%s\" but the task is %s%s", status_name, s->state,
					 severity && !strcmp(severity, "critical") ?
					 " (or suspended/locked by this critical escalation)" : "");
	return status;
}

int amp_rules_check_repo(const json_t *msg, amp_errlist *errors)
{
	const char *type = amp_json_str(msg, "type");
	const char *repo = amp_json_str(json_object_get(msg, "payload"), "repo");
	char dotgit[4096];
	struct stat sb;

	if (!type || strcmp(type, "task_dispatch") || !repo)
		return AMP_OK;
	/* AMP/1.0 §01 repo: "must exist .git" -- a work tree's .git is a
	 * directory, a linked worktree's or a submodule's a gitfile. */
	if (stat(repo, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return amp_errlist_add(errors, AMP_ERULE, "/payload/repo",
				       "%s is not a directory on this machine (git config amp.checkRepo false when the repository is on another)",
				       repo);
	snprintf(dotgit, sizeof(dotgit), "%s/.git", repo);
	if (stat(dotgit, &sb) < 0 || !(S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode)))
		return amp_errlist_add(errors, AMP_ERULE, "/payload/repo",
				       "%s has no .git: not a git repository", repo);
	return AMP_OK;
}

/* amp depend (coord.h): a dispatch waits for every hard dependency to be
 * approved; a soft one is the caller's warning (amp send). */
static void check_depends(amp_store *st, git_tree *tip, const amp_task_log *log,
			  amp_errlist *errors)
{
	json_t *waits = NULL, *d;
	amp_error err;
	size_t i;

	if (amp_coord_waits(st, tip, log, &waits, &err) < 0) {
		amp_errlist_add(errors, err.status, "", "%s", err.message);
		return;
	}
	json_array_foreach(waits, i, d)
		if (!json_is_true(json_object_get(d, "soft")))
			amp_errlist_add(errors, AMP_ERULE, "/task_id",
					"task %s waits for %s (%s): a dispatch is refused until it is approved (amp depend)",
					log->task_id, amp_json_str(d, "task_id"), amp_json_str(d, "state"));
	json_decref(waits);
}

/* amp_rules_check_send with the state of log when `state` is not NULL. */
static int check_send(amp_store *st, git_tree *tip, const amp_task_log *log,
		      const amp_task_state *state, const json_t *msg, const char *agent,
		      amp_errlist *errors)
{
	const char *type = amp_json_str(msg, "type");
	const char *from = amp_json_str(msg, "from");
	const json_t *payload = json_object_get(msg, "payload");
	size_t before = errors->count, i;
	amp_task_state own = { 0 };
	const amp_task_state *sp = state;
	char why[512];
	int closed;

	if (!sp) {
		amp_task_state_compute(log, &own);
		sp = &own;
	}
	check_msg_id(msg, errors);
	/* AMP/1.0 §05 Critical = Suspend All: nothing moves until the admin
	 * resumes.  Escalations stay open: they are how anyone tells the admin
	 * (No Silent Failure).  An aborted task takes the admin's writes, and
	 * the enforcer's escalations about what reached it anyway. */
	closed = amp_task_closed_to(sp, from, why, sizeof(why));
	if ((closed == 1 && (!type || strcmp(type, "escalation"))) ||
	    (closed == 2 && !(type && !strcmp(type, "escalation") && from &&
			      !strcmp(from, "system"))))
		amp_errlist_add(errors, AMP_ERULE, "/task_id", "task %s %s", log->task_id, why);
	/* A claimed task takes the holder's executor writes only (coord.h);
	 * an escalation still reaches the admin (No Silent Failure). */
	else if ((!type || strcmp(type, "escalation")) &&
		 amp_coord_check_write(log, from, agent, amp_record_time(msg),
				       why, sizeof(why)) < 0)
		amp_errlist_add(errors, AMP_ERULE, "/from", "%s", why);
	else if (amp_coord_check_result(log, msg, agent, why, sizeof(why)) < 0 ||
		 amp_round_check_message(log, sp, msg, agent, why, sizeof(why)) < 0)
		amp_errlist_add(errors, AMP_ERULE, "/from", "%s", why);
	check_refs(st, tip, log, json_object_get(msg, "context_ref"), "/context_ref", errors);
	if (type && !strcmp(type, "task_dispatch")) {
		check_depends(st, tip, log, errors);
		check_dispatch(payload, errors);
		check_dispatch_round(log, sp, msg, errors);
	} else if (type && !strcmp(type, "review_verdict")) {
		check_verdict(log, sp, msg, errors);
	} else if (type && !strcmp(type, "escalation")) {
		check_escalation(st, tip, log, sp, payload, errors);
	} else if (type && !strcmp(type, "task_result")) {
		check_result(log, sp, payload, errors);
	} else if (type && !strcmp(type, "review_request")) {
		size_t base = errors->count;

		check_payload_ref(st, tip, log, payload, "original_dispatch_ref",
				  "task_dispatch", errors);
		check_payload_ref(st, tip, log, payload, "task_result_ref",
				  "task_result", errors);
		if (errors->count == base)
			check_request_round(log, sp, payload, errors);
		check_review_request(sp, payload, errors);
	}
	amp_task_state_free(&own);
	for (i = before; i < errors->count; i++)
		if (errors->items[i].status == AMP_EIO)
			return AMP_EIO;
	return errors->count > before ? AMP_ERULE : AMP_OK;
}

int amp_rules_check_send(amp_store *st, git_tree *tip, const amp_task_log *log,
			 const json_t *msg, const char *agent, amp_errlist *errors)
{
	return check_send(st, tip, log, NULL, msg, agent, errors);
}

int amp_rules_check_send_in(amp_store *st, git_tree *tip, const amp_task_log *log,
			    const amp_task_state *state, const json_t *msg, const char *agent,
			    amp_errlist *errors)
{
	return check_send(st, tip, log, state, msg, agent, errors);
}

const char *amp_rules_unapproved_dispatch(const amp_task_log *log, const amp_task_state *state,
					  const json_t *msg, const char *ack_for)
{
	const char *type = amp_json_str(msg, "type");
	const char *found = NULL;
	const amp_subtask *sub = NULL;
	amp_task_state computed = { 0 };
	const amp_task_state *sp = state;
	static char id[256];

	if (!sp) {
		amp_task_state_compute(log, &computed);
		sp = &computed;
	}
	if (ack_for) {
		size_t i;

		for (i = 0; i < sp->nsubtasks; i++)
			if (!strcmp(sp->subtasks[i].state, "awaiting_approval") &&
			    !strcmp(amp_or_none(amp_json_str(sp->subtasks[i].dispatch, "msg_id")), ack_for))
				sub = &sp->subtasks[i];
	} else if (type && !strcmp(type, "task_result")) {
		sub = amp_task_subtask(sp, amp_json_str(json_object_get(msg, "payload"), "subtask_id"));
		if (sub && strcmp(sub->state, "awaiting_approval"))
			sub = NULL;
	} else if (type && !strcmp(type, "task_dispatch")) {
		const json_t *before = lowered_risk(log, sp, msg);

		if (before && amp_json_str(before, "msg_id")) {
			snprintf(id, sizeof(id), "%s", amp_json_str(before, "msg_id"));
			found = id;
		}
	}
	if (sub && amp_json_str(sub->dispatch, "msg_id")) {
		snprintf(id, sizeof(id), "%s", amp_json_str(sub->dispatch, "msg_id"));
		found = id;
	}
	amp_task_state_free(&computed);
	return found;
}

int amp_rules_aborted_refusal(const amp_task_log *log, const json_t *msg,
			      char *desc, size_t descsz, char *cause, size_t causesz)
{
	const char *from = amp_json_str(msg, "from"), *type = amp_json_str(msg, "type");
	const char *last;
	amp_task_state s;
	char why[512];
	int refused;

	amp_task_state_compute(log, &s);
	last = amp_json_str(s.last_dispatch, "msg_id");
	refused = last && from && strcmp(from, "system") &&
		  amp_task_closed_to(&s, from, why, sizeof(why)) == 2;
	if (refused) {
		snprintf(desc, descsz, "The %.20s's %.40s was refused: task %s %s. Agents still write to it: reopen it with a new task_dispatch from the admin, or tell them it ended.",
			 from, amp_or_none(type), log->task_id, why);
		snprintf(cause, causesz, "%s", last);
	}
	amp_task_state_free(&s);
	return refused;
}

int amp_rules_check_ack(const amp_task_log *log, size_t i, amp_errlist *errors)
{
	const amp_entry *e = &log->entries[i];
	amp_task_log before = *log;
	const amp_entry *m;
	const char *from = amp_json_str(e->doc, "from"), *to;

	before.count = i;
	m = amp_task_log_find(&before, AMP_ENTRY_MSG, e->id);
	to = m ? amp_json_str(m->doc, "to") : NULL;
	if (!amp_task_entry_in_place(log, e))
		return amp_errlist_add(errors, AMP_ERULE, "/ack_for",
				       "its ack_for/task_id do not match its place");
	if (!m)
		return amp_errlist_add(errors, AMP_ERULE, "/ack_for",
				       "acknowledges %.60s, which is not in the SSOT", e->id);
	if (!from || !to || strcmp(from, to))
		return amp_errlist_add(errors, AMP_ERULE, "/from",
				       "only the addressee (%.20s) may ACK, not %.20s",
				       to, from ? from : "nobody");
	if (amp_task_log_find(&before, AMP_ENTRY_ACK, e->id))
		return amp_errlist_add(errors, AMP_ERULE, "/ack_for",
				       "%s is ACKed already", e->id);
	return AMP_OK;
}

int amp_rules_check_replayed(amp_store *st, git_tree *tree, const amp_task_log *before,
			     const amp_task_state *state, const json_t *msg, const char *agent,
			     amp_errlist *errors)
{
	static const char snapshot[] = "/payload/system_state_snapshot";
	amp_errlist found = { 0 };
	int status = check_send(st, tree, before, state, msg, agent, &found);
	size_t k;

	if (status == AMP_ERULE) {
		status = AMP_OK;
		for (k = 0; k < found.count; k++) {
			if (!strncmp(found.items[k].path, snapshot, sizeof(snapshot) - 1))
				continue;
			amp_errlist_add(errors, found.items[k].status, found.items[k].path, "%s",
					found.items[k].message);
			status = AMP_ERULE;
		}
	} else {
		amp_errlist_extend(errors, &found);
	}
	amp_errlist_free(&found);
	return status;
}
