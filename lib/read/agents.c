/*
 * agents.c - the `amp agents` report (agents.h), moved out of the
 * protocol's coordination model (protocol/coord.c), which it reads.
 */
#include "agents.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/tempfile.h"
#include "base/util.h"
#include "protocol/protocol.h"
#include "read.h"
#include "record/record.h"
#include "summary.h"

/* What the report keeps of an instance's messages for a glance: its
 * AGENT_RECENT newest, each text cut to AGENT_TEXT_MAX bytes. */
#define AGENT_RECENT 5
#define AGENT_TEXT_MAX 120

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorts an array of strings in place. */
static void sort_strings(json_t *arr)
{
	size_t n = json_array_size(arr), i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && strcmp(json_string_value(json_array_get(arr, j - 1)),
					    json_string_value(json_array_get(arr, j))) > 0; j--) {
			json_t *x = json_incref(json_array_get(arr, j));

			json_array_set(arr, j, json_array_get(arr, j - 1));
			json_array_set_new(arr, j - 1, x);
		}
}

/* The entry of `agent` in `all`, made when missing: what its writes say
 * ("roles" an object of role -> true, while it is gathered). */
static json_t *agent_entry(json_t *all, const char *agent)
{
	json_t *a = json_object_get(all, agent);

	if (!a) {
		a = json_pack("{s:s,s:{},s:n,s:n,s:I,s:n,s:[]}", "agent", agent, "roles", "last_write",
			      "last_task", "writes", (json_int_t)0, "last_heartbeat", "recent");
		json_object_set_new(all, agent, a);
	}
	return a;
}

/* The text of a message for a glance (its payload's description, summary
 * or reason, else its own description or reason), its first line cut to
 * AGENT_TEXT_MAX bytes at a character's start; NULL when it has none. */
static json_t *glance_text(const json_t *doc)
{
	static const char *const keys[] = { "description", "summary", "reason", NULL };
	const json_t *where[] = { json_object_get(doc, "payload"), doc };
	const char *s = NULL;
	char buf[AGENT_TEXT_MAX + 4];
	size_t i, k, n;

	for (i = 0; i < 2 && !s; i++)
		for (k = 0; keys[k] && !s; k++)
			s = amp_json_str(where[i], keys[k]);
	if (!s)
		return NULL;
	n = amp_utf8_prefix(s, AGENT_TEXT_MAX, "\n");
	memcpy(buf, s, n);
	strcpy(buf + n, s[n] ? "..." : "");
	return json_string(buf);
}

/* What a record adds to its writer's glance (newest first): its first
 * heartbeat is its last one; its first AGENT_RECENT messages its recent
 * ones. */
static void note_glance(json_t *a, const amp_log_record *r, const char *type, int64_t t)
{
	json_t *recent = json_object_get(a, "recent");
	char when[AMP_TIME_BUFSZ];

	if (type && !strcmp(type, "heartbeat") && r->kind == AMP_ENTRY_CTL && t >= 0 &&
	    json_is_null(json_object_get(a, "last_heartbeat")))
		json_object_set_new(a, "last_heartbeat", json_string(amp_time_format(t, when)));
	if (r->kind != AMP_ENTRY_MSG || !r->doc || json_array_size(recent) >= AGENT_RECENT)
		return;
	json_array_append_new(recent, json_pack("{s:s?,s:s,s:s?,s:s,s:o*}", "time",
		t >= 0 ? amp_time_format(t, when) : NULL, "task_id", r->task_id, "type",
		amp_json_str(r->doc, "type"), "msg_id", r->id, "text", glance_text(r->doc)));
}

static int note_agent(const amp_log_record *r, void *ctx)
{
	json_t *all = ctx, *a;
	const char *agent = r->agent, *from = amp_json_str(r->doc, "from");
	const char *type = amp_json_str(r->doc, "type");
	char when[AMP_TIME_BUFSZ];
	int64_t t = r->doc ? amp_record_time(r->doc) : -1;

	/* A claim names its instance in the record too (a fetched one). */
	if (!agent && type && !strcmp(type, "claim"))
		agent = amp_json_str(r->doc, "agent");
	if (!agent || !amp_agent_valid(agent, strlen(agent)) || !(a = agent_entry(all, agent)))
		return 0;
	if (from && amp_role_in(from, "admin coordinator executor reviewer"))
		json_object_set_new(json_object_get(a, "roles"), from, json_true());
	json_object_set_new(a, "writes", json_integer(json_integer_value(json_object_get(a, "writes")) + 1));
	note_glance(a, r, type, t);
	/* Newest first: the first record with a time is the last write. */
	if (t >= 0 && json_is_null(json_object_get(a, "last_write"))) {
		json_object_set_new(a, "last_write", json_string(amp_time_format(t, when)));
		/* A register record is a write of no task. */
		json_object_set_new(a, "last_task", *r->task_id ? json_string(r->task_id) : json_null());
	}
	return 0;
}

