/*
 * guard.c - the work repository's guard (guard.h).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"
#include "guard.h"
#include "base/refname.h"
#include "protocol/protocol.h"
#include "base/util.h"

int amp_guard_is_protected(amp_store *work, amp_store *ssot, const char *ref)
{
	char here[1024] = "", there[1024] = "", list[2100];

	if (strncmp(ref, "refs/heads/", 11) || amp_refname_branch_problem(ref + 11))
		return 0;
	if (work)
		amp_store_config(work, "amp.protectedBranches", here, sizeof(here));
	if (ssot)
		amp_store_config(ssot, "amp.protectedBranches", there, sizeof(there));
	snprintf(list, sizeof(list), "%s %s", here, there);
	return amp_refname_is_protected(ref, list);
}

int amp_guard_head(amp_store *work, char *buf, size_t bufsz, amp_error *err)
{
	git_reference *head = NULL;
	const char *target;

	/* HEAD itself, not what it resolves to: the first commit of a branch
	 * has no commit to resolve to yet. */
	if (git_reference_lookup(&head, amp_store_repo(work), "HEAD") < 0)
		return amp_error_git(err, AMP_EIO, "cannot read HEAD");
	target = git_reference_type(head) == GIT_REFERENCE_SYMBOLIC ?
		 git_reference_symbolic_target(head) : "";
	snprintf(buf, bufsz, "%s", target);
	git_reference_free(head);
	return AMP_OK;
}

/* 1 when s is a remote URL as git reads one: "scheme://..." or the scp
 * form "[user@]host:path" (a colon before any slash). */
static int is_url(const char *s)
{
	const char *colon = strchr(s, ':');

	return strstr(s, "://") || (colon && colon > s && !memchr(s, '/', (size_t)(colon - s)));
}

int amp_guard_open_ssot(amp_store *work, amp_store **ssot, amp_error *err)
{
	git_repository *repo = amp_store_repo(work);
	const char *base = git_repository_workdir(repo), *p;
	char conf[AMP_PATH_MAX], path[AMP_PATH_MAX + 16];
	git_oid oid;
	int n;

	*ssot = NULL;
	if (!amp_store_config(work, "amp.ssot", conf, sizeof(conf)) || !conf[0])
		return amp_error_set(err, AMP_EUSAGE, "",
				     "git config amp.ssot is not set in this repository: set it to the path of the SSOT's repository");
	p = strncmp(conf, "file://", 7) ? conf : conf + 7;
	if (p == conf && is_url(conf))
		return amp_error_set(err, AMP_EUSAGE, "",
				     "git config amp.ssot is '%s', a remote URL: set it to the path of a local clone of the SSOT (amp sync delivers what is written there)",
				     conf);
	if (!base)
		base = git_repository_commondir(repo);
	n = p[0] == '/' ? snprintf(path, sizeof(path), "%s", p)
			: snprintf(path, sizeof(path), "%s/%s", base, p);
	if (n < 0 || (size_t)n >= sizeof(path))
		return amp_error_set(err, AMP_EIO, "", "git config amp.ssot: path too long");
	if (amp_store_open(ssot, path, err) < 0)
		return err->status;
	if (git_reference_name_to_id(&oid, amp_store_repo(*ssot), amp_store_messages_ref(*ssot)) < 0) {
		git_error_clear();
		amp_store_free(*ssot);
		*ssot = NULL;
		return amp_error_set(err, AMP_EIO, "", "no AMP store in %s (git config amp.ssot): run 'amp init' there",
				     path);
	}
	return AMP_OK;
}

/* The latest dispatch of `log` naming repository `real` (a realpath) in
 * its payload.repo, when later than *best_ms: its msg_id into dispatch, its
 * task into task. */
static void latest_dispatch(const amp_task_log *log, const char *real, int64_t *best_ms,
			    char *task, size_t tasksz, char *dispatch, size_t dispatchsz)
{
	char there[PATH_MAX];
	size_t i;

	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *type = amp_json_str(e->doc, "type");
		const char *repo = amp_json_str(json_object_get(e->doc, "payload"), "repo");
		int64_t ms = amp_record_time(e->doc);

		if (e->kind != AMP_ENTRY_MSG || !amp_task_entry_in_place(log, e) || !type ||
		    strcmp(type, "task_dispatch") || !repo || !realpath(repo, there) ||
		    strcmp(there, real) || ms < *best_ms)
			continue;
		*best_ms = ms;
		snprintf(task, tasksz, "%s", log->task_id);
		snprintf(dispatch, dispatchsz, "%s", e->id);
	}
}

