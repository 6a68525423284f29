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
#include "coord.h"
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

	/* 2: entries hold "leases" and "deps" (claims, waits_for). */
	snprintf(buf, bufsz, "2 %d %u %lld", p->lock_threshold, p->approval_levels,
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

/* The time-free part of the task's leases not released (coord.h): who
 * holds it and when each lease runs out, as its records say. */
static json_t *leases_of(const amp_task_log *log)
{
	json_t *out = json_array();
	amp_leases ls;
	size_t i;

	amp_coord_leases(log, &ls);
	for (i = 0; out && i < ls.n; i++)
		if (!ls.v[i].released)
			json_array_append_new(out, json_pack("{s:s,s:s?,s:I}", "agent", ls.v[i].agent,
				"subtask_id", ls.v[i].subtask[0] ? ls.v[i].subtask : NULL,
				"expires_ms", (json_int_t)amp_lease_expires(&ls.v[i])));
	return out;
}

/* The task's dependencies (amp depend), [{"task_id", "soft"}]. */
static json_t *deps_of(const amp_task_log *log)
{
	amp_dep deps[AMP_DEPS_MAX];
	size_t n = amp_coord_deps(log, deps), i;
	json_t *out = json_array();

	for (i = 0; out && i < n; i++)
		json_array_append_new(out, json_pack("{s:s,s:b}", "task_id", deps[i].on,
						     "soft", deps[i].soft));
	return out;
}

/* The "claims" of the summary at now_ms: the leases, each expired or not
 * against now (like the ACK deadlines). */
static json_t *claims_at(const json_t *leases, int64_t now_ms)
{
	json_t *out = json_array();
	const json_t *l;
	char until[AMP_TIME_BUFSZ];
	size_t i;

	json_array_foreach(leases, i, l) {
		int64_t exp = (int64_t)json_integer_value(json_object_get(l, "expires_ms"));

		json_array_append_new(out, json_pack("{s:O,s:O,s:s,s:b}", "agent",
			json_object_get(l, "agent"), "subtask_id", json_object_get(l, "subtask_id"),
			"expires", amp_time_format(exp, until), "expired", now_ms > exp));
	}
	return out;
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
	return json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:i,s:i,s:O,s:O,s:o}",
			 "task_id", json_object_get(s, "task_id"),
			 "state", json_object_get(s, "state"),
			 "reject_count", json_object_get(s, "reject_count"),
			 "suspended", json_object_get(s, "suspended"),
			 "locked", json_object_get(s, "locked"),
			 "messages", json_object_get(s, "messages"),
			 "acks_pending", (int)pending, "acks_overdue", (int)overdue,
			 "unreadable", json_object_get(s, "unreadable"),
			 "last_timestamp", json_object_get(s, "last_timestamp"),
			 "claims", claims_at(json_object_get(s, "leases"), now_ms));
}

/*
 * The time-free summary of `task` and its ACK deadlines, new references in
 * *sum and *deadlines: from the cache when the task's tree is the one it
 * holds (and still in the object database), else from its records (and
 * cached).  AMP_OK, or an error with err filled.
 */
static int entry(amp_summaries *c, amp_store *st, git_tree *root, const char *task,
		 int64_t now_ms, json_t **sum, json_t **deadlines, amp_error *err)
{
	git_tree_entry *e = NULL;
	git_odb *odb = NULL;
	char dir[128], hex[GIT_OID_HEXSZ + 1] = "";
	const json_t *hit = NULL;
	json_t *t;
	amp_task_log log;
	int status;

	*sum = *deadlines = NULL;
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
		*sum = json_incref(json_object_get(hit, "summary"));
		*deadlines = json_incref(json_object_get(hit, "deadlines"));
		return AMP_OK;
	}
	if ((status = amp_store_read_task(st, root, task, &log, err)) < 0)
		return status;
	t = amp_task_status_json(&log, now_ms);
	/* Most tasks have neither: kept only when there are some, so the
	 * cache of a large SSOT stays as small to parse. */
	if (t && (*sum = fresh(t, deadlines))) {
		json_t *l = leases_of(&log), *d = deps_of(&log);

		if (json_array_size(l))
			json_object_set(*sum, "leases", l);
		if (json_array_size(d))
			json_object_set(*sum, "deps", d);
		json_decref(l);
		json_decref(d);
	}
	amp_task_log_free(&log);
	json_decref(t);
	if (!*sum || !*deadlines) {
		json_decref(*sum);
		json_decref(*deadlines);
		*sum = *deadlines = NULL;
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	}
	if (c && hex[0]) {
		json_object_set_new(c->tasks, task, json_pack("{s:s,s:O,s:O}", "tree", hex,
							      "summary", *sum, "deadlines", *deadlines));
		c->dirty = 1;
	}
	return AMP_OK;
}

/* The "waits_for" of summary s: each dependency not approved, with its
 * state ("new": no records), read from its own summary (cached too). */
static json_t *waits(amp_summaries *c, amp_store *st, git_tree *root, const json_t *s,
		     int64_t now_ms, amp_error *err)
{
	json_t *out = json_array(), *sum, *deadlines;
	const json_t *d;
	size_t i;

	json_array_foreach(json_object_get(s, "deps"), i, d) {
		const char *on = json_string_value(json_object_get(d, "task_id"));
		const char *state;
		char dir[128];

		/* A hand-made depend record naming no task waits for nothing. */
		if (!on || amp_store_task_dir(on, dir, sizeof(dir)) < 0)
			continue;
		if (entry(c, st, root, on, now_ms, &sum, &deadlines, err) < 0) {
			json_decref(out);
			return NULL;
		}
		state = json_string_value(json_object_get(sum, "state"));
		if (!state || strcmp(state, "approved"))
			json_array_append_new(out, json_pack("{s:s,s:O,s:s}", "task_id", on, "soft",
							     json_object_get(d, "soft"), "state",
							     state ? state : "new"));
		json_decref(sum);
		json_decref(deadlines);
	}
	return out;
}

json_t *amp_summary_get(amp_summaries *c, amp_store *st, git_tree *root, const char *task,
			int64_t now_ms, amp_error *err)
{
	json_t *s, *deadlines, *out, *w;

	if (entry(c, st, root, task, now_ms, &s, &deadlines, err) < 0)
		return NULL;
	out = at_time(s, deadlines, now_ms);
	w = out ? waits(c, st, root, s, now_ms, err) : NULL;
	json_decref(s);
	json_decref(deadlines);
	if (!out || !w) {
		json_decref(out);
		if (!out)
			amp_error_set(err, AMP_EIO, "", "out of memory");
		return NULL;
	}
	json_object_set_new(out, "waits_for", w);
	return out;
}