/* Adds what the newer commits wrote (`fresh`) to what the older ones did
 * (`all`): roles joined, writes added, the newer last write. */
static void merge_agents(json_t *all, json_t *fresh)
{
	const char *name, *role;
	json_t *f, *a, *v;

	json_object_foreach(fresh, name, f) {
		if (!(a = json_object_get(all, name))) {
			json_object_set(all, name, f);
			continue;
		}
		json_object_foreach(json_object_get(f, "roles"), role, v)
			json_object_set_new(json_object_get(a, "roles"), role, json_true());
		json_object_set_new(a, "writes",
				    json_integer(json_integer_value(json_object_get(a, "writes")) +
						 json_integer_value(json_object_get(f, "writes"))));
		if (!json_is_null(json_object_get(f, "last_write"))) {
			json_object_set(a, "last_write", json_object_get(f, "last_write"));
			json_object_set(a, "last_task", json_object_get(f, "last_task"));
		}
		if (!json_is_null(json_object_get(f, "last_heartbeat")))
			json_object_set(a, "last_heartbeat", json_object_get(f, "last_heartbeat"));
		/* The newer messages first, AGENT_RECENT in all. */
		json_array_extend(json_object_get(f, "recent"), json_object_get(a, "recent"));
		while (json_array_size(json_object_get(f, "recent")) > AGENT_RECENT)
			json_array_remove(json_object_get(f, "recent"), AGENT_RECENT);
		json_object_set(a, "recent", json_object_get(f, "recent"));
	}
}

#define AGENTS_CACHE_VERSION 2

/*
 * What the history of the messages ref says of each instance (agent_entry
 * objects by name), kept in <state dir>/agents.json with the tip it was
 * read at and the build that read it (cache.h): on a newer tip that
 * descends from it, only the commits since are walked; on another history
 * or of another build, all of them.  A cache that cannot be
 * read or written costs speed only.
 */
static int agents_seen(amp_store *st, const git_oid *tip, json_t **out, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	/* Its callers (amp agents, the dashboard's pass) hold no revwalk. */
	amp_log_filter f = { .since_ms = INT64_MIN, .until_ms = INT64_MAX, .release_packs = 1 };
	amp_errlist problems = { 0 };
	char path[AMP_PATH_MAX], hex[GIT_OID_HEXSZ + 1];
	json_t *file, *all = NULL, *fresh = NULL;
	amp_tempfile t = { .fd = -1 };
	FILE *tf;
	git_oid since;
	int status = AMP_OK;

	snprintf(path, sizeof(path), "%s/agents.json", amp_store_state_dir(st));
	git_oid_tostr(hex, sizeof(hex), tip);
	file = amp_cache_json(st, path);
	if (file && json_integer_value(json_object_get(file, "version")) == AGENTS_CACHE_VERSION &&
	    amp_json_str(file, "build") && !strcmp(amp_json_str(file, "build"), amp_build_id()) &&
	    json_is_object(json_object_get(file, "agents")) &&
	    git_oid_fromstr(&since, amp_json_str(file, "tip") ? amp_json_str(file, "tip") : "") == 0) {
		if (git_oid_equal(&since, tip)) {
			*out = json_incref(json_object_get(file, "agents"));
			json_decref(file);
			return AMP_OK;
		}
		if (git_graph_descendant_of(repo, tip, &since) == 1) {
			all = json_deep_copy(json_object_get(file, "agents"));
			f.stop = &since;
		}
		git_error_clear();
	}
	json_decref(file);
	if (!all)
		all = json_object();
	if (!all || !(fresh = json_object())) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if ((status = amp_log_walk(st, &f, note_agent, fresh, &problems, err)) < 0)
		goto cleanup;
	merge_agents(all, fresh);
	/* Best effort, written whole then renamed, as the other caches. */
	file = json_pack("{s:i,s:s,s:s,s:O}", "version", AGENTS_CACHE_VERSION, "build", amp_build_id(),
			 "tip", hex, "agents", all);
	if (!file || (mkdir(amp_store_state_dir(st), 0777) < 0 && errno != EEXIST) ||
	    amp_tempfile_open(&t, path, 0) < 0 || !(tf = amp_tempfile_stream(&t)) ||
	    json_dumpf(file, tf, JSON_COMPACT) < 0 || amp_tempfile_commit(&t) < 0)
		amp_tempfile_rollback(&t);
	json_decref(file);
	*out = json_incref(all);
cleanup:
	amp_errlist_free(&problems);
	json_decref(fresh);
	json_decref(all);
	return status;
}

