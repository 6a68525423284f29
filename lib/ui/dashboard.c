/*
 * dashboard.c - the static site of the SSOT (dashboard.h): the overview,
 * one page per task, the error log, and the state that makes a pass cost
 * what changed.
 */
#include <errno.h>
#include "base/gitobj.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "base/clock.h"
#include "base/tempfile.h"
#include "dashboard_int.h"
#include "protocol/protocol.h"
#include "base/util.h"

#define str dash_str
#define ival dash_ival

/* Bumped when the pages change shape: a state of another format rebuilds
 * every page. */
#define PAGE_FORMAT 4
#define STATE_FILE ".amp-dashboard.json"
/* Per shard of the task tree: its tree, its tasks' trees and rows. */
#define STATE_DIR ".amp-dashboard"

/* A shard of the task tree: tasks/<year>/<s>/. */
struct shard {
	char key[600]; /* "<year>/<s>" */
	long long year, s; /* for the order; -1 when not a number */
	git_oid id;
};

/* ---- the overview ----------------------------------------------------------- */

/*
 * The aggregate the overview is drawn from ("agg" in the top state).  It is
 * updated from the shards that changed -- their old rows out (agg_rows with
 * sign -1), their new rows in (+1) -- and never recomputed from every shard
 * while the history only grows:
 *   "h1"         the hour of the newest record (-1: none yet)
 *   "hours"      {hour: messages} of the CHART_HOURS hours up to h1
 *   "open"       {hour: intervals starting - intervals ending} of the
 *                critical escalations' open intervals over those hours;
 *   "open_base"  the same summed over every older hour, so that the number
 *                open at the end of an hour is open_base plus the deltas
 *                up to it
 *   "notes"      {"<shard>/<task>": row}: the rows that may need the admin
 *                (suspended, awaiting approval, or with an ACK deadline)
 *   "recent"     the RECENT_SHOWN rows of the latest activity, newest first
 *   "firsts"     {first record's ms: open tasks}: the tasks neither approved
 *                nor aborted, for their number and the chart of their age
 * A pass that finds it inconsistent (a history rewritten: the newest hour
 * went back, the recent list lost a row it cannot refill; a shard's state
 * not the one the aggregate was made from) rebuilds it from every shard's
 * state (agg_rebuild).
 */
static json_t *agg_new(void)
{
	return json_pack("{s:I,s:{},s:{},s:I,s:{},s:[],s:{}}", "h1", (json_int_t)-1, "hours", "open",
			 "open_base", (json_int_t)0, "notes", "recent", "firsts");
}

/* An aggregate of the shape agg_new makes (a state file is data on disk:
 * one edited or cut short is not trusted). */
static int agg_valid(const json_t *agg)
{
	return json_is_integer(json_object_get(agg, "h1")) && json_is_object(json_object_get(agg, "hours")) &&
	       json_is_object(json_object_get(agg, "open")) &&
	       json_is_integer(json_object_get(agg, "open_base")) &&
	       json_is_object(json_object_get(agg, "notes")) && json_is_array(json_object_get(agg, "recent")) &&
	       json_is_object(json_object_get(agg, "firsts"));
}

/* A shard's summary in the top state (shard_summary): its tree (NULL when
 * none), its numbers. */
enum { SUM_COUNT = 1, SUM_PAGES, SUM_LAST };

static const char *sum_tree(const json_t *sum)
{
	return json_string_value(json_array_get(sum, 0));
}

static long long sum_int(const json_t *sum, size_t i)
{
	return (long long)json_integer_value(json_array_get(sum, i));
}

/* obj[key] += by, the member gone at 0. */
static void bump(json_t *obj, const char *key, long long by)
{
	long long v = ival(obj, key) + by;

	if (v)
		json_object_set_new(obj, key, json_integer(v));
	else
		json_object_del(obj, key);
}

/* agg[field][hour] += by for an hour of the chart; an older one counts in
 * open_base for "open", not at all for "hours". */
static void agg_bump_hour(json_t *agg, const char *field, long long hour, long long by)
{
	char key[24];

	if (hour < ival(agg, "h1") - CHART_HOURS + 1) {
		if (!strcmp(field, "open"))
			json_object_set_new(agg, "open_base", json_integer(ival(agg, "open_base") + by));
		return;
	}
	snprintf(key, sizeof(key), "%lld", hour);
	bump(json_object_get(agg, field), key, by);
}

/* The newest hour moves to `hour` when later: the hours that leave the
 * chart are dropped ("hours") or folded into open_base ("open"). */
