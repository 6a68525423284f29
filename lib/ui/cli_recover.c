/*
 * cli_recover.c - the holder told, and what it still held (issue 33,
 * RepoMesh ACP "recovered"): a heartbeat of an instance whose lease amp
 * watch released (it was given up for dead) gives back every lease it
 * still holds in force and has not renewed since that release, on any task
 * not finished, so that the work is re-queued (amp ready) instead of held
 * by an instance that lost its state.  A lease it renewed after the release
 * (it was alive there) stays.
 */
#include "cli_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/util.h"
#include "protocol/protocol.h"
#include "read/read.h"
#include "record/record.h"
#include "write/write.h"

/* When the release of claim `lost` of task_id happened (Unix ms), or -1. */
static int64_t released_at(amp_store *st, git_tree *root, const char *task_id, const char *lost)
{
	amp_task_log log;
	amp_error err;
	json_t *all;
	const json_t *r;
	int64_t at = -1;
	size_t i;

	if (amp_store_read_task(st, root, task_id, &log, &err) < 0)
		return -1;
	all = amp_coord_released_json(&log);
	json_array_foreach(all, i, r)
		if (!strcmp(amp_or_none(amp_json_str(r, "claim")), lost) &&
		    amp_time_parse(amp_or_none(amp_json_str(r, "at")), &at) < 0)
			at = -1;
	json_decref(all);
	amp_task_log_free(&log);
	return at;
}

/* Releases agent's leases of task_id in force at now and not renewed
 * after since_ms; appends {task_id, claim} of each to out. */
static void release_stale(amp_cli_writer *w, git_tree *root, const char *task_id,
			  const char *agent, int64_t since_ms, const char *reason, json_t *out)
{
	amp_leases *ls = malloc(sizeof(*ls));
	amp_task_log log;
	amp_error err;
	size_t i;

	if (!ls || amp_store_read_task(w->st, root, task_id, &log, &err) < 0) {
		free(ls);
		return;
	}
	amp_coord_leases(&log, ls);
	for (i = 0; i < ls->n; i++) {
		const amp_lease *l = &ls->v[i];
		amp_coord_result res;

		if (strcmp(l->agent, agent) || !amp_lease_in_force(l, w->now_ms) ||
		    l->renewed_ms > since_ms)
			continue;
		if (amp_coord_release(w->st, w->set, task_id, l->subtask[0] ? l->subtask : NULL,
				      "executor", agent, reason, w->now_ms, &res, &w->errors) == AMP_OK)
			json_array_append_new(out, json_pack("{s:s,s:s}", "task_id", task_id,
							     "claim", res.claim));
	}
	amp_task_log_free(&log);
	free(ls);
}

json_t *amp_cli_recover(amp_cli_writer *w, const char *lost)
{
	const char *agent = amp_store_agent(w->st);
	json_t *out = json_array();
	amp_summaries *cache = NULL;
	git_commit *commit = NULL;
	git_tree *root = NULL;
	git_oid *trees = NULL;
	char **ids = NULL, reason[512];
	size_t n = 0, finished, i, k;
	int64_t since;
	amp_error err;

	if (!out || !agent ||
	    amp_store_tip(w->st, amp_store_messages_ref(w->st), &commit, &root, &err) < 0 ||
	    (since = released_at(w->st, root, w->arg, lost)) < 0)
		goto cleanup;
	snprintf(reason, sizeof(reason),
		 "recovered: amp watch released %s of %s, so what %s held and did not renew since is given back",
		 lost, w->arg, agent);
	cache = amp_summaries_open(w->st);
	if (amp_summary_list_open(cache, w->st, root, w->now_ms, &ids, &trees, &n, &finished,
				  &err) < 0)
		goto cleanup;
	for (i = 0; i < n; i++) {
		json_t *s = amp_summary_get(cache, w->st, root, ids[i], w->now_ms, &err);
		const json_t *c;
		int held = 0;

		json_array_foreach(json_object_get(s, "claims"), k, c)
			held |= !strcmp(amp_or_none(amp_json_str(c, "agent")), agent) &&
				!json_is_true(json_object_get(c, "expired"));
		json_decref(s);
		if (held)
			release_stale(w, root, ids[i], agent, since, reason, out);
	}
cleanup:
	amp_strv_free(ids, n);
	free(trees);
	amp_summaries_close(cache);
	git_tree_free(root);
	git_commit_free(commit);
	return out;
}