int amp_agents_report(amp_store *st, amp_schema_set *set, int64_t now_ms, json_t **out,
		      amp_error *err)
{
	amp_summaries *cache = NULL;
	json_t *all = NULL, *declared = NULL, *a, *roles, *list, *v;
	git_commit *tipc = NULL;
	git_tree *tip = NULL;
	char **ids = NULL;
	const char *name, *role;
	const char **names = NULL;
	size_t n = 0, i, k, m = 0;
	int status;

	*out = NULL;
	if ((status = amp_store_tip(st, amp_store_messages_ref(st), &tipc, &tip, err)) < 0 ||
	    (status = agents_seen(st, git_commit_id(tipc), &all, err)) < 0 ||
	    (status = amp_registry_read(st, set, tip, &declared, err)) < 0 ||
	    (status = amp_store_list_tasks(st, tip, &ids, &n, err)) < 0)
		goto cleanup;
	/* The cache may be shared with others' reads: work on a copy. */
	a = json_deep_copy(all);
	json_decref(all);
	all = a;
	json_object_foreach(all, name, a)
		json_object_set_new(a, "holds", json_array());
	/* The leases in force, from amp status's cached summaries: no task's
	 * records are read when its directory did not change. */
	cache = amp_summaries_open(st);
	for (i = 0; all && i < n; i++) {
		json_t *sum = amp_summary_get(cache, st, tip, ids[i], now_ms, err), *c;

		if (!sum) {
			status = AMP_EIO;
			goto cleanup;
		}
		json_array_foreach(json_object_get(sum, "claims"), k, c)
			if (!json_is_true(json_object_get(c, "expired")) &&
			    (a = agent_entry(all, amp_json_str(c, "agent")))) {
				if (!json_object_get(a, "holds"))
					json_object_set_new(a, "holds", json_array());
				json_array_append_new(json_object_get(a, "holds"),
					json_pack("{s:s,s:O,s:O}", "task_id", ids[i], "subtask_id",
						  json_object_get(c, "subtask_id"), "expires",
						  json_object_get(c, "expires")));
			}
		json_decref(sum);
	}
	json_object_foreach(declared, name, v) {
		if (!(a = agent_entry(all, name)))
			continue;
		if (!json_object_get(a, "holds"))
			json_object_set_new(a, "holds", json_array());
	}
	*out = json_array();
	if (!all || !*out || !(names = calloc(json_object_size(all) + 1, sizeof(*names)))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	/* Objects iterate in insertion order: by name. */
	json_object_foreach(all, name, a)
		names[m++] = name;
	qsort(names, m, sizeof(*names), cmp_names);
	for (k = 0; k < m; k++) {
		a = json_object_get(all, names[k]);
		list = json_array();
		roles = json_object_get(a, "roles");
		json_object_foreach(roles, role, v)
			json_array_append_new(list, json_string(role));
		sort_strings(list);
		json_object_set_new(a, "roles", list);
		json_object_set(a, "declared", json_object_get(declared, names[k]) ?
			json_object_get(declared, names[k]) : json_null());
		json_array_append(*out, a);
	}
	status = AMP_OK;
cleanup:
	if (status < 0) {
		json_decref(*out);
		*out = NULL;
	}
	free(names);
	amp_summaries_close(cache);
	amp_strv_free(ids, n);
	git_tree_free(tip);
	git_commit_free(tipc);
	json_decref(declared);
	json_decref(all);
	return status;
}
