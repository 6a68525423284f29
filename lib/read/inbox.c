#include "inbox.h"
#include "base/gitobj.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/errout.h"
#include "base/tempfile.h"
#include "store/store.h"
#include "record/record.h"
#include "read.h"
#include "inbox_team.h"
#include "summary.h"
#include "protocol/protocol.h"
#include "base/util.h"
#include "json/json.h"

/* 2: each record has "agent" (the instance that wrote it, or null);
 * 3: the team's reports follow the cache object (inbox_team.h). */
#define CACHE_VERSION 3

/* ---- reading the SSOT ------------------------------------------------------ */

/* The inbox record of message e (a message of log, in place). */
static json_t *record(const amp_task_log *log, const amp_task_state *s, const amp_entry *e)
{
	char path[512] = "";
	int64_t deadline = amp_task_ack_deadline(log, s, e, -1);
	json_t *r;

	amp_task_log_entry_path(log, e, path, sizeof(path));
	r = json_pack("{s:s,s:s,s:O?,s:O?,s:O?,s:O?,s:b}", "msg_id", e->id,
		      "task_id", log->task_id, "type", json_object_get(e->doc, "type"),
		      "from", json_object_get(e->doc, "from"), "to", json_object_get(e->doc, "to"),
		      "timestamp", json_object_get(e->doc, "timestamp"),
		      "requires_ack", json_is_true(json_object_get(e->doc, "requires_ack")));
	if (r) {
		json_object_set_new(r, "deadline", deadline >= 0 ? json_integer(deadline) : json_null());
		json_object_set_new(r, "path", json_string(path));
	}
	return r;
}

/*
 * Appends to `out` the messages of task `task_id` at `root`: those without
 * an ACK, or every one with `all` (then each gets "acked"); only those
 * addressed to `role` unless it is NULL.  Records out of their place
 * (amp_task_entry_in_place: a fetch or a hand-made commit put them there)
 * are not messages for anyone: amp watch escalates them; nor are the
 * unACKed messages of an aborted task to anyone but the admin.  AMP_EUSAGE when
 * task_id is not a task id (a directory nobody can address), AMP_EIO when
 * its directory cannot be read.  With `reports`, the task's entry there
 * is what its team reports, amp_summary_team_reports at now_ms (none when
 * it reports nothing): from the log read here, not read again.
 */
static int read_task(amp_store *st, git_tree *root, const char *task_id, const char *role,
		     int all, json_t *out, json_t *reports, int64_t now_ms, amp_error *err)
{
	json_t *team = NULL;
	amp_task_log log;
	amp_task_state s;
	size_t i;
	int status;

	if ((status = amp_store_read_task(st, root, task_id, &log, err)) < 0)
		return status;
	amp_task_state_compute(&log, &s);
	for (i = 0; i < log.count; i++) {
		const amp_entry *e = &log.entries[i];
		const char *to = amp_json_str(e->doc, "to");
		int acked;
		json_t *r;

		if (e->kind != AMP_ENTRY_MSG || !amp_task_entry_in_place(&log, e) ||
		    (role && (!to || strcmp(to, role))))
			continue;
		acked = amp_task_ack_of(&log, e->id) != NULL;
		if (acked && !all)
			continue;
		/* An aborted task takes no write but the admin's: what waits
		 * there for anyone else can never be ACKed, so it waits for
		 * nobody (--all still lists it). */
		if (!acked && !all && s.aborted && strcmp(to, "admin"))
			continue;
		if (!(r = record(&log, &s, e))) {
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
			break;
		}
		if (all)
			json_object_set_new(r, "acked", json_boolean(acked));
		json_array_append_new(out, r);
	}
	if (status == AMP_OK && reports &&
	    (status = amp_summary_team_reports(&log, now_ms, 0, &team, err)) == AMP_OK && team)
		json_object_set_new(reports, task_id, team);
	amp_task_state_free(&s);
	amp_task_log_free(&log);
	return status;
}

/* ---- who wrote each message ------------------------------------------------ */

struct missing {
	json_t *want; /* msg_id -> [records waiting for their agent] */
};

static int note_writer(const amp_log_record *r, void *ctx)
{
	struct missing *m = ctx;
	json_t *list = r->kind == AMP_ENTRY_MSG ? json_object_get(m->want, r->id) : NULL, *rec;
	size_t i;

	if (!list)
		return 0;
	json_array_foreach(list, i, rec)
		json_object_set_new(rec, "agent", r->agent ? json_string(r->agent) : json_null());
	json_object_del(m->want, r->id);
	return json_object_size(m->want) == 0; /* all found: stop */
}

/* Gives rec the instance that wrote message id, from the record index
 * (store/recindex.h: the commit that added it, checked): 1, or 0 when the
 * index cannot tell (the walk below then finds it). */