static void agg_raise_h1(json_t *agg, long long hour)
{
	json_t *hours = json_object_get(agg, "hours"), *open = json_object_get(agg, "open"), *v;
	const char *k;
	void *tmp;
	long long cut = hour - CHART_HOURS + 1, base = ival(agg, "open_base");

	if (hour <= ival(agg, "h1"))
		return;
	json_object_set_new(agg, "h1", json_integer(hour));
	json_object_foreach_safe(hours, tmp, k, v)
		if (strtoll(k, NULL, 10) < cut)
			json_object_del(hours, k);
	json_object_foreach_safe(open, tmp, k, v)
		if (strtoll(k, NULL, 10) < cut) {
			base += json_integer_value(v);
			json_object_del(open, k);
		}
	json_object_set_new(agg, "open_base", json_integer(base));
}

/* Sorts the recent list and keeps its first RECENT_SHOWN rows. */
static int agg_trim_recent(json_t *agg)
{
	json_t *recent = json_object_get(agg, "recent"), *out, **v;
	size_t n = json_array_size(recent), i;

	if (!(v = malloc((n ? n : 1) * sizeof(*v))))
		return -1;
	for (i = 0; i < n; i++)
		v[i] = json_array_get(recent, i);
	if (n) /* qsort takes no NULL, even for nothing to sort */
		qsort(v, n, sizeof(*v), dash_recent_cmp);
	out = json_array();
	for (i = 0; i < n && i < RECENT_SHOWN; i++)
		json_array_append(out, v[i]);
	free(v);
	return json_object_set_new(agg, "recent", out);
}

/* The row may need the admin: suspended (locked too), awaiting approval,
 * or with an open ACK deadline (overdue or not: that depends on the time of
 * the pass). */
static int may_need(const json_t *row)
{
	return str(row, "suspended_by") || str(row, "awaiting_approval") ||
	       json_array_size(json_object_get(row, "deadlines"));
}

/* A task not finished: neither approved nor aborted (nor unreadable). */
static int task_open(const json_t *row)
{
	const char *state = str(row, "state");

	return state && strcmp(state, "approved") && strcmp(state, "aborted") &&
	       strcmp(state, "unreadable") && ival(row, "first_ms") >= 0;
}

/* Adds (sign 1) or takes out (sign -1) the rows of shard `shard` from the
 * aggregate; the recent list is sorted and trimmed by agg_trim_recent. */
static void agg_rows(json_t *agg, const char *shard, const json_t *rows, int sign)
{
	json_t *notes = json_object_get(agg, "notes"), *recent = json_object_get(agg, "recent"), *v;
	const json_t *row, *iv;
	const char *k;
	char key[1024];
	size_t i, j;

	json_array_foreach(rows, i, row) {
		if (sign > 0 && ival(row, "last_ms") >= 0)
			agg_raise_h1(agg, ival(row, "last_ms") / HOUR_MS);
		json_object_foreach((json_t *)json_object_get(row, "hours"), k, v)
			agg_bump_hour(agg, "hours", strtoll(k, NULL, 10), sign * (long long)json_integer_value(v));
		json_array_foreach(json_object_get(row, "open"), j, iv) {
			long long s = json_integer_value(json_array_get(iv, 0)) / HOUR_MS;
			long long e = json_integer_value(json_array_get(iv, 1));

			agg_bump_hour(agg, "open", s, sign);
			/* An end stamped before its start closes it in the
			 * hour it opened. */
			if (e >= 0)
				agg_bump_hour(agg, "open", e / HOUR_MS > s ? e / HOUR_MS : s, -sign);
		}
		if (task_open(row)) {
			snprintf(key, sizeof(key), "%lld", ival(row, "first_ms"));
			bump(json_object_get(agg, "firsts"), key, sign);
		}
		snprintf(key, sizeof(key), "%s/%s", shard, str(row, "task_id") ? str(row, "task_id") : "");
		if (sign < 0)
			json_object_del(notes, key);
		else if (may_need(row))
			json_object_set(notes, key, (json_t *)row);
		if (sign > 0)
			json_array_append(recent, (json_t *)row);
	}
	if (sign < 0)
		for (i = json_array_size(recent); i-- > 0;)
			if (str(json_array_get(recent, i), "group") &&
			    !strcmp(str(json_array_get(recent, i), "group"), shard))
				json_array_remove(recent, i);
}

/* ---- one pass --------------------------------------------------------------------- */

static void policy_key(amp_store *st, char *buf, size_t bufsz)
{
	const amp_policy *p = amp_store_policy(st);

	/* The build (cache.h): another may derive rows or pages otherwise. */
	snprintf(buf, bufsz, "%d %s %d %u %lld", PAGE_FORMAT, amp_build_id(), p->lock_threshold,
		 p->approval_levels, (long long)p->max_clock_skew_ms);
}

/* The hex id of a ref's tip commit into buf ("" when it has none). */
static void tip_hex(amp_store *st, const char *ref, char *buf, size_t bufsz)
{
	git_oid oid;

	buf[0] = 0;
	if (git_reference_name_to_id(&oid, amp_store_repo(st), ref) == 0)
		git_oid_tostr(buf, bufsz, &oid);
	git_error_clear();
}

