/*
 * treediff.c - the one walker of two trees (store.h amp_tree_diff_walk),
 * and what the store reads with it: the records two tips differ by, and
 * their times (the map is rectimes.c's).
 */
#include "store_int.h"
#include "base/gitobj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the walker (store.h) ------------------------------------------------ */

static int walk(amp_tree_diff *d, git_tree *a, git_tree *b, const char *prefix, int depth,
		int how, const char *task);

/* 1 when e is a fan-out directory the walk goes through (store.h). */
static int fanout(const amp_tree_diff_entry *e)
{
	const git_tree_entry *t = e->b ? e->b : e->a;

	return (e->depth == 3 || e->depth == 4) && !strncmp(e->prefix, "tasks/", 6) &&
	       git_tree_entry_type(t) == GIT_OBJECT_TREE && amp_store_is_fanout(e->name);
}

/* Walks the subtrees of e (either side that is not a tree: as empty),
 * `how` there, one level down or (a fan-out directory) at e's depth. */
static int descend(amp_tree_diff *d, const amp_tree_diff_entry *e, int how, int through)
{
	git_tree *sa = NULL, *sb = NULL;
	int rc;

	if ((e->b && git_tree_entry_type(e->b) == GIT_OBJECT_TREE &&
	     amp_git_tree_lookup(&sb, d->repo, git_tree_entry_id(e->b)) < 0) ||
	    (e->a && git_tree_entry_type(e->a) == GIT_OBJECT_TREE &&
	     amp_git_tree_lookup(&sa, d->repo, git_tree_entry_id(e->a)) < 0))
		rc = d->unreadable ? d->unreadable(d, e) : -1;
	else
		rc = walk(d, sa, sb, e->path, through ? e->depth : e->depth + 1, how,
			  through || e->depth > 3 ? e->task : e->depth == 3 ? e->name : NULL);
	git_tree_free(sa);
	git_tree_free(sb);
	return rc;
}

/* Visits e, whose name and sides are set, at its path (built in `path`),
 * and walks below it when the visitor says so; a fan-out directory is
 * walked through (`how` kept), not visited. */
static int visit(amp_tree_diff *d, amp_tree_diff_entry *e, char *path, int how)
{
	int n = snprintf(path, AMP_PATH_MAX, "%s%s%s", e->prefix, *e->prefix ? "/" : "", e->name);
	int rc;

	e->path_len = n < 0 ? AMP_PATH_MAX : (size_t)n;
	if (fanout(e) && e->path_len < AMP_PATH_MAX)
		return descend(d, e, how, 1);
	if ((rc = d->visit(d, e)) < 0)
		return rc;
	return rc & AMP_TREE_DIFF_DESCEND ? descend(d, e, rc & AMP_TREE_DIFF_GONE, 0) : 0;
}

int amp_tree_diff_walk(amp_tree_diff *d, git_tree *a, git_tree *b, const char *prefix,
		       int depth, int how)
{
	const char *task = depth > 3 ? strrchr(prefix, '/') : NULL;

	return walk(d, a, b, prefix, depth, how, task ? task + 1 : NULL);
}

static int walk(amp_tree_diff *d, git_tree *a, git_tree *b, const char *prefix, int depth,
		int how, const char *task)
{
	size_t i, na = a ? git_tree_entrycount(a) : 0, nb = b ? git_tree_entrycount(b) : 0;
	char path[AMP_PATH_MAX];
	amp_tree_diff_entry e = { prefix, NULL, path, 0, depth, NULL, NULL, task };
	int rc = 0;

	for (i = 0; i < nb && rc == 0; i++) {
		e.b = git_tree_entry_byindex(b, i);
		e.name = git_tree_entry_name(e.b);
		e.a = a ? git_tree_entry_byname(a, e.name) : NULL;
		if (e.a && git_oid_equal(git_tree_entry_id(e.a), git_tree_entry_id(e.b)) &&
		    (!d->modes || git_tree_entry_filemode(e.a) == git_tree_entry_filemode(e.b)))
			continue;
		rc = visit(d, &e, path, how);
	}
	for (i = 0; i < na && rc == 0 && (how & AMP_TREE_DIFF_GONE); i++) {
		e.a = git_tree_entry_byindex(a, i);
		e.name = git_tree_entry_name(e.a);
		e.b = NULL;
		if (b && git_tree_entry_byname(b, e.name))
			continue;
		rc = visit(d, &e, path, how);
	}
	return rc;
}