static int from_index(amp_store *st, json_t *rec, const char *id)
{
	char task[64], agent[AMP_AGENT_MAX + 1];
	git_commit *c = NULL;
	git_oid commit;

	if (amp_msg_id_task(id, task, sizeof(task)) < 0 ||
	    !amp_recindex_find(st, task, AMP_ENTRY_MSG, id, &commit, NULL) ||
	    amp_git_commit_lookup(&c, amp_store_repo(st), &commit) < 0) {
		git_error_clear();
		return 0;
	}
	amp_commit_agent(c, agent, sizeof(agent));
	git_commit_free(c);
	json_object_set_new(rec, "agent", *agent ? json_string(agent) : json_null());
	return 1;
}

/*
 * Gives each record of the arrays of `lists` (an object of arrays, or one
 * array) that has no "agent" yet the instance that wrote it: from `known`
 * (msg_id -> agent, what an older cache said) when it is there, else from
 * the Amp-Agent trailer of the commit that added it, found in the record
 * index, else by walking the history from the tip, newest first, only
 * until every one is found (what waits for an ACK is recent).  A record whose commit names no instance
 * gets null.  AMP_OK or AMP_EIO.
 */
static int fill_agents(amp_store *st, json_t *lists, const json_t *known, amp_error *err)
{
	amp_log_filter f = { .since_ms = INT64_MIN, .until_ms = INT64_MAX, .names_only = 1 };
	amp_errlist problems = { 0 };
	struct missing m = { json_object() };
	json_t *one = json_is_array(lists) ? json_pack("{s:O}", "", lists) : json_incref(lists);
	json_t *list, *rec, *k;
	const char *task;
	size_t i;
	int status = AMP_OK;

	if (!m.want || !one) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	json_object_foreach(one, task, list)
		json_array_foreach(list, i, rec) {
			const char *id = amp_json_str(rec, "msg_id");

			if (json_object_get(rec, "agent") || !id)
				continue;
			if ((k = json_object_get(known, id))) {
				json_object_set(rec, "agent", k);
				continue;
			}
			if (from_index(st, rec, id))
				continue;
			if (!json_object_get(m.want, id))
				json_object_set_new(m.want, id, json_array());
			json_array_append(json_object_get(m.want, id), rec);
		}
	if (json_object_size(m.want))
		status = amp_log_walk(st, &f, note_writer, &m, &problems, err);
	/* Not found (a record the history does not show being added). */
	json_object_foreach(m.want, task, list)
		json_array_foreach(list, i, rec)
			json_object_set_new(rec, "agent", json_null());
cleanup:
	amp_errlist_free(&problems);
	json_decref(m.want);
	json_decref(one);
	return status;
}

/* ---- the cache ---------------------------------------------------------- */

static void cache_path(amp_store *st, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/inbox.json", amp_store_state_dir(st));
}

/* The build (cache.h) and the settings deadlines depend on: a cache built
 * by another build or under other settings is foreign. */
static json_t *policy_key(amp_store *st)
{
	const amp_policy *p = amp_store_policy(st);

	return json_pack("{s:s,s:i,s:I,s:i}", "build", amp_build_id(),
			 "lock_threshold", p->lock_threshold,
			 "max_clock_skew_ms", (json_int_t)p->max_clock_skew_ms,
			 "approval_levels", (int)p->approval_levels);
}

static json_t *fresh_cache(amp_store *st)
{
	return json_pack("{s:i,s:s,s:o,s:n,s:{},s:{}}", "version", CACHE_VERSION,
			 "ref", amp_store_messages_ref(st), "policy", policy_key(st),
			 "tip", "tasks", "broken");
}

/* 1 when every task of the cache is an array of records. */
static int tasks_valid(const json_t *tasks)
{
	const char *task;
	json_t *list, *r;
	size_t i;

	json_object_foreach((json_t *)tasks, task, list) {
		if (!json_is_array(list))
			return 0;
		json_array_foreach(list, i, r)
			if (!json_is_string(json_object_get(r, "msg_id")) ||
			    !json_is_string(json_object_get(r, "path")))
				return 0;
	}
	return 1;
}

/* The cache file, or a fresh cache (tip null) when it is missing, not a
 * regular file, too big (amp_cache_bound), not JSON, or not ours (version,
 * ref, build and policy, shape).  *team: the text of the team's reports
 * that follows the cache object in the file (inbox_team.h), unparsed: only
 * the roles they are for read it; it points into *buf, the file's text
 * (the caller frees *buf; not copied: a role they are not for pays
 * nothing for them), NULL with a fresh cache. */
static json_t *load_cache(amp_store *st, char **buf, const char **team)
{
	char path[PATH_MAX + 16];
	json_t *c = NULL, *key = policy_key(st);
	const char *ref, *tip;
	json_error_t jerr;
	size_t len = 0;
	git_oid oid;

	*team = NULL;
	*buf = NULL;
	cache_path(st, path, sizeof(path));
	if (amp_cache_read(path, amp_cache_bound(st), buf, &len) == 0 &&
	    (c = amp_json_loadb(*buf, len, JSON_DISABLE_EOF_CHECK, &jerr, NULL)) &&
	    jerr.position > 0 && (size_t)jerr.position < len)
		*team = *buf + jerr.position; /* amp_cache_read ends buf in a NUL */
	ref = amp_json_str(c, "ref");
	tip = amp_json_str(c, "tip");
	if (!json_is_object(c) || !*team ||
	    json_integer_value(json_object_get(c, "version")) != CACHE_VERSION ||
	    !ref || strcmp(ref, amp_store_messages_ref(st)) ||
	    !json_equal(json_object_get(c, "policy"), key) ||
	    !tip || strlen(tip) != GIT_OID_HEXSZ || git_oid_fromstr(&oid, tip) < 0 ||
	    !json_is_object(json_object_get(c, "broken")) ||
	    !json_is_object(json_object_get(c, "tasks")) ||
	    !tasks_valid(json_object_get(c, "tasks"))) {
		json_decref(c);
		c = fresh_cache(st);
		*team = NULL;
	}
	git_error_clear();
	json_decref(key);
	return c;
}

