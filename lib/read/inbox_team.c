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

/* The team of `role` from inbox.json's reports (amp_inbox_team_refresh):
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
	git_repository *repo = amp_store_repo(st);
	amp_summaries *cache = NULL;
	git_commit *commit = NULL;
	git_tree *root = NULL;
	git_oid tip, *trees = NULL;
	char **ids = NULL;
	size_t n = 0, finished, i;
	json_t *team;
	int status = AMP_OK;

	if (!amp_inbox_team_role(role))
		return AMP_OK;
	team = !strcmp(role, "coordinator") ? json_pack("{s:[],s:[]}", "progress", "questions")
					    : json_pack("{s:[],s:[]}", "answers", "released");
	if (!team)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	/* No SSOT yet (nothing to read): nothing reported. */
	if (!*in->tip || git_oid_fromstr(&tip, in->tip) < 0)
		goto done;
	/* Warm: inbox.json's, read already. */
	if (in->reports && (!task || json_object_get(in->reports, task))) {
		if ((status = team_from_reports(team, in->reports, role, agent, task, now_ms,
						err)) < 0)
			goto cleanup;
		goto done;
	}
	if (amp_git_commit_lookup(&commit, repo, &tip) < 0 || amp_git_commit_tree(&root, commit) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read the tip %s", in->tip);
		goto cleanup;
	}
	/* A task inbox.json keeps nothing of (finished, no reports, or none
	 * such): its records alone, not the whole status cache. */
	if (!in->reports)
		cache = amp_summaries_open(st);
	if (task) {
		ids = calloc(1, sizeof(*ids));
		if (!ids || !(ids[0] = strdup(task))) {
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
			goto cleanup;
		}
		n = 1;
	} else if ((status = amp_summary_list_open(cache, st, root, now_ms, &ids, &trees, &n,
						   &finished, err)) < 0) {
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		json_t *s = amp_summary_get(cache, st, root, ids[i], now_ms, err);

		if (!s) {
			status = AMP_EIO;
			goto cleanup;
		}
		add_task(team, s, role, agent, now_ms);
		json_decref(s);
	}
done:
	json_decref(in->team);
	in->team = team;
	team = NULL;
cleanup:
	json_decref(team);
	if (ids) {
		for (i = 0; i < n; i++)
			free(ids[i]);
		free(ids);
	}
	free(trees);
	amp_summaries_close(cache);
	git_tree_free(root);
	git_commit_free(commit);
	return status;
}

/* Task `task`'s entry of amp_inbox_team_refresh, or NULL when it is
 * finished or reports nothing; AMP_EIO when its directory cannot be read. */
static int task_reports(amp_summaries *summaries, amp_store *st, git_tree *root,
			const char *task, const git_oid *tree, int64_t now_ms, json_t **out,
			amp_error *err)
{
	amp_summary_brief b;
	json_t *s;

	*out = NULL;
	if (amp_summary_brief_get(summaries, st, root, task, tree, now_ms, &b, err) < 0)
		return AMP_EIO;
	if (!b.extras || amp_summary_finished(&b))
		return AMP_OK;
	if (!(s = amp_summary_get(summaries, st, root, task, now_ms, err)))
		return AMP_EIO;
	if (json_array_size(json_object_get(s, "progress")) ||
	    json_array_size(json_object_get(s, "questions")) ||
	    json_array_size(json_object_get(s, "released")))
		*out = json_pack("{s:s,s:O,s:O,s:O}", "task_id", task,
				 "progress", json_object_get(s, "progress"),
				 "questions", json_object_get(s, "questions"),
				 "released", json_object_get(s, "released"));
	json_decref(s);
	return AMP_OK;
}

int amp_inbox_team_refresh(amp_store *st, git_tree *root, const json_t *touched,
			   const json_t *unreadable, json_t *reports, amp_error *err)
{
	amp_summaries *summaries = NULL;
	const char *task;
	json_t *v, *r;
	int64_t now_ms;
	int status = AMP_OK;

	if (!json_object_size(touched))
		return AMP_OK;
	/* What is kept does not depend on the time: the clock only feeds
	 * the summary. */
	if (amp_clock_now_ms(&now_ms, err) < 0)
		return AMP_EIO;
	summaries = amp_summaries_open(st);
	json_object_foreach((json_t *)touched, task, v) {
		git_tree_entry *te = NULL;
		char dir[128];

		json_object_del(reports, task);
		if (json_object_get(unreadable, task))
			continue;
		if (amp_store_task_lookup(root, task, &te, dir, sizeof(dir)) < 0) {
			git_error_clear();
			continue;
		}
		status = task_reports(summaries, st, root, task, git_tree_entry_id(te), now_ms, &r,
				      err);
		git_tree_entry_free(te);
		if (status < 0)
			break;
		if (r)
			json_object_set_new(reports, task, r);
	}
	amp_summaries_close(summaries);
	return status;
}
