/*
 * layout.c - where a task and its records live in the SSOT's tree, in
 * either of its two layouts (store.h "Layout"), and the one way readers
 * find them: a task's directory looked up in the layout the tree says,
 * its records listed through the fan-out directories of the new layout.
 *
 * Layout 1 (d39ab41 and before): tasks/<YYYY>/<S>/<task_id>/<record>, S
 * the task number but its last two digits: a year tree of one entry per
 * 100 tasks (30 KB at 1M messages), a task tree of one entry per record,
 * both rewritten whole by every write into them.
 *
 * Layout 2: tasks/<YYYY>/<A>/<B>/<task_id>/<s1>/<s2>/<record>: B the
 * last two digits of S, A the rest ("0" when none), so a year tree has
 * one entry per 10,000 tasks and its subtrees at most 100; s1 and s2 the
 * first four of the record's six-digit sequence number in two groups of
 * AMP_FANOUT_DIGITS, so no tree of a task holds more than 100 entries and
 * a write rewrites three of them, whatever the task's length (as git's
 * notes fan out; share/doc/storage.md "Layout" has the measurement).
 */
#include "store_int.h"
#include "base/gitobj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"

/* Digits of the sequence number per fan-out level: 100 entries a tree. */
#define AMP_FANOUT_DIGITS 2
/* The sequence number's width in a record's name (names.c). */
#define SEQ_DIGITS 6

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

int amp_store_task_dir(int layout, const char *task_id, char *buf, size_t bufsz)
{
	size_t len = strlen(task_id), shard_len;
	const char *shard = task_id + 7;
	int n;

	if (!amp_task_id_valid(task_id, len))
		return -1;
	shard_len = len - 7 - 2;
	if (layout == AMP_LAYOUT_FLAT)
		n = snprintf(buf, bufsz, "tasks/%.4s/%.*s/%s", task_id + 2, (int)shard_len, shard,
			     task_id);
	else if (shard_len <= 2)
		n = snprintf(buf, bufsz, "tasks/%.4s/0/%.*s/%s", task_id + 2, (int)shard_len, shard,
			     task_id);
	else
		n = snprintf(buf, bufsz, "tasks/%.4s/%.*s/%.2s/%s", task_id + 2, (int)shard_len - 2,
			     shard, shard + shard_len - 2, task_id);
	return fits(n, bufsz) ? 0 : -1;
}

int amp_store_record_subdir(int layout, int seq, char *buf, size_t bufsz)
{
	char digits[16];
	size_t at = 0;
	int i;

	if (seq < 0 || seq > 999999 || bufsz < 1)
		return -1;
	buf[0] = '\0';
	if (layout == AMP_LAYOUT_FLAT)
		return 0;
	snprintf(digits, sizeof(digits), "%0*d", SEQ_DIGITS, seq);
	for (i = 0; i + AMP_FANOUT_DIGITS <= SEQ_DIGITS - AMP_FANOUT_DIGITS; i += AMP_FANOUT_DIGITS) {
		if (at + AMP_FANOUT_DIGITS + 2 > bufsz)
			return -1;
		memcpy(buf + at, digits + i, AMP_FANOUT_DIGITS);
		at += AMP_FANOUT_DIGITS;
		buf[at++] = '/';
	}
	if (at)
		at--; /* no trailing slash */
	buf[at] = '\0';
	return 0;
}

int amp_store_record_path(int layout, const char *task_id, const char *name, char *buf,
			  size_t bufsz)
{
	char dir[128], sub[32];
	const char *id;
	size_t id_len;
	amp_entry_kind kind;
	int seq, n;

	if (amp_store_task_dir(layout, task_id, dir, sizeof(dir)) < 0 ||
	    amp_store_entry_parse(name, &seq, &kind, &id, &id_len) < 0 ||
	    amp_store_record_subdir(layout, seq, sub, sizeof(sub)) < 0)
		return -1;
	n = snprintf(buf, bufsz, "%s/%s%s%s", dir, sub, *sub ? "/" : "", name);
	return fits(n, bufsz) ? 0 : -1;
}