/* Best effort: a reader that cannot write the cache still answers (from
 * the SSOT, every time).  Temporary file and rename: a racing reader sees
 * a whole file, and the last rename wins with an answer as good.  The
 * cache object, then on the next line the team's reports. */
static void save_cache(amp_store *st, const json_t *c, const json_t *team)
{
	char path[PATH_MAX + 16];
	amp_tempfile t = { .fd = -1 };
	FILE *f;

	cache_path(st, path, sizeof(path));
	if ((mkdir(amp_store_state_dir(st), 0777) < 0 && errno != EEXIST) ||
	    amp_tempfile_open(&t, path, 0) < 0 || !(f = amp_tempfile_stream(&t)) ||
	    json_dumpf(c, f, JSON_COMPACT) < 0 || putc('\n', f) == EOF ||
	    json_dumpf(team, f, JSON_COMPACT) < 0 || putc('\n', f) == EOF ||
	    amp_tempfile_commit(&t) < 0)
		amp_tempfile_rollback(&t);
}

/* Reads task `task` of `tree` into the cache c again, and its entry of
 * the team's reports `team` (none when the task is gone, is no task id or
 * cannot be read: the inbox reports it). */
static int refresh_task(amp_store *st, git_tree *tree, json_t *c, json_t *team,
			const char *task, int64_t now_ms, amp_error *err)
{
	json_t *tasks = json_object_get(c, "tasks"), *broken = json_object_get(c, "broken");
	json_t *list = json_array();
	amp_error terr;
	int status;

	if (!list)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	json_object_del(team, task);
	status = read_task(st, tree, task, NULL, 0, list, team, now_ms, &terr);
	json_object_del(tasks, task);
	json_object_del(broken, task);
	if (status == AMP_EUSAGE) {
		/* tasks/<y>/<s>/<name> that is no task id: no message in it
		 * can be addressed. */
		status = AMP_OK;
	} else if (status == AMP_EIO && terr.status == AMP_EIO &&
		   strcmp(terr.message, "out of memory")) {
		/* One unreadable task: remembered, and reported to the
		 * questions it could answer (and tried again each update). */
		json_object_set_new(broken, task, json_string(terr.message));
		status = AMP_OK;
	} else if (status < 0) {
		*err = terr;
	} else if (json_array_size(list)) {
		json_object_set(tasks, task, list);
	}
	json_decref(list);
	return status;
}

/* The cache keeps what the diffs skipped (amp_store_task_in_place) under
 * "skipped", path -> why, so that every run reports it, not only the one
 * whose diff came across it; one the tree at `tip` no longer has goes. */
static void keep_skipped(amp_store *st, json_t *c, git_tree *tip)
{
	const amp_errlist *noted = amp_store_skipped(st);
	json_t *kept = json_object_get(c, "skipped"), *v;
	git_tree_entry *e;
	const char *path;
	void *tmp;
	size_t i;

	if (!json_is_object(kept))
		json_object_set_new(c, "skipped", kept = json_object());
	for (i = 0; i < noted->count; i++)
		json_object_set_new(kept, noted->items[i].path, json_string(noted->items[i].message));
	json_object_foreach_safe(kept, tmp, path, v) {
		if (git_tree_entry_bypath(&e, tip, path) < 0) {
			git_error_clear();
			json_object_del(kept, path);
			continue;
		}
		git_tree_entry_free(e);
	}
}

/*
 * Brings cache c and the team's reports *team up to commit `tip`: from the
 * cached tip's tree by a diff both ways (a task only in the old tree is
 * gone: the ref moved back or to another history), or from nothing when c
 * has no tip, its tree cannot be read or *team is NULL (they did not read
 * back).  *rebuilt says which.
 */
