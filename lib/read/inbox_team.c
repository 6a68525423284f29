#include "inbox_team.h"
#include "base/gitobj.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/util.h"
#include "record/record.h"
#include "summary.h"
#include "json/json.h"

/* Adds the task's reports of summary s to team, for role. */
static void add_task(json_t *team, const json_t *s, const char *role, const char *agent,
		     int64_t now_ms)
{
	const json_t *m;
	size_t i;

	if (!strcmp(role, "coordinator")) {
		json_array_foreach(json_object_get(s, "progress"), i, m) {
			json_t *p = json_deep_copy(m);

			json_object_set(p, "task_id", json_object_get(s, "task_id"));
			json_array_append_new(json_object_get(team, "progress"), p);
		}
	}
	json_array_foreach(json_object_get(s, "questions"), i, m) {
		int answered = json_is_object(json_object_get(m, "answer"));
		int64_t due;
		json_t *q;

		if (!strcmp(role, "coordinator") && !answered) {
			q = json_deep_copy(m);
			json_object_del(q, "answer");
			if (amp_time_parse(amp_or_none(amp_json_str(m, "answer_due")), &due) == 0)
				json_object_set_new(q, "due_seconds",
						    json_integer(due >= now_ms ? (due - now_ms) / 1000 :
								 -((now_ms - due + 999) / 1000)));
			json_array_append_new(json_object_get(team, "questions"), q);
		} else if (!strcmp(role, "executor") && answered &&
			   (!agent || !strcmp(amp_or_none(amp_json_str(m, "agent")), agent))) {
			json_array_append_new(json_object_get(team, "answers"), json_deep_copy(m));
		}
	}
	/* The holder told: its lease released by another's hand. */
	json_array_foreach(json_object_get(s, "released"), i, m)
		if (!strcmp(role, "executor") &&
		    (!agent || !strcmp(amp_or_none(amp_json_str(m, "agent")), agent)))
			json_array_append_new(json_object_get(team, "released"), json_deep_copy(m));
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The team of `role` from inbox.json's reports (inbox_team.h):
 * task `task`'s, or all, by name as amp_summary_list_open lists them. */
static int team_from_reports(json_t *team, const json_t *reports, const char *role,
			     const char *agent, const char *task, int64_t now_ms, amp_error *err)
{
	size_t n = json_object_size(reports), i;
	const char **ids;
	const char *id;
	json_t *r;

	if (task) {
		add_task(team, json_object_get(reports, task), role, agent, now_ms);
		return AMP_OK;
	}
	if (!n)
		return AMP_OK;
	if (!(ids = calloc(n, sizeof(*ids))))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	n = 0;
	json_object_foreach((json_t *)reports, id, r)
		ids[n++] = id;
	qsort(ids, n, sizeof(*ids), by_name);
	for (i = 0; i < n; i++)
		add_task(team, json_object_get(reports, ids[i]), role, agent, now_ms);
	free(ids);
	return AMP_OK;
}

int amp_inbox_team_role(const char *role)
{
	return !strcmp(role, "coordinator") || !strcmp(role, "executor");
}

json_t *amp_inbox_team_load(const char *text)
{
	json_t *v = text ? amp_json_loadb(text, strlen(text), 0, NULL, NULL) : NULL;

	if (json_is_object(v))
		return v;
	json_decref(v);
	return NULL;
}

int amp_inbox_team(amp_store *st, const char *role, const char *agent, const char *task,
		   int64_t now_ms, amp_inbox *in, amp_error *err)
{
	git_commit *commit = NULL;
	git_tree *root = NULL;
	amp_task_log log;
	json_t *team, *one = NULL;
	git_oid tip;
	int status = AMP_OK;

	if (!amp_inbox_team_role(role))
		return AMP_OK;
	team = !strcmp(role, "coordinator") ? json_pack("{s:[],s:[]}", "progress", "questions")
					    : json_pack("{s:[],s:[]}", "answers", "released");
	if (!team)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	/* No SSOT yet (nothing to read): nothing reported. */
	if (!*in->tip || git_oid_fromstr(&tip, in->tip) < 0 || !in->reports)
		goto done;
	/* Kept already: the open tasks' reports (amp_inbox_read keeps them,
	 * from inbox.json or from the records --all read). */
	if (!task || json_object_get(in->reports, task)) {
		if ((status = team_from_reports(team, in->reports, role, agent, task, now_ms,
						err)) < 0)
			goto cleanup;
		goto done;
	}
	/* A task they hold nothing of (finished, no reports, or none such):
	 * its records alone. */
	if (amp_git_commit_lookup(&commit, amp_store_repo(st), &tip) < 0 ||
	    amp_git_commit_tree(&root, commit) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read the tip %s", in->tip);
		goto cleanup;
	}
	if ((status = amp_store_read_task(st, root, task, &log, err)) < 0)
		goto cleanup;
	status = amp_summary_team_reports(&log, now_ms, 1, &one, err);
	amp_task_log_free(&log);
	if (status < 0)
		goto cleanup;
	if (one)
		add_task(team, one, role, agent, now_ms);
done:
	json_decref(in->team);
	in->team = team;
	team = NULL;
cleanup:
	json_decref(team);
	json_decref(one);
	git_tree_free(root);
	git_commit_free(commit);
	return status;
}