/*
 * The layout of the last marker read, by its id (an object's name is the
 * hash of its content, so the same id is the same layout): every write
 * reads the layout of its tip, and the marker lies in `amp init`'s pack,
 * the oldest, so right after each flush of an import libgit2 probed every
 * pack for it, newest first, and the index pages so touched made the
 * import's peak grow with its pack count (share/doc/performance.md).
 */
static git_oid known_marker;
static int known_layout = -1;

int amp_store_record_path_parse(int layout, const char *path, char *task, size_t tasksz,
				const char **name)
{
	const char *slash[8], *p = path;
	char want[AMP_PATH_MAX];
	size_t n = 0, len, at;
	int depth;

	if (strncmp(path, "tasks/", 6))
		return -1;
	while (n < 8 && (p = strchr(p, '/')))
		slash[n++] = p++;
	/* tasks/Y/S/T/name: 4 slashes; tasks/Y/A/B/T/s1/s2/name: 7 */
	depth = n == 4 && !p ? AMP_LAYOUT_FLAT : n == 7 && !p ? AMP_LAYOUT_FANNED : -1;
	if (depth < 0 || (layout && layout != depth))
		return -1;
	at = depth == AMP_LAYOUT_FLAT ? 2 : 3;
	len = (size_t)(slash[at + 1] - slash[at] - 1);
	if (len >= tasksz)
		return -1;
	memcpy(task, slash[at] + 1, len);
	task[len] = '\0';
	*name = slash[n - 1] + 1;
	if (layout && (amp_store_record_path(layout, task, *name, want, sizeof(want)) < 0 ||
		       strcmp(want, path)))
		return -1;
	return 0;
}

int amp_store_tree_layout(git_repository *repo, git_tree *root)
{
	const git_tree_entry *e = root ? git_tree_entry_byname(root, AMP_LAYOUT_FILE) : NULL;
	git_blob *blob = NULL;
	int layout = AMP_LAYOUT_UNKNOWN;

	if (!e)
		return AMP_LAYOUT_FLAT;
	if (git_tree_entry_type(e) != GIT_OBJECT_BLOB)
		return AMP_LAYOUT_UNKNOWN;
	if (known_layout >= 0 && git_oid_equal(git_tree_entry_id(e), &known_marker))
		return known_layout;
	/* A blob that cannot be read (out of memory, a damaged object) says
	 * nothing of the layout: libgit2's reason is kept for the caller. */
	if (git_blob_lookup(&blob, repo, git_tree_entry_id(e)) < 0)
		return AMP_LAYOUT_UNREADABLE;
	if (git_blob_rawsize(blob) == 2 && !memcmp(git_blob_rawcontent(blob), "2\n", 2))
		layout = AMP_LAYOUT_FANNED;
	git_blob_free(blob);
	git_oid_cpy(&known_marker, git_tree_entry_id(e));
	known_layout = layout;
	return layout;
}

int amp_store_layout_error(int layout, amp_error *err)
{
	if (layout == AMP_LAYOUT_UNREADABLE)
		return amp_error_git(err, AMP_EIO, "cannot read %s", AMP_LAYOUT_FILE);
	return amp_error_set(err, AMP_EIO, AMP_LAYOUT_FILE,
			     "not a layout this amp knows (it writes 1 and 2): a newer amp's SSOT");
}

int amp_store_layout(amp_store *st, git_tree *root, amp_error *err)
{
	int layout = amp_store_tree_layout(st->repo, root);

	return layout < 0 ? amp_store_layout_error(layout, err) : layout;
}

/* Looks up `path` below root: 0, GIT_ENOTFOUND (cleared) or a libgit2
 * error. */
static int lookup(git_tree *root, const char *path, git_tree_entry **out)
{
	int rc = git_tree_entry_bypath(out, root, path);

	if (rc == GIT_ENOTFOUND)
		git_error_clear();
	return rc;
}