static int update_cache(amp_store *st, json_t **c, json_t **team, const git_oid *tip,
			int *rebuilt, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	git_commit *old_c = NULL, *new_c = NULL;
	git_tree *old_t = NULL, *new_t = NULL;
	json_t *touched = json_object(), *known = json_object(), *v;
	const char *hex = amp_json_str(*c, "tip"), *task;
	char tip_hex[GIT_OID_HEXSZ + 1];
	int64_t now_ms = 0;
	git_oid old;
	void *iter;
	int status = AMP_OK;

	*rebuilt = 0;
	if (!hex || !*team || git_oid_fromstr(&old, hex) < 0 ||
	    amp_git_commit_lookup(&old_c, repo, &old) < 0 || amp_git_commit_tree(&old_t, old_c) < 0) {
		git_error_clear();
		json_decref(*c);
		*c = fresh_cache(st);
		json_decref(*team);
		*team = json_object();
		*rebuilt = 1;
	}
	if (amp_git_commit_lookup(&new_c, repo, tip) < 0 || amp_git_commit_tree(&new_t, new_c) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read the commit at %s (%s)",
				       amp_store_messages_ref(st), git_oid_tostr_s(tip));
		goto cleanup;
	}
	if (!touched || !known || !*c || !*team) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	/* Only which tasks differ matters (each is read again whole), so a
	 * task one tree lacks is one member, not one per record: a rebuild at
	 * 100k messages listed all 200,000 records (25 MB). */
	if (amp_store_diff_tasks_whole(repo, st, old_t, new_t, touched) < 0 ||
	    (old_t && amp_store_diff_tasks_whole(repo, NULL, new_t, old_t, touched) < 0)) {
		status = amp_error_git(err, AMP_EIO, "cannot read the tree at %s",
				       amp_store_messages_ref(st));
		goto cleanup;
	}
	keep_skipped(st, *c, new_t);
	/* Tasks that could not be read are tried again. */
	json_object_foreach(json_object_get(*c, "broken"), task, v)
		json_object_set(touched, task, json_null());
	/* Who wrote what the cache holds already: no need to look again. */
	json_object_foreach(json_object_get(*c, "tasks"), task, v) {
		size_t i;
		json_t *r;

		json_array_foreach(v, i, r)
			if (json_object_get(r, "agent"))
				json_object_set(known, amp_json_str(r, "msg_id"), json_object_get(r, "agent"));
	}
	/* What the team's reports keep does not depend on the time: the clock
	 * only feeds the summary they are judged by. */
	if (json_object_size(touched) && amp_clock_now_ms(&now_ms, err) < 0) {
		status = AMP_EIO;
		goto cleanup;
	}
	for (iter = json_object_iter(touched); iter && status == AMP_OK;
	     iter = json_object_iter_next(touched, iter))
		status = refresh_task(st, new_t, *c, *team, json_object_iter_key(iter), now_ms,
				      err);
	if (status == AMP_OK)
		status = fill_agents(st, json_object_get(*c, "tasks"), known, err);
	if (status == AMP_OK)
		json_object_set_new(*c, "tip", json_string(git_oid_tostr(tip_hex, sizeof(tip_hex), tip)));
cleanup:
	git_tree_free(new_t);
	git_tree_free(old_t);
	git_commit_free(new_c);
	git_commit_free(old_c);
	json_decref(touched);
	json_decref(known);
	return status;
}

/* ---- answering ----------------------------------------------------------- */

struct sorted {
	int64_t ms;
	const char *id;
	json_t *r;
};

static int by_time(const void *pa, const void *pb)
{
	const struct sorted *a = pa, *b = pb;

	if (a->ms != b->ms)
		return a->ms < b->ms ? -1 : 1;
	return strcmp(a->id, b->id);
}

/* Sorts `list` oldest first: by timestamp (as a time: senders write
 * different offsets; one that is no time first), then msg_id. */
static int sort_messages(json_t *list, amp_error *err)
{
	size_t i, n = json_array_size(list);
	struct sorted *v = n ? calloc(n, sizeof(*v)) : NULL;
	json_t *r;

	if (n && !v)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	json_array_foreach(list, i, r) {
		const char *ts = amp_json_str(r, "timestamp");

		v[i].r = json_incref(r);
		v[i].id = amp_json_str(r, "msg_id");
		if (!ts || amp_time_parse(ts, &v[i].ms) < 0)
			v[i].ms = INT64_MIN;
	}
	if (n)
		qsort(v, n, sizeof(*v), by_time);
	json_array_clear(list);
	for (i = 0; i < n; i++)
		json_array_append_new(list, v[i].r);
	free(v);
	return AMP_OK;
}

/* --all: straight from the SSOT; with `reports`, each task's team
 * reports there too (read_task). */
static int read_all(amp_store *st, const git_oid *tip, const char *role, const char *task,
		    json_t *out, json_t *reports, int64_t now_ms, amp_error *err)
{
	git_commit *c = NULL;
	git_tree *tree = NULL;
	char **ids = NULL;
	size_t n = 0, i;
	int status;

	if (amp_git_commit_lookup(&c, amp_store_repo(st), tip) < 0 || amp_git_commit_tree(&tree, c) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read the commit at %s (%s)",
				       amp_store_messages_ref(st), git_oid_tostr_s(tip));
		goto cleanup;
	}
	if (task) {
		status = read_task(st, tree, task, role, 1, out, reports, now_ms, err);
		goto cleanup;
	}
	if ((status = amp_store_list_tasks(st, tree, &ids, &n, err)) < 0)
		goto cleanup;
	for (i = 0; i < n && status == AMP_OK; i++)
		if ((status = read_task(st, tree, ids[i], role, 1, out, reports, now_ms, err)) ==
		    AMP_EUSAGE)
			status = AMP_OK;
