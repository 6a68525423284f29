/*
 * summary.c - the cached one-line summaries of `amp status` (summary.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "summary.h"
#include "task.h"

struct amp_summaries {
	amp_store *st;
	json_t *tasks;  /* task id -> {"tree", "summary", "deadlines"} */
	char policy[128];
	int dirty;
};

static void cache_path(amp_store *st, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/status.json", amp_store_state_dir(st));
}

/* The settings the states depend on, as one string. */
static void policy_key(amp_store *st, char *buf, size_t bufsz)
{
	const amp_policy *p = amp_store_policy(st);

	snprintf(buf, bufsz, "1 %d %u %lld", p->lock_threshold, p->approval_levels,
		 (long long)p->max_clock_skew_ms);
}

amp_summaries *amp_summaries_open(amp_store *st)
{
	amp_summaries *c = calloc(1, sizeof(*c));
	char path[PATH_MAX + 32];
	json_t *file;

	if (!c)
		return NULL;
	c->st = st;
	policy_key(st, c->policy, sizeof(c->policy));
	cache_path(st, path, sizeof(path));
	file = json_load_file(path, 0, NULL);
	if (file && json_is_string(json_object_get(file, "policy")) &&
	    !strcmp(json_string_value(json_object_get(file, "policy")), c->policy) &&
	    json_is_object(json_object_get(file, "tasks")))
		c->tasks = json_incref(json_object_get(file, "tasks"));
	json_decref(file);
	if (!c->tasks)
		c->tasks = json_object();
	return c;
}

void amp_summaries_close(amp_summaries *c)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 64];
	json_t *file;

	if (!c)
		return;
	if (c->dirty && c->tasks) {
		cache_path(c->st, path, sizeof(path));
		snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
		file = json_pack("{s:s,s:O}", "policy", c->policy, "tasks", c->tasks);
		/* Best effort: without the cache the listing is slower, not
		 * wrong. */
		if (!file || (mkdir(amp_store_state_dir(c->st), 0777) < 0 && errno != EEXIST) ||
		    json_dump_file(file, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0)
			unlink(tmp);
		json_decref(file);
	}
	json_decref(c->tasks);
	free(c);
}

/* The time-free summary of a status object, and the deadlines of the
 * messages waiting for their ACK, into *deadlines (a new array). */
static json_t *fresh(const json_t *t, json_t **deadlines)
{
	const json_t *msgs = json_object_get(t, "messages"), *m;
	size_t i;

	*deadlines = json_array();
	json_array_foreach(msgs, i, m) {
		const char *state = json_string_value(json_object_get(m, "ack_state"));
		const char *due = json_string_value(json_object_get(m, "ack_deadline"));
		int64_t ms;

		if (state && due && (!strcmp(state, "pending") || !strcmp(state, "overdue")) &&
		    amp_time_parse(due, &ms) == 0)
			json_array_append_new(*deadlines, json_integer((json_int_t)ms));
	}
	return json_pack("{s:O,s:O,s:O,s:O,s:O,s:i,s:i,s:O}",
			 "task_id", json_object_get(t, "task_id"),
			 "state", json_object_get(t, "state"),
			 "reject_count", json_object_get(t, "reject_count"),
			 "suspended", json_object_get(t, "suspended"),
			 "locked", json_object_get(t, "locked"),
			 "messages", (int)json_array_size(msgs),
			 "unreadable", (int)json_array_size(json_object_get(t, "unreadable")),
			 "last_timestamp", json_array_size(msgs) ?
				 json_object_get(json_array_get(msgs, json_array_size(msgs) - 1), "timestamp") :
				 json_null());
}

/* The summary with its ACK counts at now_ms, in the order amp status
 * prints the fields. */
static json_t *at_time(const json_t *s, const json_t *deadlines, int64_t now_ms)
{
	const json_t *d;
	size_t i, pending = 0, overdue = 0;

	json_array_foreach(deadlines, i, d) {
		if (now_ms > (int64_t)json_integer_value(d))
			overdue++;
		else
			pending++;
	}
	return json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:i,s:i,s:O,s:O}",
			 "task_id", json_object_get(s, "task_id"),
			 "state", json_object_get(s, "state"),
			 "reject_count", json_object_get(s, "reject_count"),
			 "suspended", json_object_get(s, "suspended"),
			 "locked", json_object_get(s, "locked"),
			 "messages", json_object_get(s, "messages"),
			 "acks_pending", (int)pending, "acks_overdue", (int)overdue,
			 "unreadable", json_object_get(s, "unreadable"),
			 "last_timestamp", json_object_get(s, "last_timestamp"));
}

json_t *amp_summary_get(amp_summaries *c, amp_store *st, git_tree *root, const char *task,
			int64_t now_ms, amp_error *err)
{
	git_tree_entry *e = NULL;
	git_odb *odb = NULL;
	char dir[128], hex[GIT_OID_HEXSZ + 1] = "";
	const json_t *hit = NULL;
	json_t *t, *s, *deadlines, *out = NULL;
	amp_task_log log;

	/* The task directory's tree: the same id, the same records. */
	if (c && amp_store_task_dir(task, dir, sizeof(dir)) == 0 &&
	    git_tree_entry_bypath(&e, root, dir) == 0) {
		git_oid_tostr(hex, sizeof(hex), git_tree_entry_id(e));
		hit = json_object_get(c->tasks, task);
		if (hit && (!json_is_string(json_object_get(hit, "tree")) ||
			    strcmp(json_string_value(json_object_get(hit, "tree")), hex) ||
			    !json_is_object(json_object_get(hit, "summary")) ||
			    !json_is_array(json_object_get(hit, "deadlines"))))
			hit = NULL;
		/* A tree that is gone from the object database is damage
		 * the records must show. */
		if (hit && (git_repository_odb(&odb, amp_store_repo(st)) < 0 ||
			    !git_odb_exists(odb, git_tree_entry_id(e))))
			hit = NULL;
		git_odb_free(odb);
	}
	git_tree_entry_free(e);
	git_error_clear();
	if (hit) {
		out = at_time(json_object_get(hit, "summary"), json_object_get(hit, "deadlines"),
			      now_ms);
		if (out)
			return out;
	}
	if (amp_store_read_task(st, root, task, &log, err) < 0)
		return NULL;
	t = amp_task_status_json(&log, now_ms);
	amp_task_log_free(&log);
	if (!t || !(s = fresh(t, &deadlines))) {
		json_decref(t);
		amp_error_set(err, AMP_EIO, "", "out of memory");
		return NULL;
	}
	json_decref(t);
	out = at_time(s, deadlines, now_ms);
	if (c && hex[0] && out) {
		json_object_set_new(c->tasks, task, json_pack("{s:s,s:O,s:O}", "tree", hex,
							      "summary", s, "deadlines", deadlines));
		c->dirty = 1;
	}
	json_decref(s);
	json_decref(deadlines);
	if (!out)
		amp_error_set(err, AMP_EIO, "", "out of memory");
	return out;
}