int amp_store_task_lookup(git_tree *root, const char *task_id, git_tree_entry **out,
			  char *dir, size_t dirsz)
{
	int rc = GIT_ENOTFOUND, layout;

	*out = NULL;
	/* The new place first: the one a migrated or new SSOT has. */
	for (layout = AMP_LAYOUT_FANNED; layout >= AMP_LAYOUT_FLAT && rc == GIT_ENOTFOUND; layout--) {
		if (amp_store_task_dir(layout, task_id, dir, dirsz) < 0)
			return GIT_ENOTFOUND;
		if (root)
			rc = lookup(root, dir, out);
	}
	return rc;
}

int amp_store_record_lookup(git_tree *root, const char *task_id, const char *name,
			    git_tree_entry **out, char *path, size_t pathsz)
{
	int rc = GIT_ENOTFOUND, layout;

	*out = NULL;
	for (layout = AMP_LAYOUT_FANNED; layout >= AMP_LAYOUT_FLAT && rc == GIT_ENOTFOUND; layout--) {
		if (amp_store_record_path(layout, task_id, name, path, pathsz) < 0)
			return GIT_ENOTFOUND;
		if (root)
			rc = lookup(root, path, out);
	}
	return rc;
}

/* ---- flattening fan-out directories --------------------------------------- */

void amp_flat_free(amp_flat *f)
{
	size_t i;

	for (i = 0; i < f->ntrees; i++) {
		git_tree_free(f->trees[i]);
		free(f->subs[i]);
	}
	free(f->trees);
	free(f->subs);
	free(f->v);
	memset(f, 0, sizeof(*f));
}

static int flat_add(amp_flat *f, const git_tree_entry *e, const char *sub)
{
	if (f->count == f->alloc) {
		size_t alloc = f->alloc ? f->alloc * 2 : 64;
		amp_flat_entry *grown = realloc(f->v, alloc * sizeof(*grown));

		if (!grown) {
			git_error_set_oom();
			return -1;
		}
		f->v = grown;
		f->alloc = alloc;
	}
	f->v[f->count].e = e;
	f->v[f->count].sub = sub;
	f->count++;
	return 0;
}

/* Keeps t (taken over) and its path `sub` (copied) in f; the copy, or
 * NULL (t freed) when out of memory. */
static const char *keep_tree(amp_flat *f, git_tree *t, const char *sub)
{
	git_tree **grown = realloc(f->trees, (f->ntrees + 1) * sizeof(*grown));
	char **subs = grown ? realloc(f->subs, (f->ntrees + 1) * sizeof(*subs)) : NULL;
	char *copy = subs ? strdup(sub) : NULL;

	if (grown)
		f->trees = grown;
	if (subs)
		f->subs = subs;
	if (!copy) {
		git_tree_free(t);
		git_error_set_oom();
		return NULL;
	}
	f->trees[f->ntrees] = t;
	f->subs[f->ntrees++] = copy;
	return copy;
}

static int flatten(git_repository *repo, git_tree *tree, const char *sub, int levels,
		   amp_flat *f)
{
	size_t i, n = git_tree_entrycount(tree);
	char below[64];
	const char *kept;

	for (i = 0; i < n; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		git_tree *t = NULL;

		if (levels > 0 && git_tree_entry_type(e) == GIT_OBJECT_TREE &&
		    all_digits(git_tree_entry_name(e)) &&
		    fits(snprintf(below, sizeof(below), "%s%s%s", sub, *sub ? "/" : "",
				  git_tree_entry_name(e)), sizeof(below))) {
			if (amp_git_tree_lookup(&t, repo, git_tree_entry_id(e)) < 0 ||
			    !(kept = keep_tree(f, t, below)) ||
			    flatten(repo, t, kept, levels - 1, f) < 0)
				return -1;
			continue;
		}
		if (flat_add(f, e, sub) < 0)
			return -1;
	}
	return 0;
}

static int cmp_flat_name(const void *a, const void *b)
{
	return strcmp(git_tree_entry_name(((const amp_flat_entry *)a)->e),
		      git_tree_entry_name(((const amp_flat_entry *)b)->e));
}