cleanup:
	amp_strv_free(ids, n);
	git_tree_free(tree);
	git_commit_free(c);
	return status;
}

/* From the cache: the waiting messages of `role`; AMP_EIO when a task
 * that could hold one cannot be read. */
static int from_cache(const json_t *c, const char *role, const char *task, json_t *out,
		      amp_error *err)
{
	const json_t *tasks = json_object_get(c, "tasks"), *list, *r, *why;
	const char *id;
	size_t i;

	json_object_foreach((json_t *)json_object_get(c, "broken"), id, why)
		if (!task || !strcmp(task, id))
			return amp_error_set(err, AMP_EIO, "", "task %s cannot be read: %s", id,
					     json_string_value(why));
	json_object_foreach((json_t *)tasks, id, list) {
		if (task && strcmp(task, id))
			continue;
		json_array_foreach(list, i, r) {
			const char *to = amp_json_str(r, "to");
			json_t *copy;

			if (!to || strcmp(to, role))
				continue;
			if (!(copy = json_copy((json_t *)r)) ||
			    json_object_set_new(copy, "acked", json_false()) < 0 ||
			    json_array_append_new(out, copy) < 0)
				return amp_error_set(err, AMP_EIO, "", "out of memory");
		}
	}
	return AMP_OK;
}

int amp_inbox_read(amp_store *st, const char *role, const char *task, int all,
		   amp_inbox *out, amp_error *err)
{
	const char *ref = amp_store_messages_ref(st), *skipped_path;
	json_t *c = NULL, *team = NULL, *v;
	const char *team_text;
	char *cache_text = NULL;
	int64_t now_ms;
	git_oid tip;
	int rc, rebuilt, status;

	memset(out, 0, sizeof(*out));
	if (!(out->messages = json_array()))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	/* The SSOT first: the cache only answers for the commit it names. */
	rc = git_reference_name_to_id(&tip, amp_store_repo(st), ref);
	if (rc == GIT_ENOTFOUND) {
		git_error_clear();
		status = amp_error_set(err, AMP_EIO, "",
				       "no AMP store in this repository (%s is missing): run 'amp init'",
				       ref);
		goto cleanup;
	}
	if (rc < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read %s", ref);
		goto cleanup;
	}
	git_oid_tostr(out->tip, sizeof(out->tip), &tip);
	if (all) {
		out->source = AMP_INBOX_UNCACHED;
		/* The team's reports from the same logs (inbox_team.h). */
		status = AMP_OK;
		now_ms = 0;
		if (amp_inbox_team_role(role) && (status = amp_clock_now_ms(&now_ms, err)) == AMP_OK &&
		    !(out->reports = json_object()))
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
		if (status == AMP_OK)
			status = read_all(st, &tip, role, task, out->messages, out->reports, now_ms,
					  err);
		if (status == AMP_OK)
			status = fill_agents(st, out->messages, NULL, err);
		goto sort;
	}
	c = load_cache(st, &cache_text, &team_text);
	/* A task that could not be read is tried again, even at the same tip
	 * (an object database repaired, a pack fetched).  The team's reports
	 * are parsed only for a role they are for: a hit of another role
	 * reads past them. */
	if (c && amp_json_str(c, "tip") && !strcmp(amp_json_str(c, "tip"), out->tip) &&
	    !json_object_size(json_object_get(c, "broken"))) {
		out->source = AMP_INBOX_HIT;
		if (amp_inbox_team_role(role))
			team = amp_inbox_team_load(team_text);
	} else {
		team = amp_inbox_team_load(team_text);
		if ((status = update_cache(st, &c, &team, &tip, &rebuilt, err)) < 0)
			goto cleanup;
		out->source = rebuilt ? AMP_INBOX_REBUILT : AMP_INBOX_UPDATED;
		save_cache(st, c, team);
	}
	json_object_foreach(json_object_get(c, "skipped"), skipped_path, v)
		if (json_is_string(v))
			amp_store_note_skipped(st, skipped_path, json_string_value(v));
	status = from_cache(c, role, task, out->messages, err);
	if (amp_inbox_team_role(role))
		out->reports = json_incref(team);
sort:
	if (status == AMP_OK)
		status = sort_messages(out->messages, err);
cleanup:
	json_decref(c);
	json_decref(team);
	free(cache_text);
	if (status < 0) {
		json_decref(out->messages);
		out->messages = NULL;
		json_decref(out->reports);
		out->reports = NULL;
	}
	return status;
}

void amp_inbox_free(amp_inbox *in)
{
	json_decref(in->messages);
	in->messages = NULL;
	json_decref(in->team);
	in->team = NULL;
	json_decref(in->reports);
	in->reports = NULL;
}

/* ---- output -------------------------------------------------------------- */

