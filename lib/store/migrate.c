/*
 * migrate.c - layout 1 to layout 2 (store.h "Layout"): the tree `amp
 * migrate` commits, which the hook also makes to check a migration pushed
 * to it.  Every record keeps its blob and its name; only directories
 * change, so the records (and their ids, which the record caches and the
 * arrival times are keyed by) are the same.  Anything that is not a task
 * in its place stays at its path.
 */
#include "store_int.h"
#include "base/gitobj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"

/* An entry of the new tree, at its path below the tree being built. */
struct item {
	char *path;
	unsigned mode;
	git_oid id;
};

struct items {
	struct item *v;
	size_t count, alloc;
};

static int items_add(struct items *l, const char *prefix, const char *name, unsigned mode,
		     const git_oid *id)
{
	size_t len = strlen(prefix) + strlen(name) + 2;

	if (l->count == l->alloc) {
		size_t alloc = l->alloc ? l->alloc * 2 : 256;
		struct item *grown = realloc(l->v, alloc * sizeof(*grown));

		if (!grown)
			return -1;
		l->v = grown;
		l->alloc = alloc;
	}
	if (!(l->v[l->count].path = malloc(len)))
		return -1;
	snprintf(l->v[l->count].path, len, "%s%s%s", prefix, *prefix ? "/" : "", name);
	l->v[l->count].mode = mode;
	git_oid_cpy(&l->v[l->count].id, id);
	l->count++;
	return 0;
}

static void items_free(struct items *l)
{
	size_t i;

	for (i = 0; i < l->count; i++)
		free(l->v[i].path);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int cmp_item(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->path, ((const struct item *)b)->path);
}

/* Writes the tree of v[0..n) (sorted, `skip` bytes of each path already
 * placed) into *out.  All paths below one directory are adjacent in
 * sorted order. */
static int build(git_repository *repo, struct item *v, size_t n, size_t skip, git_oid *out)
{
	git_treebuilder *tb = NULL;
	size_t i = 0, j;
	int rc = -1;

	if (git_treebuilder_new(&tb, repo, NULL) < 0)
		return -1;
	while (i < n) {
		const char *rest = v[i].path + skip, *slash = strchr(rest, '/');
		char name[256];
		git_oid sub;
		size_t len;

		if (!slash) {
			if (git_treebuilder_insert(NULL, tb, rest, &v[i].id, v[i].mode) < 0)
				goto cleanup;
			i++;
			continue;
		}
		len = (size_t)(slash - rest);
		if (len >= sizeof(name))
			goto cleanup;
		memcpy(name, rest, len);
		name[len] = '\0';
		for (j = i; j < n && !strncmp(v[j].path + skip, rest, len + 1); j++)
			;
		if (build(repo, v + i, j - i, skip + len + 1, &sub) < 0 ||
		    git_treebuilder_insert(NULL, tb, name, &sub, GIT_FILEMODE_TREE) < 0)
			goto cleanup;
		i = j;
	}
	rc = git_treebuilder_write(out, tb) < 0 ? -1 : 0;
cleanup:
	git_treebuilder_free(tb);
	return rc;
}

static int build_items(git_repository *repo, struct items *l, git_oid *out)
{
	qsort(l->v, l->count, sizeof(*l->v), cmp_item);
	return build(repo, l->v, l->count, 0, out);
}

/* The layout-2 tree of a layout-1 task directory: its records in their
 * fan-out directories, anything else where it was. */
static int migrate_task(git_repository *repo, git_tree *task, git_oid *out)
{
	struct items l = { 0 };
	size_t i, n = git_tree_entrycount(task);
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(task, i);
		const char *name = git_tree_entry_name(e), *id;
		char sub[32] = "", rec[AMP_PATH_MAX];
		amp_entry_kind kind;
		size_t id_len;
		int seq;

		/* a record, or a record's signature (recsig.h): beside it */
		if (amp_store_sig_record_path(name, rec, sizeof(rec)) < 0)
			snprintf(rec, sizeof(rec), "%s", name);
		if (git_tree_entry_type(e) == GIT_OBJECT_BLOB &&
		    amp_store_entry_parse(rec, &seq, &kind, &id, &id_len) == 0 &&
		    amp_store_record_subdir(AMP_LAYOUT_FANNED, seq, sub, sizeof(sub)) < 0)
			sub[0] = '\0';
		rc = items_add(&l, sub, name, (unsigned)git_tree_entry_filemode_raw(e),
			       git_tree_entry_id(e));
	}
	if (rc == 0)
		rc = build_items(repo, &l, out);
	items_free(&l);
	return rc;
}

/* One entry of a shard (tasks/<year>/<shard>/): a task in its place
 * migrated to its new place, anything else kept at its path. */
static int migrate_shard_entry(amp_store *st, const char *shard, const git_tree_entry *e,
			       struct items *l)
{
	const char *name = git_tree_entry_name(e);
	char dir[128];
	git_tree *task = NULL;
	git_oid id;
	int rc;

