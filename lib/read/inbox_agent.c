#include "inbox_agent.h"
#include "base/gitobj.h"

#include <git2.h>
#include <string.h>

#include "protocol/protocol.h"
#include "record/record.h"

/* The instance the address record of msg_id in log names, or NULL. */
static const char *addressee(const amp_task_log *log, const char *msg_id)
{
	size_t i;

	for (i = 0; i < log->count; i++) {
		const json_t *doc = log->entries[i].doc;
		const char *type = amp_json_str(doc, "type"), *id = amp_json_str(doc, "msg_id");

		if (log->entries[i].kind == AMP_ENTRY_CTL && type && !strcmp(type, "address") &&
		    id && !strcmp(id, msg_id))
			return amp_json_str(doc, "agent");
	}
	return NULL;
}

/* 1 when another instance than agent holds the whole task at now_ms. */
static int taken_by_other(const amp_task_log *log, const char *agent, int64_t now_ms)
{
	amp_leases ls;
	size_t i;

	amp_coord_leases(log, &ls);
	for (i = 0; i < ls.n; i++)
		if (!ls.v[i].subtask[0] && amp_lease_in_force(&ls.v[i], now_ms) &&
		    strcmp(ls.v[i].agent, agent))
			return 1;
	return 0;
}

int amp_inbox_for_agent(amp_store *st, const char *agent, int64_t now_ms,
			amp_inbox *in, amp_error *err)
{
	git_oid oid;
	git_commit *commit = NULL;
	git_tree *root = NULL;
	amp_task_log log;
	json_t *kept = json_array(), *m;
	const char *loaded = NULL;
	size_t i;
	int status = AMP_OK;

	memset(&log, 0, sizeof(log));

	if (!kept)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (!json_array_size(in->messages))
		goto cleanup;
	if (git_oid_fromstr(&oid, in->tip) < 0 ||
	    amp_git_commit_lookup(&commit, amp_store_repo(st), &oid) < 0 ||
	    amp_git_commit_tree(&root, commit) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "cannot read commit %s", in->tip);
		goto cleanup;
	}
	/* The messages come in time order, not by task: each task's records
	 * records are read once per run of its messages. */
	json_array_foreach(in->messages, i, m) {
		const char *task = amp_json_str(m, "task_id"), *to;

		if (!task)
			continue;
		if (!loaded || strcmp(loaded, task)) {
			amp_task_log_free(&log);
			memset(&log, 0, sizeof(log));
			loaded = NULL;
			if ((status = amp_store_read_task(st, root, task, &log, err)) < 0)
				goto cleanup;
			loaded = log.task_id;
		}
		to = addressee(&log, amp_json_str(m, "msg_id") ? amp_json_str(m, "msg_id") : "");
		if (to ? strcmp(to, agent) != 0 : taken_by_other(&log, agent, now_ms))
			continue;
		json_object_set_new(m, "for_agent", to ? json_string(to) : json_null());
		json_array_append(kept, m);
	}
cleanup:
	amp_task_log_free(&log);
	git_tree_free(root);
	git_commit_free(commit);
	if (status == AMP_OK) {
		json_decref(in->messages);
		in->messages = kept;
	} else {
		json_decref(kept);
	}
	return status;
}