/* The documented --json object (amp_inbox_render). */
static json_t *inbox_json(const amp_inbox *in, const char *role, const char *ref, int64_t now_ms)
{
	/* The layout of schemas/output/inbox.schema.json (base/errout.h). */
	json_t *out = json_pack("{s:o,s:s,s:s,s:s,s:[]}", "format", amp_errout_format("inbox"),
				"role", role, "tip", in->tip, "ref", ref, "messages");
	json_t *list = json_object_get(out, "messages"), *r;
	size_t i;

	json_array_foreach(in->messages, i, r) {
		const json_t *d = json_object_get(r, "deadline");
		char when[AMP_TIME_BUFSZ];
		json_t *m;

		m = json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:O}", "msg_id", json_object_get(r, "msg_id"),
			      "task_id", json_object_get(r, "task_id"),
			      "type", json_object_get(r, "type") ? json_object_get(r, "type") : json_null(),
			      "from", json_object_get(r, "from") ? json_object_get(r, "from") : json_null(),
			      "to", json_object_get(r, "to") ? json_object_get(r, "to") : json_null(),
			      "timestamp", json_object_get(r, "timestamp") ?
					   json_object_get(r, "timestamp") : json_null(),
			      "requires_ack", json_object_get(r, "requires_ack"));
		if (!m)
			continue;
		if (json_is_integer(d)) {
			int64_t ms = json_integer_value(d), left = ms - now_ms;

			json_object_set_new(m, "deadline", json_string(amp_time_format(ms, when)));
			/* Whole seconds, rounded down: overdue by any amount is
			 * negative, as amp status says "overdue" past it. */
			json_object_set_new(m, "due_seconds",
					    json_integer(left >= 0 ? left / 1000 : -((-left + 999) / 1000)));
		} else {
			json_object_set_new(m, "deadline", json_null());
			json_object_set_new(m, "due_seconds", json_null());
		}
		json_object_set(m, "acked", json_object_get(r, "acked"));
		json_object_set(m, "path", json_object_get(r, "path"));
		json_object_set(m, "agent", json_is_string(json_object_get(r, "agent")) ?
				json_object_get(r, "agent") : json_null());
		/* amp inbox --agent (inbox_agent.h): the instance a message
		 * is for, or null for every instance of the role. */
		if (json_object_get(r, "for_agent"))
			json_object_set(m, "for_agent", json_object_get(r, "for_agent"));
		json_array_append_new(list, m);
	}
	/* What the team reports (inbox_team.h): progress, questions,
	 * answers. */
	if (in->team)
		json_object_update(out, in->team);
	return out;
}

/* What to print for a field of a message: escaped, "-" when absent. */
static const char *field(const json_t *m, const char *key)
{
	const char *s = amp_json_str(m, key);

	return s ? amp_term(s) : "-";
}

/* The widest escaped `key` of the messages, for a column. */
static int widest(const json_t *list, const char *key)
{
	const json_t *m;
	size_t i, w = 0;

	json_array_foreach(list, i, m)
		if (strlen(field(m, key)) > w)
			w = strlen(field(m, key));
	return (int)w;
}

/* The team's reports (inbox_team.h), one line each, escaped. */
static void format_team(FILE *f, const json_t *inbox, const amp_human *h)
{
	const json_t *m, *a;
	char t[AMP_HUMAN_TIME_BUFSZ], d[AMP_DURATION_BUFSZ];
	size_t i;

	json_array_foreach(json_object_get(inbox, "progress"), i, m) {
		fprintf(f, "%-*s  progress       %s %s%s%s: %lld%%", AMP_HUMAN_TIME_WIDTH,
			amp_human_time(h, amp_json_str(m, "timestamp"), t), field(m, "task_id"),
			field(m, "agent"), amp_json_str(m, "subtask_id") ? " on " : "",
			amp_json_str(m, "subtask_id") ? field(m, "subtask_id") : "",
			(long long)json_integer_value(json_object_get(m, "percent")));
		if (amp_json_str(m, "note"))
			fprintf(f, " (%s)", field(m, "note"));
		fputc('\n', f);
	}
	json_array_foreach(json_object_get(inbox, "questions"), i, m) {
		json_int_t due = json_integer_value(json_object_get(m, "due_seconds"));

		fprintf(f, "%-*s  question       %s %s by %s: %s  ", AMP_HUMAN_TIME_WIDTH,
			amp_human_time(h, amp_json_str(m, "asked"), t), field(m, "task_id"),
			field(m, "record"), amp_json_str(m, "agent") ? field(m, "agent") : "the executor",
			field(m, "question"));
		if (due >= 0)
			fprintf(f, "answer due in %s\n", amp_duration_format(due, d));
		else
			fprintf(f, "%sanswer overdue %s%s\n", amp_human_sgr(h, AMP_SGR_RED),
				amp_duration_format(due, d), amp_human_sgr(h, AMP_SGR_RESET));
	}
	json_array_foreach(json_object_get(inbox, "released"), i, m) {
		fprintf(f, "%-*s  released       %s %s of %s%s%s by %s", AMP_HUMAN_TIME_WIDTH,
			amp_human_time(h, amp_json_str(m, "at"), t), field(m, "task_id"),
			field(m, "claim"), field(m, "agent"), amp_json_str(m, "subtask_id") ? " on " : "",
			amp_json_str(m, "subtask_id") ? field(m, "subtask_id") : "", field(m, "by"));
		if (amp_json_str(m, "reason"))
			fprintf(f, ": %s", field(m, "reason"));
		fputs("  (claim it again before you write to it)\n", f);
	}
	json_array_foreach(json_object_get(inbox, "answers"), i, m) {
		a = json_object_get(m, "answer");
		fprintf(f, "%-*s  answer         %s %s (%s): %s", AMP_HUMAN_TIME_WIDTH,
			amp_human_time(h, amp_json_str(a, "timestamp"), t), field(m, "task_id"),
			field(m, "record"), field(m, "question"), field(a, "answer"));
		if (amp_json_str(a, "agent"))
			fprintf(f, "  by %s", field(a, "agent"));
		fputc('\n', f);
	}
}