	if (git_tree_entry_type(e) != GIT_OBJECT_TREE ||
	    amp_store_task_dir(AMP_LAYOUT_FLAT, name, dir, sizeof(dir)) < 0 ||
	    strncmp(dir + 6, shard, strlen(shard)) || dir[6 + strlen(shard)] != '/' ||
	    strcmp(dir + 7 + strlen(shard), name))
		return items_add(l, shard, name, (unsigned)git_tree_entry_filemode_raw(e),
				 git_tree_entry_id(e));
	if (amp_git_tree_lookup(&task, st->repo, git_tree_entry_id(e)) < 0)
		return -1;
	rc = migrate_task(st->repo, task, &id);
	git_tree_free(task);
	if (rc < 0 || amp_store_task_dir(AMP_LAYOUT_FANNED, name, dir, sizeof(dir)) < 0)
		return -1;
	return items_add(l, "", dir + 6, GIT_FILEMODE_TREE, &id);
}

/* The entries of tasks/ (tree `tasks`) into l, migrated. */
static int migrate_tasks(amp_store *st, git_tree *tasks, struct items *l)
{
	size_t y, s, ny = git_tree_entrycount(tasks);
	char shard[512];
	int rc = 0;

	for (y = 0; y < ny && rc == 0; y++) {
		const git_tree_entry *ye = git_tree_entry_byindex(tasks, y);
		git_tree *year = NULL;

		if (git_tree_entry_type(ye) != GIT_OBJECT_TREE) {
			rc = items_add(l, "", git_tree_entry_name(ye),
				       (unsigned)git_tree_entry_filemode_raw(ye), git_tree_entry_id(ye));
			continue;
		}
		if (amp_git_tree_lookup(&year, st->repo, git_tree_entry_id(ye)) < 0)
			return -1;
		for (s = 0; s < git_tree_entrycount(year) && rc == 0; s++) {
			const git_tree_entry *se = git_tree_entry_byindex(year, s);
			git_tree *sh = NULL;
			size_t t;

			snprintf(shard, sizeof(shard), "%s/%s", git_tree_entry_name(ye),
				 git_tree_entry_name(se));
			if (git_tree_entry_type(se) != GIT_OBJECT_TREE) {
				rc = items_add(l, "", shard, (unsigned)git_tree_entry_filemode_raw(se),
					       git_tree_entry_id(se));
				continue;
			}
			if (amp_git_tree_lookup(&sh, st->repo, git_tree_entry_id(se)) < 0) {
				rc = -1;
				break;
			}
			for (t = 0; t < git_tree_entrycount(sh) && rc == 0; t++)
				rc = migrate_shard_entry(st, shard, git_tree_entry_byindex(sh, t), l);
			git_tree_free(sh);
		}
		git_tree_free(year);
	}
	return rc;
}

int amp_store_migrate_tree(amp_store *st, git_tree *root, git_oid *out, amp_error *err)
{
	struct items top = { 0 }, tasks_items = { 0 };
	git_tree *tasks = NULL;
	git_oid id;
	size_t i, n = root ? git_tree_entrycount(root) : 0;
	int status = AMP_OK;

	if (git_blob_create_from_buffer(&id, st->repo, "2\n", 2) < 0 ||
	    items_add(&top, "", AMP_LAYOUT_FILE, GIT_FILEMODE_BLOB, &id) < 0)
		goto failed;
	for (i = 0; i < n; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(root, i);

		if (!strcmp(git_tree_entry_name(e), AMP_LAYOUT_FILE))
			continue;
		if (strcmp(git_tree_entry_name(e), "tasks") ||
		    git_tree_entry_type(e) != GIT_OBJECT_TREE) {
			if (items_add(&top, "", git_tree_entry_name(e),
				      (unsigned)git_tree_entry_filemode_raw(e), git_tree_entry_id(e)) < 0)
				goto failed;
			continue;
		}
		if (amp_git_tree_lookup(&tasks, st->repo, git_tree_entry_id(e)) < 0 ||
		    migrate_tasks(st, tasks, &tasks_items) < 0 ||
		    build_items(st->repo, &tasks_items, &id) < 0 ||
		    items_add(&top, "", "tasks", GIT_FILEMODE_TREE, &id) < 0)
			goto failed;
	}
	if (build_items(st->repo, &top, out) < 0)
		goto failed;
	goto cleanup;
failed:
	status = amp_error_git(err, AMP_EIO, "cannot build the layout-2 tree");
cleanup:
	git_tree_free(tasks);
	items_free(&top);
	items_free(&tasks_items);
	return status;
}

/* amp_store_update's step of amp_store_migrate: the tip's tree moved to
 * layout 2, or nothing when it is there already. */
static int build_migration(amp_store *st, git_tree *tip, void *ctx, amp_store_write *w,
			   amp_error *err)
{
	int layout = amp_store_layout(st, tip, err), status;

	(void)ctx;
	if (layout < 0)
		return layout;
	if (layout == AMP_LAYOUT_FANNED)
		return AMP_NOOP;
	if ((status = amp_store_migrate_tree(st, tip, &w->tree, err)) < 0)
		return status;
	w->replace = 1;
	snprintf(w->author, sizeof(w->author), "system");
	snprintf(w->subject, sizeof(w->subject),
		 "amp: SSOT moved to layout 2, every record in its fan-out directory (amp gc --migrate)");
	return AMP_OK;
}

int amp_store_migrate(amp_store *st, git_oid *out, amp_error *err)
{
	return amp_store_update(st, st->ref, build_migration, NULL, out, err);
}