int amp_guard_find_task(amp_store *ssot, amp_store *work, char *task, size_t tasksz,
			char *dispatch, size_t dispatchsz, amp_error *err)
{
	const char *env = getenv("AMP_TASK"), *workdir = git_repository_workdir(amp_store_repo(work));
	git_commit *tip = NULL;
	git_tree *tree = NULL;
	amp_task_log log = { 0 };
	amp_task_state s = { 0 };
	char **ids = NULL, real[PATH_MAX];
	size_t count = 0, i;
	int64_t best_ms = -1;
	int status;

	task[0] = dispatch[0] = '\0';
	if (env && *env && !amp_task_id_valid(env, strlen(env)))
		return amp_error_set(err, AMP_EUSAGE, "", "AMP_TASK: '%.80s' is not a task id", env);
	if ((status = amp_store_tip(ssot, amp_store_messages_ref(ssot), &tip, &tree, err)) < 0)
		return status;
	if (env && *env) {
		if ((status = amp_store_read_task(ssot, tree, env, &log, err)) < 0)
			goto cleanup;
		if (!log.count && !log.nbad) {
			status = amp_error_set(err, AMP_EUSAGE, "", "AMP_TASK: task %s is not in the SSOT", env);
			goto cleanup;
		}
		amp_task_state_compute(&log, &s);
		snprintf(task, tasksz, "%s", env);
		if (s.last_dispatch)
			snprintf(dispatch, dispatchsz, "%s",
				 amp_or_none(amp_json_str(s.last_dispatch, "msg_id")));
		goto cleanup;
	}
	if (!workdir || !realpath(workdir, real)) {
		status = amp_error_set(err, AMP_EUSAGE, "",
				       "AMP_TASK is not set and this repository has no work tree to find a dispatch for");
		goto cleanup;
	}
	if ((status = amp_store_list_tasks(ssot, tree, &ids, &count, err)) < 0)
		goto cleanup;
	for (i = 0; i < count; i++) {
		if ((status = amp_store_read_task(ssot, tree, ids[i], &log, err)) < 0)
			goto cleanup;
		amp_task_state_compute(&log, &s);
		if (!s.aborted && strcmp(s.flow_state, "approved"))
			latest_dispatch(&log, real, &best_ms, task, tasksz, dispatch, dispatchsz);
		amp_task_state_free(&s);
		amp_task_log_free(&log);
	}
	if (!task[0])
		status = amp_error_set(err, AMP_EUSAGE, "",
				       "AMP_TASK is not set and no open dispatch in the SSOT names %s",
				       real);
cleanup:
	amp_task_state_free(&s);
	amp_task_log_free(&log);
	amp_strv_free(ids, count);
	git_tree_free(tree);
	git_commit_free(tip);
	return status;
}

int amp_guard_record(amp_store *ssot, amp_schema_set *set, amp_store *work,
		     const char *task, const char *dispatch, const char *role,
		     const char *act, const char *branches, amp_send_result *res,
		     amp_errlist *errors)
{
	const char *workdir = git_repository_workdir(amp_store_repo(work));
	json_t *affected = dispatch[0] ? json_pack("[s]", dispatch) : json_array();
	amp_escalation e = { 0 };
	char description[1536];
	size_t len;
	int status;

	if (!affected)
		return amp_errlist_add(errors, AMP_EIO, "", "out of memory");
	if (!workdir)
		workdir = git_repository_path(amp_store_repo(work));
	len = strlen(workdir);
	if (len > 1 && workdir[len - 1] == '/')
		len--;
	snprintf(description, sizeof(description),
		 "The %.20s tried to %s protected branch %.300s in %.*s; the work repository's hook refused it (AMP/1.0 branch_violation, No Auto-Merge). Work goes on the dispatch's feature branch; only review and the admin bring it to a protected branch.",
		 role, act, branches, (int)(len > 600 ? 600 : len), workdir);
	e.task_id = task;
	e.from = "system";
	e.escalation_type = "branch_violation";
	e.severity = "warning";
	e.triggered_by = role;
	e.description = description;
	e.affected_msgs = affected;
	e.auto_suspended = -1;
	status = amp_send_escalation(ssot, set, &e, NULL, res, errors);
	json_decref(affected);
	return status;
}