/* The page and row of one task whose records changed.  AMP_NOOP (err
 * filled) when the task's records cannot be read: one unreadable task
 * directory (or a name in the tree that is no task id) hides that task
 * only. */
static int build_task(struct gen *g, git_tree *root, const char *task, const char *page,
		      int64_t now_ms, json_t **row, amp_error *err)
{
	amp_task_log log;
	struct page p;
	json_t *t = NULL;
	char rel[AMP_DASHBOARD_NAME_MAX + 8];
	int status;

	if (amp_store_read_task(g->st, root, task, &log, err) < 0)
		return AMP_NOOP;
	if (!(t = amp_task_status_json(&log, now_ms))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if (!(*row = dash_task_row(&log, t, page))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if ((status = dash_page_open(&p, err)) < 0)
		goto cleanup;
	dash_render_task(p.f, &log, t, *row);
	snprintf(rel, sizeof(rel), "tasks/%s", page);
	status = dash_page_finish(g, &p, rel, 0, err);
cleanup:
	if (status < 0) {
		json_decref(*row);
		*row = NULL;
	}
	json_decref(t);
	amp_task_log_free(&log);
	return status;
}

/* mkdir -p path. */
static int ensure_dir(const char *path, amp_error *err)
{
	char buf[PATH_MAX];
	size_t i;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
		return amp_error_set(err, AMP_EIO, "", "%s: path too long", path);
	for (i = 1; buf[i]; i++) {
		if (buf[i] != '/')
			continue;
		buf[i] = 0;
		if (mkdir(buf, 0777) < 0 && errno != EEXIST)
			return amp_error_set(err, AMP_EIO, "", "cannot create %s: %s", buf, strerror(errno));
		buf[i] = '/';
	}
	if (mkdir(buf, 0777) < 0 && errno != EEXIST)
		return amp_error_set(err, AMP_EIO, "", "cannot create %s: %s", buf, strerror(errno));
	return AMP_OK;
}

/* What the top state keeps of a shard: [its tree, its task count, its task
 * pages, its newest record] (an array: the top state holds one per shard,
 * read on every pass). */
static json_t *shard_summary(const json_t *rows, const char *tree)
{
	const json_t *row;
	json_int_t last = -1;
	size_t i, pages = 0;

	json_array_foreach(rows, i, row) {
		pages += str(row, "page") != NULL;
		if (ival(row, "last_ms") > last)
			last = ival(row, "last_ms");
	}
	return json_pack("[s,i,i,I]", tree, (int)json_array_size(rows), (int)pages, last);
}

/* The file a shard's state goes to: <dir>/.amp-dashboard/<name>.json (its
 * tree, its tasks' trees and rows), the name made from the shard's key
 * ("2026/0") as a page name is, since the key comes from the tree. */
static void shard_path(const struct gen *g, const char *key, char *buf, size_t bufsz)
{
	char name[AMP_DASHBOARD_NAME_MAX];

	amp_dashboard_page_name(key, name);
	name[strlen(name) - 5] = 0; /* ".html" */
	snprintf(buf, bufsz, "%s/%s/%s.json", g->dir, STATE_DIR, name);
}

/* The rows of a shard state (its "tasks"), as an array (the caller
 * decrefs). */
static json_t *state_rows(const json_t *state)
{
	json_t *rows = json_array(), *v;
	const char *k;

	json_object_foreach((json_t *)json_object_get(state, "tasks"), k, v)
		json_array_append(rows, json_object_get(v, "row"));
	return rows;
}

/* Takes the rows of shard state `state` out of the aggregate when it is
 * the state the aggregate was made from (its tree is `tree`); returns 0,
 * or -1 when it is not (missing, or written by a pass that did not finish),
 * and the aggregate must be rebuilt. */
static int agg_take_out(json_t *agg, const char *key, const json_t *state, const char *tree)
{
	json_t *rows;

	if (!state || !str(state, "tree") || !tree || strcmp(str(state, "tree"), tree))
		return -1;
	rows = state_rows(state);
	agg_rows(agg, key, rows, -1);
	json_decref(rows);
	return 0;
}

/* Writes data to path (absolute) through a temporary file and a rename. */
static int write_state(const char *path, const char *data, size_t len, amp_error *err)
{
	if (amp_tempfile_write_file(path, data, len, 0) < 0) {
		amp_error_set(err, AMP_EIO, "", "cannot write %s: %s", path, strerror(errno));
		return AMP_EIO;
	}
	return AMP_OK;
}

/* Deletes the pages of the tasks of shard state `tasks` that `keep` (may
 * be NULL) does not hold: tasks gone from the SSOT (history rewritten). */
static void drop_pages(const struct gen *g, const json_t *tasks, const json_t *keep)
{
	const char *k, *page;
	json_t *v;
	char path[PATH_MAX];

	json_object_foreach((json_t *)tasks, k, v) {
		if (keep && json_object_get(keep, k))
			continue;
		page = str(json_object_get(v, "row"), "page");
		if (page && !strchr(page, '/') && page[0] != '.') {
			snprintf(path, sizeof(path), "%s/tasks/%s", g->dir, page);
			unlink(path);
		}
	}
}

/*
 * Brings one shard (tasks/<YYYY>/<S>/, tree `shard`) up to date: each task
 * whose tree differs from the shard state's gets its page and row anew,
 * the others keep theirs; then the shard's group page and its state are
 * written, and the aggregate gets its new rows for its old ones (`was`:
 * the shard's tree the aggregate was made from, NULL for none; *stale set
 * when the old rows are not those).  The summary for the top state goes to
 * *summary.
 */
static int do_shard(struct gen *g, git_tree *root, git_tree *shard, const char *key, int trust,
		    const char *was, json_t *agg, int *stale, int64_t now_ms, json_t **summary,
		    size_t *unchanged, amp_error *err)
{
	char path[PATH_MAX], hex[GIT_OID_HEXSZ + 1], page[AMP_DASHBOARD_NAME_MAX],
	     rel[AMP_DASHBOARD_NAME_MAX + 8];
	json_t *old = NULL, *tasks = json_object(), *rows = json_array(), *state = NULL;
	const json_t *old_tasks = NULL;
	struct page p = { NULL, NULL, 0 };
	char *dump = NULL;
	size_t i, n = git_tree_entrycount(shard), skipped = amp_store_skipped(g->st)->count;
	int status = AMP_OK;

	shard_path(g, key, path, sizeof(path));
	if (trust && (old = amp_cache_json(g->st, path)))
		old_tasks = json_object_get(old, "tasks");
	for (i = 0; i < n; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(shard, i);
		const char *task = git_tree_entry_name(e);
		const json_t *hit = json_object_get(old_tasks, task);
		json_t *row = NULL;
		struct stat sb;
		char pagepath[PATH_MAX];

		if (!amp_store_task_in_place(g->st, key, e))
			continue;
		git_oid_tostr(hex, sizeof(hex), git_tree_entry_id(e));
		amp_dashboard_page_name(task, page);
		snprintf(pagepath, sizeof(pagepath), "%s/tasks/%s", g->dir, page);
		if (hit && str(hit, "tree") && !strcmp(str(hit, "tree"), hex) &&
		    json_is_object(json_object_get(hit, "row")) && stat(pagepath, &sb) == 0) {
			row = json_incref(json_object_get(hit, "row"));
			(*unchanged)++;
		} else if ((status = build_task(g, root, task, page, now_ms, &row, err)) < 0) {
			goto cleanup;
		} else if (status == AMP_NOOP) {
			/* No page: the row says why, and the next pass tries
			 * again. */
			row = json_pack("{s:s,s:n,s:s,s:s,s:[],s:[],s:{},s:[],s:I}", "task_id", task,
					"page", "state", "unreadable", "reason", err->message,
					"subtasks", "deadlines", "hours", "open", "last_ms", (json_int_t)-1);
			hex[0] = 0;
			status = AMP_OK;
		}
		if (!row) {
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
			goto cleanup;
		}
		/* The row knows its shard: the aggregate takes a shard's rows
		 * out by it. */
		json_object_set_new(row, "group", json_string(key));
		json_array_append(rows, row);
		json_object_set_new(tasks, task, json_pack("{s:s,s:o}", "tree", hex, "row", row));
	}
	drop_pages(g, old_tasks, tasks);
	if (was && agg_take_out(agg, key, old, was) < 0)
		*stale = 1;
	agg_rows(agg, key, rows, 1);
	/* A pass without a state takes no rows out: the recent list can be
	 * cut to its first rows as it goes, instead of holding every task's
	 * row to the end (at 25,000 tasks a first pass peaked at 127 MB for
	 * it, 52 MB without). */
	if (!trust && agg_trim_recent(agg) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if ((status = dash_page_open(&p, err)) < 0)
		goto cleanup;
	dash_render_group(p.f, key, rows);
	dash_group_name(key, page);
	snprintf(rel, sizeof(rel), "groups/%s", page);
	if ((status = dash_page_finish(g, &p, rel, 1, err)) < 0)
		goto cleanup;
	git_oid_tostr(hex, sizeof(hex), git_tree_id(shard));
	state = json_pack("{s:s,s:O}", "tree", hex, "tasks", tasks);
	if (!state || !(dump = json_dumps(state, JSON_COMPACT))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	shard_path(g, key, path, sizeof(path));
	if ((status = write_state(path, dump, strlen(dump), err)) < 0)
		goto cleanup;
	/* A shard with something skipped is read again on the next pass,
	 * which reports it again (no tree in its summary). */
	if (!(*summary = shard_summary(rows, amp_store_skipped(g->st)->count > skipped ? "" : hex)))
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
cleanup:
	free(dump);
	json_decref(state);
	json_decref(old);
	json_decref(tasks);
	json_decref(rows);
	return status;
}

static long long number(const char *s)
{
	char *end;
	long long v;

	if (!*s || strlen(s) > 12)
		return -1;
	v = strtoll(s, &end, 10);
	return *end ? -1 : v;
}

/* The overview lists shards in their numbers' order ("2" before "10"). */
static int shard_cmp(const void *a, const void *b)
{
	const struct shard *x = a, *y = b;

	if (x->year != y->year)
		return x->year < y->year ? -1 : 1;
	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* Every shard of the tip's task tree into *out (the caller frees). */
static int list_shards(git_repository *repo, git_tree *root, struct shard **out, size_t *count,
		       amp_error *err)
{
	git_tree_entry *te = NULL;
	git_tree *tasks = NULL, *year = NULL;
	struct shard *v = NULL, *nv;
	amp_flat shards = { 0 };
	size_t n = 0, i, j;
	int status = AMP_OK, layout = amp_store_tree_layout(repo, root);
	char digits[600];

	*out = NULL;
	*count = 0;
	if (git_tree_entry_bypath(&te, root, "tasks") < 0) {
		git_error_clear();
		return AMP_OK; /* no task yet */
	}
	if (amp_git_tree_lookup(&tasks, repo, git_tree_entry_id(te)) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read the tree tasks/");
		goto cleanup;
	}
	for (i = 0; i < git_tree_entrycount(tasks); i++) {
		const git_tree_entry *ye = git_tree_entry_byindex(tasks, i);

		if (git_tree_entry_type(ye) != GIT_OBJECT_TREE)
			continue;
		if (amp_git_tree_lookup(&year, repo, git_tree_entry_id(ye)) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot read the tree tasks/%s",
					       amp_term(git_tree_entry_name(ye)));
			goto cleanup;
		}
		/* layout 2's shards are <A>/<B> (store.h "Layout") */
		amp_flat_free(&shards);
		if (amp_store_flatten(repo, year, amp_store_shard_levels(layout), &shards) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot read the tree tasks/%s",
					       amp_term(git_tree_entry_name(ye)));
			goto cleanup;
		}
		for (j = 0; j < shards.count; j++) {
			const git_tree_entry *se = shards.v[j].e;
			const char *sub = shards.v[j].sub;

			if (git_tree_entry_type(se) != GIT_OBJECT_TREE)
				continue;
			if (!(nv = realloc(v, (n + 1) * sizeof(*v)))) {
				status = amp_error_set(err, AMP_EIO, "", "out of memory");
				goto cleanup;
			}
			v = nv;
			snprintf(v[n].key, sizeof(v[n].key), "%s/%s%s%s", git_tree_entry_name(ye), sub,
				 *sub ? "/" : "", git_tree_entry_name(se));
			snprintf(digits, sizeof(digits), "%s%s", sub, git_tree_entry_name(se));
			v[n].year = number(git_tree_entry_name(ye));
			v[n].s = number(digits);
			git_oid_cpy(&v[n].id, git_tree_entry_id(se));
			n++;
		}
		git_tree_free(year);
		year = NULL;
	}
	if (n) /* qsort takes no NULL, even for nothing to sort */
		qsort(v, n, sizeof(*v), shard_cmp);
	*out = v;
	*count = n;
	v = NULL;
cleanup:
	free(v);
	amp_flat_free(&shards);
	git_tree_free(year);
	git_tree_free(tasks);
	git_tree_entry_free(te);
	return status;
}

/* The aggregate anew from every shard's state, for when the one kept could
 * not follow (agg above).  AMP_NOOP when a shard's state is missing: the
 * pass must then start over without trusting any state. */
static int agg_rebuild(const struct gen *g, const struct shard *shards, size_t nshards,
		       json_t **agg)
{
	char path[PATH_MAX];
	json_t *state, *rows;
	size_t i;

	json_decref(*agg);
	*agg = agg_new();
	for (i = 0; i < nshards; i++) {
		shard_path(g, shards[i].key, path, sizeof(path));
		if (!(state = amp_cache_json(g->st, path)))
			return AMP_NOOP;
		rows = state_rows(state);
		agg_rows(*agg, shards[i].key, rows, 1);
		json_decref(rows);
		json_decref(state);
		/* Only rows added: the list is cut as it goes (do_shard). */
		if (agg_trim_recent(*agg) < 0)
			return AMP_EIO;
	}
	return agg_trim_recent(*agg) < 0 ? AMP_EIO : AMP_OK;
}

/* The recent list still holds the RECENT_SHOWN latest rows of all: it had
 * fewer (so it held every row, and the changed shards' rows are all back
 * in), or its last row ranks no lower than the old last row, which ranked
 * before every row it left out. */
static int recent_valid(const json_t *agg, const json_t *old_last)
{
	const json_t *recent = json_object_get(agg, "recent");
	const json_t *last = json_array_get(recent, json_array_size(recent) - 1);

	if (!old_last)
		return 1;
	return json_array_size(recent) == RECENT_SHOWN && dash_recent_cmp(&last, &old_last) <= 0;
}

/* What one pass carries from step to step. */
struct pass {
	struct gen g;
	int64_t now_ms;
	int trust, stale, dirty;
	json_t *old;             /* the top state read, or NULL */
	const json_t *old_shards; /* borrowed from old */
	json_t *agg, *old_last, *byname, *agents;
	struct shard *shards;
	size_t nshards, unchanged;
	long long ntasks, last;
	git_commit *commit;
	git_tree *root;
	char key[128], tip[GIT_OID_HEXSZ + 1], etip[GIT_OID_HEXSZ + 1];
};

/* The directories, the state of the last pass (trusted when it is of this
 * format and policy), the tip and its shards. */
static int pass_open(struct pass *ps, int trust_state, amp_error *err)
{
	const char *dir = ps->g.dir;
	char path[PATH_MAX];
	int status;

	if ((status = ensure_dir(dir, err)) < 0 ||
	    (snprintf(path, sizeof(path), "%s/tasks", dir), status = ensure_dir(path, err)) < 0 ||
	    (snprintf(path, sizeof(path), "%s/groups", dir), status = ensure_dir(path, err)) < 0 ||
	    (snprintf(path, sizeof(path), "%s/%s", dir, STATE_DIR), status = ensure_dir(path, err)) < 0)
		return status;
	policy_key(ps->g.st, ps->key, sizeof(ps->key));
	snprintf(path, sizeof(path), "%s/%s", dir, STATE_FILE);
	/* A state of another format or policy, or none: every page anew. */
	ps->old = trust_state ? amp_cache_json(ps->g.st, path) : NULL;
	ps->trust = ps->old && str(ps->old, "key") && !strcmp(str(ps->old, "key"), ps->key) &&
		    json_is_object(json_object_get(ps->old, "shards")) &&
		    agg_valid(json_object_get(ps->old, "agg"));
	if (ps->trust) {
		ps->old_shards = json_object_get(ps->old, "shards");
		ps->agg = json_incref(json_object_get(ps->old, "agg"));
		if (json_array_size(json_object_get(ps->agg, "recent")) >= RECENT_SHOWN)
			ps->old_last = json_incref(json_array_get(json_object_get(ps->agg, "recent"), RECENT_SHOWN - 1));
	} else {
		ps->agg = agg_new();
	}
	if ((status = amp_store_tip(ps->g.st, amp_store_messages_ref(ps->g.st), &ps->commit, &ps->root, err)) < 0 ||
	    (status = list_shards(amp_store_repo(ps->g.st), ps->root, &ps->shards, &ps->nshards, err)) < 0)
		return status;
	git_oid_tostr(ps->tip, sizeof(ps->tip), git_commit_id(ps->commit));
	/* Whether the state must be written again: a new tip, a shard
	 * changed or gone, the aggregate made anew. */
	ps->dirty = !ps->trust || !str(ps->old, "tip") || strcmp(str(ps->old, "tip"), ps->tip);
	return AMP_OK;
}

/* Every shard of the tip: kept when its tree is the one of the state,
 * else brought up to date (do_shard). */
static int pass_shards(struct pass *ps, amp_error *err)
{
	git_repository *repo = amp_store_repo(ps->g.st);
	git_tree *shard = NULL;
	git_odb *odb = NULL;
	char hex[GIT_OID_HEXSZ + 1];
	size_t i;
	int status = AMP_OK;

	if (git_repository_odb(&odb, repo) < 0)
		return amp_error_git(err, AMP_EIO, "cannot open the object database");
	for (i = 0; i < ps->nshards; i++) {
		const struct shard *sh = &ps->shards[i];
		const json_t *hit = json_object_get(ps->old_shards, sh->key);
		json_t *summary = NULL;

		git_oid_tostr(hex, sizeof(hex), &sh->id);
		/* The same shard tree (still in the object database: a tree
		 * gone is damage the records must show): not one of its tasks
		 * changed.  (Its files are not looked at, so that a pass costs
		 * no system call per shard: a group page deleted by hand comes
		 * back as a task page does, when the shard changes; a shard
		 * state gone makes the aggregate anew then.) */
		if (sum_tree(hit) && !strcmp(sum_tree(hit), hex) && git_odb_exists(odb, &sh->id)) {
			summary = json_incref((json_t *)hit);
			ps->unchanged += (size_t)sum_int(hit, SUM_PAGES);
		} else {
			ps->dirty = 1;
			if (amp_git_tree_lookup(&shard, repo, &sh->id) < 0) {
				status = amp_error_git(err, AMP_EIO, "cannot read the tree tasks/%s", amp_term(sh->key));
				goto cleanup;
			}
			status = do_shard(&ps->g, ps->root, shard, sh->key, ps->trust, sum_tree(hit), ps->agg,
					  &ps->stale, ps->now_ms, &summary, &ps->unchanged, err);
			git_tree_free(shard);
			shard = NULL;
			if (status < 0)
				goto cleanup;
		}
		ps->ntasks += sum_int(summary, SUM_COUNT);
		if (sum_int(summary, SUM_LAST) > ps->last)
			ps->last = sum_int(summary, SUM_LAST);
		json_object_set_new(ps->byname, sh->key, summary);
	}
cleanup:
	git_odb_free(odb);
	return status;
}

/* Shards gone from the SSOT (a rewritten history): their pages too. */
static void pass_gone(struct pass *ps)
{
	char path[PATH_MAX], name[AMP_DASHBOARD_NAME_MAX];
	const char *k;
	json_t *v, *gone;

	json_object_foreach((json_t *)ps->old_shards, k, v) {
		if (json_object_get(ps->byname, k))
			continue;
		ps->dirty = 1;
		shard_path(&ps->g, k, path, sizeof(path));
		gone = amp_cache_json(ps->g.st, path);
		drop_pages(&ps->g, json_object_get(gone, "tasks"), NULL);
		if (agg_take_out(ps->agg, k, gone, sum_tree(v)) < 0)
			ps->stale = 1;
		json_decref(gone);
		unlink(path);
		dash_group_name(k, name);
		snprintf(path, sizeof(path), "%s/groups/%s", ps->g.dir, name);
		unlink(path);
	}
}

/* Records only added, the aggregate follows; one that cannot (the newest
 * hour went back, a recent row left that another shard's row must
 * replace) is made anew from every shard's state.  AMP_NOOP: a shard's
 * state is missing, the pass must start over. */
static int pass_agg(struct pass *ps, amp_error *err)
{
	int status;

	if (agg_trim_recent(ps->agg) < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (!ps->stale && ival(ps->agg, "h1") == (ps->last < 0 ? -1 : ps->last / HOUR_MS) &&
	    recent_valid(ps->agg, ps->old_last))
		return AMP_OK;
	ps->dirty = 1;
	if ((status = agg_rebuild(&ps->g, ps->shards, ps->nshards, &ps->agg)) == AMP_NOOP)
		return status;
	if (status < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	return AMP_OK;
}

/* errors.html when the errors ref moved; agents.html (and the agents the
 * overview counts) when the messages ref did. */
static int pass_side_pages(struct pass *ps, amp_error *err)
{
	struct page p;
	char path[PATH_MAX];
	int status;
	amp_error why;

	if ((status = dash_write_file(&ps->g, "favicon.svg", dash_favicon, strlen(dash_favicon), 1, err)) < 0)
		return status;
	tip_hex(ps->g.st, amp_store_errors_ref(ps->g.st), ps->etip, sizeof(ps->etip));
	snprintf(path, sizeof(path), "%s/errors.html", ps->g.dir);
	if (!ps->trust || !str(ps->old, "errors_tip") || strcmp(str(ps->old, "errors_tip"), ps->etip) ||
	    access(path, F_OK) != 0) {
		if ((status = dash_page_open(&p, err)) < 0)
			return status;
		if ((status = dash_render_errors(ps->g.st, ps->g.dir, p.f, err)) < 0) {
			fclose(p.f);
			free(p.buf);
			return status;
		}
		if ((status = dash_page_finish(&ps->g, &p, "errors.html", 1, err)) < 0)
			return status;
	}
	ps->dirty |= !str(ps->old, "errors_tip") || strcmp(str(ps->old, "errors_tip"), ps->etip);
	snprintf(path, sizeof(path), "%s/agents.html", ps->g.dir);
	if (!ps->dirty && json_is_object(json_object_get(ps->old, "agents")) && access(path, F_OK) == 0) {
		ps->agents = json_incref(json_object_get(ps->old, "agents"));
		return AMP_OK;
	}
	if ((status = dash_page_open(&p, err)) < 0)
		return status;
	/* The agents are read from the history's commits: one that cannot
	 * be read says so on the page, the rest of the site is still made. */
	if (dash_render_agents(ps->g.st, p.f, ps->now_ms, &ps->agents, &why) < 0) {
		fclose(p.f);
		free(p.buf);
		if ((status = dash_page_open(&p, err)) < 0)
			return status;
		dash_page_head(p.f, "amp dashboard: agents", "");
		fputs("<p class=\"overdue\">The agents cannot be listed: ", p.f);
		amp_html_put(p.f, why.message, 0);
		fputs("</p>\n", p.f);
		dash_page_tail(p.f, -1);
	}
	return dash_page_finish(&ps->g, &p, "agents.html", 1, err);
}

/* [[page name, label, tasks]] of the group pages, in the shards' order. */
static json_t *group_list(const struct pass *ps)
{
	json_t *out = json_array();
	char name[AMP_DASHBOARD_NAME_MAX], label[640];
	size_t i;

	for (i = 0; i < ps->nshards; i++) {
		dash_group_name(ps->shards[i].key, name);
		dash_group_label(ps->shards[i].key, label, sizeof(label));
		json_array_append_new(out, json_pack("[s,s,I]", name, label,
			(json_int_t)sum_int(json_object_get(ps->byname, ps->shards[i].key), SUM_COUNT)));
	}
	return out;
}

/* The pages that depend on the time: needs.html, the filter pages and the
 * overview, each written when its bytes changed. */
static int pass_overview(struct pass *ps, amp_error *err)
{
	struct dash_overview o = { ps->agg, NULL, 0, NULL, ps->agents, ps->ntasks, 0, ps->now_ms };
	struct page p;
	const char *k;
	json_t *v;
	size_t i;
	int status = AMP_OK;

	if (dash_needs_list(ps->agg, ps->now_ms, &o.needs, &o.nneeds) < 0 || !(o.groups = group_list(ps))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	json_object_foreach(json_object_get(ps->agg, "firsts"), k, v)
		o.nopen += json_integer_value(v);
	for (i = 0; dash_filters[i][0]; i++) {
		if ((status = dash_page_open(&p, err)) < 0)
			goto cleanup;
		dash_render_filter_page(p.f, dash_filters[i][0], o.needs, o.nneeds, ps->now_ms);
		if ((status = dash_page_finish(&ps->g, &p, dash_filters[i][0], 1, err)) < 0)
			goto cleanup;
	}
	if ((status = dash_page_open(&p, err)) < 0)
		goto cleanup;
	dash_render_tasks_static(p.f, o.groups);
	if ((status = dash_page_finish(&ps->g, &p, "tasks.html", 1, err)) < 0 ||
	    (status = dash_page_open(&p, err)) < 0)
		goto cleanup;
	dash_render_index(p.f, &o);
	status = dash_page_finish(&ps->g, &p, "index.html", 1, err);
cleanup:
	free(o.needs);
	json_decref((json_t *)o.groups);
	return status;
}

/* The state last: a pass that failed before leaves the old one, which at
 * worst rebuilds pages that were already current. */
static int pass_save(struct pass *ps, amp_error *err)
{
	char path[PATH_MAX], *dump = NULL;
	json_t *state;
	int status;

	if (!ps->dirty)
		return AMP_OK;
	state = json_pack("{s:s,s:s,s:s,s:O,s:O,s:O}", "key", ps->key, "tip", ps->tip, "errors_tip",
			  ps->etip, "shards", ps->byname, "agg", ps->agg, "agents", ps->agents);
	snprintf(path, sizeof(path), "%s/%s", ps->g.dir, STATE_FILE);
	if (!state || !(dump = json_dumps(state, JSON_COMPACT)))
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
	else
		status = write_state(path, dump, strlen(dump), err);
	free(dump);
	json_decref(state);
	return status;
}

/* One pass; `trust_state` 0 ignores every state (everything anew).
 * AMP_NOOP: the state turned out unusable, run again without it. */
static int write_pass(amp_store *st, const char *dir, int64_t now_ms, int trust_state,
		      json_t **report, amp_error *err)
{
	struct pass ps;
	int status;

	memset(&ps, 0, sizeof(ps));
	ps.g.st = st;
	ps.g.dir = dir;
	ps.g.written = json_array();
	ps.now_ms = now_ms;
	ps.byname = json_object();
	ps.last = -1;
	if ((status = pass_open(&ps, trust_state, err)) < 0 || (status = pass_shards(&ps, err)) < 0)
		goto cleanup;
	pass_gone(&ps);
	if ((status = pass_agg(&ps, err)) != AMP_OK || (status = pass_side_pages(&ps, err)) < 0 ||
	    (status = pass_overview(&ps, err)) < 0 || (status = pass_save(&ps, err)) < 0)
		goto cleanup;
	if (report)
		*report = json_pack("{s:s,s:s,s:I,s:O,s:i}", "dir", dir, "tip", ps.tip, "tasks",
				    (json_int_t)ps.ntasks, "written", ps.g.written, "unchanged",
				    (int)ps.unchanged);
cleanup:
	free(ps.shards);
	json_decref(ps.old);
	json_decref(ps.agg);
	json_decref(ps.old_last);
	json_decref(ps.byname);
	json_decref(ps.agents);
	json_decref(ps.g.written);
	git_tree_free(ps.root);
	git_commit_free(ps.commit);
	return status;
}

int amp_dashboard_write(amp_store *st, const char *dir, int64_t now_ms, json_t **report,
			amp_error *err)
{
	int status;

	if (report)
		*report = NULL;
	if ((status = write_pass(st, dir, now_ms, 1, report, err)) == AMP_NOOP)
		status = write_pass(st, dir, now_ms, 0, report, err);
	return status;
}