int amp_store_flatten(git_repository *repo, git_tree *tree, int levels, amp_flat *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	if (flatten(repo, tree, "", levels, out) < 0) {
		amp_flat_free(out);
		return -1;
	}
	/* Records come out in name order, which is sequence order, unless a
	 * tree mixes records and fan-out directories (made by hand). */
	for (i = 1; i < out->count; i++)
		if (strcmp(git_tree_entry_name(out->v[i - 1].e), git_tree_entry_name(out->v[i].e)) > 0)
			break;
	if (i < out->count)
		qsort(out->v, out->count, sizeof(*out->v), cmp_flat_name);
	return 0;
}

int amp_store_task_files(git_repository *repo, git_tree *task_tree, amp_flat *out)
{
	return amp_store_flatten(repo, task_tree, SEQ_DIGITS / AMP_FANOUT_DIGITS, out);
}

int amp_store_shard_levels(int layout)
{
	return layout == AMP_LAYOUT_FLAT ? 0 : 1;
}

int amp_store_is_fanout(const char *name)
{
	return all_digits(name);
}

int amp_task_log_record_path(const amp_task_log *log, const char *name, char *buf,
			     size_t bufsz)
{
	if (log->layout < 0)
		return -1;
	return amp_store_record_path(log->layout ? log->layout : AMP_LAYOUT_FLAT, log->task_id,
				     name, buf, bufsz);
}

int amp_task_log_entry_path(const amp_task_log *log, const amp_entry *e, char *buf,
			    size_t bufsz)
{
	char name[320];

	if (amp_store_entry_name(e->seq, e->kind, e->id, name, sizeof(name)) < 0)
		return -1;
	return amp_task_log_record_path(log, name, buf, bufsz);
}

/* ---- the tasks of a tree, in either layout -------------------------------- */

static int cmp_task_tree(const void *a, const void *b)
{
	return strcmp(((const amp_task_tree *)a)->name, ((const amp_task_tree *)b)->name);
}

/* Adds the task directories below `tree` (a year, or a fan-out directory
 * `levels` above the tasks) to *v. */
static int tasks_below(git_repository *repo, git_tree *tree, int levels, amp_task_tree **v,
		       size_t *count, size_t *alloc)
{
	size_t i, n = git_tree_entrycount(tree);
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		const char *name = git_tree_entry_name(e);
		git_tree *sub = NULL;

		if (git_tree_entry_type(e) != GIT_OBJECT_TREE)
			continue;
		if (amp_task_id_valid(name, strlen(name)) && strlen(name) < sizeof((*v)->name)) {
			if (*count == *alloc) {
				size_t grown_n = *alloc ? *alloc * 2 : 64;
				amp_task_tree *grown = realloc(*v, grown_n * sizeof(*grown));

				if (!grown)
					return -1;
				*v = grown;
				*alloc = grown_n;
			}
			snprintf((*v)[*count].name, sizeof((*v)[*count].name), "%s", name);
			git_oid_cpy(&(*v)[(*count)++].id, git_tree_entry_id(e));
			continue;
		}
		if (levels <= 0 || !all_digits(name))
			continue;
		if (amp_git_tree_lookup(&sub, repo, git_tree_entry_id(e)) < 0)
			return -1;
		rc = tasks_below(repo, sub, levels - 1, v, count, alloc);
		git_tree_free(sub);
	}
	return rc;
}

int amp_store_tree_tasks(git_repository *repo, git_tree *root, amp_task_tree **out,
			 size_t *count)
{
	git_tree_entry *te = NULL;
	git_tree *tasks = NULL;
	size_t alloc = 0;
	int rc;

	*out = NULL;
	*count = 0;
	if (!root || (rc = lookup(root, "tasks", &te)) == GIT_ENOTFOUND)
		return 0;
	/* tasks/<year>/ then at most <A>/<B>/ */
	rc = rc < 0 || amp_git_tree_lookup(&tasks, repo, git_tree_entry_id(te)) < 0 ? -1 :
	     tasks_below(repo, tasks, 3, out, count, &alloc);
	git_tree_free(tasks);
	git_tree_entry_free(te);
	if (rc < 0) {
		free(*out);
		*out = NULL;
		*count = 0;
		return -1;
	}
	if (*count)
		qsort(*out, *count, sizeof(**out), cmp_task_tree);
	return 0;
}