static char *format(const json_t *inbox, const amp_human *h)
{
	const json_t *m, *list = json_object_get(inbox, "messages");
	char *buf = NULL, short_tip[8], d[AMP_DURATION_BUFSZ], t[AMP_HUMAN_TIME_BUFSZ];
	size_t len = 0, i;
	int taskw = widest(list, "task_id"), idw = widest(list, "msg_id");
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	snprintf(short_tip, sizeof(short_tip), "%s", amp_or_none(amp_json_str(inbox, "tip")));
	json_array_foreach(list, i, m) {
		const json_t *due = json_object_get(m, "due_seconds");

		if (h->width)
			/* A terminal: the id (which holds the type and the
			 * task), who sent it and when, in 80 columns. */
			fprintf(f, "%-*s  from %-11s  %-*s  ", idw, field(m, "msg_id"), field(m, "from"),
				amp_human_when_width(h), amp_human_when(h, amp_json_str(m, "timestamp"), t));
		else
			fprintf(f, "%-*s  %-14s %-11s -> %-11s %-*s  %-*s  ", AMP_HUMAN_TIME_WIDTH,
				amp_human_time(h, amp_json_str(m, "timestamp"), t),
				field(m, "type"), field(m, "from"), field(m, "to"), taskw,
				field(m, "task_id"), idw, field(m, "msg_id"));
		if (json_is_true(json_object_get(m, "acked")))
			fputs("acked", f);
		else if (json_is_integer(due) && json_integer_value(due) >= 0)
			fprintf(f, "due in %s", amp_duration_format(json_integer_value(due), d));
		else if (json_is_integer(due))
			fprintf(f, "%soverdue %s%s", amp_human_sgr(h, AMP_SGR_RED),
				amp_duration_format(json_integer_value(due), d), amp_human_sgr(h, AMP_SGR_RESET));
		else if (json_is_true(json_object_get(m, "requires_ack")))
			fputs("awaiting the admin's approval", f);
		else
			fputs("no ACK required", f);
		if (amp_json_str(m, "agent"))
			fprintf(f, "  agent %s", field(m, "agent"));
		if (amp_json_str(m, "for_agent"))
			fprintf(f, "  for %s", field(m, "for_agent"));
		fputc('\n', f);
	}
	format_team(f, inbox, h);
	if (!json_array_size(list))
		fprintf(f, "nothing for %s ", field(inbox, "role"));
	fprintf(f, "as of %s (%s)\n", short_tip, field(inbox, "ref"));
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

char *amp_inbox_render(const amp_inbox *in, const char *role, const char *ref,
		       int64_t now_ms, int json, const amp_human *h)
{
	json_t *out = inbox_json(in, role, ref, now_ms);
	char *text = NULL, *with_nl = NULL;

	if (out && !json)
		text = format(out, h);
	else if (out && (text = amp_json_dumps(out, JSON_INDENT(2) | JSON_PRESERVE_ORDER)) &&
		 (with_nl = malloc(strlen(text) + 2))) {
		sprintf(with_nl, "%s\n", text);
		free(text);
		text = with_nl;
	} else {
		free(text);
		text = NULL;
	}
	json_decref(out);
	return text;
}

/* ---- waiting ------------------------------------------------------------- */

/* What amp_inbox_wait watches. */
struct watcher {
	int fd;            /* inotify, or -1: polling */
	int wd_common;     /* the git common dir, for packed-refs */
	int wd_ref;        /* the directory of the loose ref file */
	int wd_up;         /* its nearest existing parent, while it is missing */
	char common[PATH_MAX];
	char ref_dir[PATH_MAX];
	const char *ref_base; /* the loose ref file's name */
};

#define WATCH_MASK (IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM)

/* Watches the ref's directory, or while it does not exist (a ref that only
 * packed-refs holds, in a repository that never had refs/amp/), its nearest
 * parent below the common dir, to learn when it appears. */
static void arm(struct watcher *w)
{
	char up[PATH_MAX], *slash;
	int wd;

	if (w->fd < 0 || w->wd_ref >= 0)
		return;
	if ((w->wd_ref = inotify_add_watch(w->fd, w->ref_dir, WATCH_MASK | IN_ONLYDIR)) >= 0) {
		if (w->wd_up >= 0 && w->wd_up != w->wd_common && w->wd_up != w->wd_ref)
			inotify_rm_watch(w->fd, w->wd_up);
		w->wd_up = -1;
		return;
	}
	snprintf(up, sizeof(up), "%s", w->ref_dir);
	while ((slash = strrchr(up, '/')) && slash - up > (ptrdiff_t)strlen(w->common)) {
		*slash = '\0';
		if ((wd = inotify_add_watch(w->fd, up, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR)) >= 0) {
			if (w->wd_up >= 0 && w->wd_up != wd && w->wd_up != w->wd_common)
				inotify_rm_watch(w->fd, w->wd_up);
			w->wd_up = wd;
			return;
		}
	}
	/* Below the common dir nothing exists: its own watch says when
	 * refs/ appears. */
	w->wd_up = w->wd_common;
}

static void watcher_open(amp_store *st, struct watcher *w)
{
	const char *common = git_repository_commondir(amp_store_repo(st));
	const char *ref = amp_store_messages_ref(st), *slash = strrchr(ref, '/');
	size_t n = strlen(common);

	w->wd_common = w->wd_ref = w->wd_up = -1;
	/* git_repository_commondir ends with a '/'. */
	snprintf(w->common, sizeof(w->common), "%.*s", (int)(n && common[n - 1] == '/' ? n - 1 : n),
		 common);
	w->ref_base = slash ? slash + 1 : ref;
	w->fd = -1;
	/* A path too long to watch is polled. */
	if (snprintf(w->ref_dir, sizeof(w->ref_dir), "%s/%.*s", w->common,
		     (int)(slash ? slash - ref : 0), ref) >= (int)sizeof(w->ref_dir) ||
	    getenv("AMP_WAIT_POLL"))
		return;
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0)
		return;
	w->wd_common = inotify_add_watch(w->fd, w->common, WATCH_MASK | IN_ONLYDIR);
	if (w->wd_common < 0) {
		close(w->fd);
		w->fd = -1;
	}
}