/* ---- comparing tips ------------------------------------------------------ */

/* Where diff_visit puts what it finds: a JSON object (amp_store_diff_tasks)
 * or a map of record times (amp_store_diff_times, ms >= 0). */
struct touched {
	json_t *json;
	amp_record_times *times;
	int whole; /* amp_store_diff_tasks_whole */
	amp_store *skip; /* not NULL: what is not a task in its place is
			  * skipped and noted there (amp_store_task_in_place) */
	int64_t ms; /* < 0: every record maps to true; else its least ms */
};

/* Marks record `name` of `task`: true, or (ms >= 0) the least ms seen for
 * it. */
static void touch(struct touched *to, const char *task, const char *name, int64_t ms)
{
	json_t *files, *cur;

	if (to->times) {
		/* Out of memory: a record without its time counts from its
		 * timestamp (amp_watch_walk_records is best effort). */
		amp_record_times_put(to->times, task, name, ms);
		return;
	}
	if (!json_is_object(files = json_object_get(to->json, task)))
		json_object_set_new(to->json, task, files = json_object());
	cur = json_object_get(files, name);
	if (ms < 0)
		json_object_set_new(files, name, json_true());
	else if (!json_is_integer(cur) || json_integer_value(cur) > ms)
		json_object_set_new(files, name, json_integer(ms));
}

/* amp_store_diff_tasks's visit of an entry at `depth` (4: a record,
 * tasks/<year>/<shard>/<task>/<record>). */
static int diff_visit(amp_tree_diff *d, const amp_tree_diff_entry *e)
{
	struct touched *touched = d->ctx;
	const git_tree_entry *ae = e->a, *be = e->b;
	const char *name = e->name;
	int depth = e->depth;

	if (!be) {
		/* A task whose records vanished (history rewritten) is re-read
		 * too: a task directory of a that b lacks (ms < 0). */
		if (!json_object_get(touched->json, name))
			json_object_set_new(touched->json, name, json_object());
		return AMP_TREE_DIFF_SKIP;
	}
	if (depth == 4) {
		touch(touched, e->task, name, touched->ms);
		return AMP_TREE_DIFF_SKIP;
	}
	if (depth == 3 && touched->skip && !amp_store_task_in_place(touched->skip, e->prefix + 6, be))
		return AMP_TREE_DIFF_SKIP;
	if (git_tree_entry_type(be) != GIT_OBJECT_TREE ||
	    (depth == 0 && strcmp(name, "tasks")))
		return AMP_TREE_DIFF_SKIP;
	if (depth == 3 && !ae && touched->whole) {
		/* a task directory a has not: every record is new */
		json_object_set_new(touched->json, name, json_true());
		return AMP_TREE_DIFF_SKIP;
	}
	/* Below a shard (depth 2), the tasks of a that b lacks too. */
	return AMP_TREE_DIFF_DESCEND | (depth == 2 && touched->ms < 0 ? AMP_TREE_DIFF_GONE : 0);
}

/* A task directory that cannot be read: the task is read whole, or found
 * broken (task_broken), alone. */
static int diff_unreadable(amp_tree_diff *d, const amp_tree_diff_entry *e)
{
	struct touched *touched = d->ctx;

	git_error_clear();
	if (touched->ms >= 0)
		return 0;
	if (e->depth == 3 && !amp_store_is_fanout(e->name)) {
		json_object_set_new(touched->json, e->name, json_null());
		return 0;
	}
	if (e->task) { /* a fan-out directory of the task's */
		json_object_set_new(touched->json, e->task, json_null());
		return 0;
	}
	return -1;
}

/* The records of task directory tree `bt` (of task `task`) that `at`
 * (NULL: none) lacks or holds with other content, by name, whatever
 * either's layout, into `to`. */