/* Reads the pending events; 1 when one may concern the ref. */
static int relevant_events(struct watcher *w)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len;
	int hit = 0;

	while ((len = read(w->fd, buf, sizeof(buf))) > 0) {
		const struct inotify_event *ev;
		char *p;

		for (p = buf; p < buf + len; p += sizeof(*ev) + ev->len) {
			ev = (const struct inotify_event *)p;
			if (ev->mask & IN_Q_OVERFLOW)
				hit = 1;
			if (ev->wd == w->wd_ref && (ev->mask & IN_IGNORED)) {
				/* The directory went away (pack-refs --prune). */
				w->wd_ref = -1;
				hit = 1;
			}
			if (!ev->len)
				continue;
			if ((ev->wd == w->wd_ref && !strcmp(ev->name, w->ref_base)) ||
			    (ev->wd == w->wd_common && !strcmp(ev->name, "packed-refs")) ||
			    (w->wd_ref < 0 && ev->wd == w->wd_up))
				hit = 1;
		}
	}
	return hit;
}

int amp_inbox_wait(amp_store *st, const char *role, const char *task,
		   int64_t timeout_ms, const sigset_t *waitmask,
		   volatile sig_atomic_t *stop, amp_inbox *out, amp_error *err)
{
	struct watcher w;
	int64_t end = timeout_ms >= 0 ? amp_monotonic_ms() + timeout_ms : -1, backoff = 10;
	int status;

	watcher_open(st, &w);
	for (;;) {
		/* Watch first, then read: a write between the two wakes us. */
		arm(&w);
		if ((status = amp_inbox_read(st, role, task, 0, out, err)) < 0)
			break;
		if (json_array_size(out->messages))
			break;
		amp_inbox_free(out);
		for (;;) {
			int64_t left = end >= 0 ? end - amp_monotonic_ms() : -1, ms;
			struct timespec ts;
			fd_set rd;
			int rc;

			if (*stop) {
				status = AMP_INBOX_STOPPED;
				goto done;
			}
			if (end >= 0 && left <= 0) {
				status = AMP_INBOX_TIMEOUT;
				goto done;
			}
			ms = w.fd < 0 ? (left >= 0 && left < backoff ? left : backoff) : left;
			ts.tv_sec = ms / 1000;
			ts.tv_nsec = (long)(ms % 1000) * 1000000L;
			FD_ZERO(&rd);
			if (w.fd >= 0)
				FD_SET(w.fd, &rd);
			rc = pselect(w.fd + 1, w.fd >= 0 ? &rd : NULL, NULL, NULL,
				     ms >= 0 ? &ts : NULL, waitmask);
			if (rc < 0 && errno != EINTR) {
				status = amp_error_set(err, AMP_EIO, "", "cannot wait: %s",
						       strerror(errno));
				goto done;
			}
			if (w.fd < 0 && rc == 0) {
				backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
				break;
			}
			if (rc > 0 && relevant_events(&w))
				break;
		}
	}
done:
	if (w.fd >= 0)
		close(w.fd);
	return status;
}