static int diff_task_files(git_repository *repo, const git_oid *at, const git_oid *bt,
			   const char *task, struct touched *to)
{
	git_tree *ta = NULL, *tb = NULL;
	amp_flat fa = { 0 }, fb = { 0 };
	size_t i, j = 0;
	int rc = 0, c;

	if ((at && (amp_git_tree_lookup(&ta, repo, at) < 0 || amp_store_task_files(repo, ta, &fa) < 0)) ||
	    amp_git_tree_lookup(&tb, repo, bt) < 0 || amp_store_task_files(repo, tb, &fb) < 0) {
		git_error_clear();
		if (to->ms < 0)
			json_object_set_new(to->json, task, json_null());
		goto cleanup;
	}
	/* both in name order (amp_store_task_files) */
	for (i = 0; i < fb.count; i++) {
		const char *name = git_tree_entry_name(fb.v[i].e);

		while (j < fa.count && (c = strcmp(git_tree_entry_name(fa.v[j].e), name)) < 0)
			j++;
		if (j < fa.count && !strcmp(git_tree_entry_name(fa.v[j].e), name) &&
		    git_oid_equal(git_tree_entry_id(fa.v[j].e), git_tree_entry_id(fb.v[i].e)))
			continue;
		touch(to, task, name, to->ms);
	}
cleanup:
	amp_flat_free(&fa);
	amp_flat_free(&fb);
	git_tree_free(ta);
	git_tree_free(tb);
	return rc;
}

/* diff_tips for two trees of different layouts (store.h "Layout": the
 * migration's commit, or tips either side of it): the tasks paired by
 * name, not by place, so that moving records adds none. */
static int diff_across(git_repository *repo, git_tree *a, git_tree *b, struct touched *to)
{
	amp_task_tree *ta = NULL, *tb = NULL;
	size_t na = 0, nb = 0, i, j = 0;
	int rc = 0, have;

	if (amp_store_tree_tasks(repo, a, &ta, &na) < 0 ||
	    amp_store_tree_tasks(repo, b, &tb, &nb) < 0) {
		rc = -1;
		goto cleanup;
	}
	for (i = 0; i <= nb && rc == 0; i++) {
		/* the tasks of a that b lacks: vanished (ms < 0 only) */
		for (; j < na && (i == nb || strcmp(ta[j].name, tb[i].name) < 0); j++)
			if (to->ms < 0 && to->json && !json_object_get(to->json, ta[j].name))
				json_object_set_new(to->json, ta[j].name, json_object());
		if (i == nb)
			break;
		have = j < na && !strcmp(ta[j].name, tb[i].name);
		if (have && git_oid_equal(&ta[j].id, &tb[i].id)) {
			j++;
			continue;
		}
		if (!have && to->whole)
			json_object_set_new(to->json, tb[i].name, json_true());
		else
			rc = diff_task_files(repo, have ? &ta[j].id : NULL, &tb[i].id, tb[i].name, to);
		j += have;
	}
cleanup:
	free(ta);
	free(tb);
	return rc;
}

/* amp_store_diff_tasks and its variants: what differs between a and b,
 * into `to`. */
static int diff_tips(git_repository *repo, git_tree *a, git_tree *b, struct touched *to)
{
	amp_tree_diff d = { repo, 0, diff_visit, diff_unreadable, to };

	if (a && b && amp_store_tree_layout(repo, a) != amp_store_tree_layout(repo, b))
		return diff_across(repo, a, b, to);
	return amp_tree_diff_walk(&d, a, b, "", 0, 0);
}

int amp_store_diff_tasks(git_repository *repo, git_tree *a, git_tree *b,
			 json_t *touched, int64_t ms)
{
	struct touched to = { touched, NULL, 0, NULL, ms };

	return diff_tips(repo, a, b, &to);
}

int amp_store_diff_tasks_whole(git_repository *repo, amp_store *skip, git_tree *a, git_tree *b,
			       json_t *touched)
{
	struct touched to = { touched, NULL, 1, skip, -1 };

	return diff_tips(repo, a, b, &to);
}

int amp_store_diff_times(git_repository *repo, git_tree *a, git_tree *b,
			 amp_record_times *times, int64_t ms)
{
	struct touched to = { NULL, times, 0, NULL, ms };

	/* Only ms < 0 writes JSON of its own (null, {}). */
	if (ms < 0 || !times)
		return -1;
	return diff_tips(repo, a, b, &to);
}
