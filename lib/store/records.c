/*
 * records.c - reading the SSOT (store.h): the tip of a ref, a task's
 * records into its log, and the listing of the tasks.
 */
#include "store_int.h"
#include "base/gitobj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"
#include "treecache.h"

/* ---- reading ------------------------------------------------------------ */

int amp_store_tip(amp_store *st, const char *ref, git_commit **commit,
		  git_tree **tree, amp_error *err)
{
	git_oid oid;
	git_commit *c = NULL;
	int rc;

	rc = git_reference_name_to_id(&oid, st->repo, ref);
	if (rc == GIT_ENOTFOUND)
		return amp_error_set(err, AMP_EIO, "",
				     "no AMP store in this repository (%s is missing): run 'amp init'",
				     ref);
	if (rc < 0)
		return amp_error_git(err, AMP_EIO, "cannot read %s", ref);
	if (amp_git_commit_lookup(&c, st->repo, &oid) < 0)
		return amp_error_git(err, AMP_EIO, "cannot read the commit at %s", ref);
	if (tree && amp_git_commit_tree(tree, c) < 0) {
		git_commit_free(c);
		return amp_error_git(err, AMP_EIO, "cannot read the tree at %s", ref);
	}
	if (commit)
		*commit = c;
	else
		git_commit_free(c);
	return AMP_OK;
}

/* amp_store_entry_parse, the id copied into *id (owned); 0 on success. */
static int parse_entry_name(const char *name, int *seq, amp_entry_kind *kind,
			    char **id)
{
	const char *at;
	size_t n;

	if (amp_store_entry_parse(name, seq, kind, &at, &n) < 0)
		return -1;
	*id = strndup(at, n);
	return *id ? 0 : -1;
}

/* The record files of task directory `dir_id` (a tree) into *files: in
 * layout 2 through the task's tree cache (treecache.h); else, or when that
 * listing fails, as amp_store_task_files lists them, into *flat and *tree
 * (files borrows from both; the caller frees them).  0 or -1. */
static int list_files(amp_store *st, const char *task_id, int layout, const git_oid *dir_id,
		      amp_task_files *files, amp_flat *flat, git_tree **tree)
{
	size_t i;

	if (layout == AMP_LAYOUT_FANNED && !st->batch &&
	    amp_task_files_list(st, task_id, dir_id, files) == 0) {
		st->trees_read += files->from_git;
		st->trees_cached += files->from_file;
		return 0;
	}
	if (amp_git_tree_lookup(tree, st->repo, dir_id) < 0 ||
	    amp_store_task_files(st->repo, *tree, flat) < 0)
		return -1;
	st->trees_read += 1 + flat->ntrees;
	if (flat->count && !(files->v = malloc(flat->count * sizeof(*files->v)))) {
		git_error_set_oom(); /* the caller reports libgit2's error */
		return -1;
	}
	for (i = 0; i < flat->count; i++) {
		files->v[i].name = git_tree_entry_name(flat->v[i].e);
		git_oid_cpy(&files->v[i].id, git_tree_entry_id(flat->v[i].e));
	}
	files->count = flat->count;
	return 0;
}

/* Reads and parses the record in blob id: AMP_OK with *doc (a JSON
 * object; the caller owns it), 1 with *why saying why the record is
 * unreadable (past the size bound, read only far enough to know, in one
 * search of the pack indexes (process.h); a blob missing or damaged; not
 * JSON; not an object): such a record spoils itself only, the task's
 * other records stay usable (issue 7, defect 4).  AMP_EIO in err when
 * memory ran out, which says nothing of the record: the read fails,
 * rather than go on without it (a rule would decide on a task that
 * lacks it). */
static int parse_blob(amp_store *st, const git_oid *id, json_t **doc, amp_error *why,
		      amp_error *err)
{
	git_blob *blob = NULL;
	size_t size;
	int rc, status = 1;

	*doc = NULL;
	if ((rc = amp_store_blob_bounded(st->repo, id, AMP_LIMIT_MESSAGE_BYTES, &blob, &size)) > 0) {
		amp_error_set(why, AMP_ESCHEMA, "", "%zu bytes, more than the %d-byte message size limit",
			      size, AMP_LIMIT_MESSAGE_BYTES);
	} else if (rc < 0) {
		if (amp_error_git_out_of_memory())
			status = amp_error_set(err, AMP_EIO, "", "cannot read blob %s: out of memory",
					       git_oid_tostr_s(id));
		else
			amp_error_git(why, AMP_EIO, "cannot read blob %s", git_oid_tostr_s(id));
		git_error_clear();
	} else if (amp_bounds_parse_record(git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob),
					   doc, why) < 0) {
		if (why->status == AMP_EIO) /* amp_json_parse ran out of memory */
			status = amp_error_set(err, AMP_EIO, "", "%s", why->message);
	} else if (!json_is_object(*doc)) {
		amp_error_set(why, AMP_ESCHEMA, "", "not a JSON object");
		json_decref(*doc);
		*doc = NULL;
	} else {
		status = AMP_OK;
	}
	git_blob_free(blob);
	return status;
}

/* amp_store_read_task, or only the control records when `controls_only`
 * (the others are skipped by their names, never read). */
static int read_task(amp_store *st, git_tree *root, const char *task_id, int controls_only,
		     amp_task_log *log, amp_error *err)
{
	char dir[128];
	git_tree_entry *dir_entry = NULL;
	git_tree *tree = NULL;
	amp_task_files files = { 0 };
	amp_flat flat = { 0 };
	amp_reccache *cache = NULL;
	git_oid *cache_ids = NULL; /* the blob of each entry, for the cache */
	size_t i, n, parsed = 0;
	int rc, status = AMP_OK;

	memset(log, 0, sizeof(*log));
	amp_store_walk_step();
	log->next_seq = 1;
	if (amp_store_task_dir(AMP_LAYOUT_FLAT, task_id, dir, sizeof(dir)) < 0)
		return amp_error_set(err, AMP_EUSAGE, "",
				     "not a task id (T-YYYY-NNN): %s", task_id);
	snprintf(log->task_id, sizeof(log->task_id), "%s", task_id);
	log->policy = &st->policy;
	log->layout = amp_store_tree_layout(st->repo, root);
	if (!root)
		return AMP_OK;
	rc = amp_store_task_lookup(root, task_id, &dir_entry, dir, sizeof(dir));
	if (rc == GIT_ENOTFOUND)
		return AMP_OK;
	if (rc < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read the task directory %s", dir);
		goto cleanup;
	}
	if (list_files(st, task_id, log->layout, git_tree_entry_id(dir_entry), &files,
		       &flat, &tree) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read the task directory %s, tree %s",
				       dir, git_oid_tostr_s(git_tree_entry_id(dir_entry)));
		goto cleanup;
	}
	n = files.count;
	if (n && !(log->entries = calloc(n, sizeof(*log->entries)))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	/* A long task's records come from its record cache (reccache.h),
	 * and are shared with the next read when reads share records
	 * (amp_store_share_records); a batch shares its own (doccache.c),
	 * and a read of the controls skips the rest. */
	if (!controls_only && !st->batch && n >= AMP_RECCACHE_MIN_RECORDS) {
		cache = amp_reccache_load(st->state_dir, task_id);
		/* without it the cache is not written, nothing else */
		cache_ids = malloc(n * sizeof(*cache_ids));
	}
	/* Tree entries are sorted by name, and names start with the sequence
	 * number, so this is commit order (amp_store_task_files). */
	for (i = 0; i < n; i++) {
		const amp_task_file *e = &files.v[i];
		amp_entry *rec = &log->entries[log->count];
		amp_error perr;

		if (parse_entry_name(e->name, &rec->seq,
				     &rec->kind, &rec->id) < 0)
			continue; /* not ours: ignore rather than fail */
		if (rec->seq >= log->next_seq)
			log->next_seq = rec->seq + 1;
		if (controls_only && rec->kind != AMP_ENTRY_CTL) {
			free(rec->id);
			memset(rec, 0, sizeof(*rec));
			continue;
		}
		if (!(rec->doc = amp_store_docs_get(st, &e->id)) &&
		    (rec->doc = amp_reccache_get(cache, &e->id))) {
			st->records_cached++;
			amp_store_docs_put(st, &e->id, rec->doc);
		}
		if (rec->doc)
			goto have_doc;
		if ((rc = parse_blob(st, &e->id, &rec->doc, &perr, err)) < 0) {
			status = rc;
			free(rec->id);
			memset(rec, 0, sizeof(*rec));
			goto cleanup;
		}
		if (rc > 0) {
			if (amp_task_log_add_bad(log, rec->seq, rec->kind, rec->id, e->name,
				    perr.message) < 0) {
				free(rec->id);
				status = amp_error_set(err, AMP_EIO, "", "out of memory");
			}
			memset(rec, 0, sizeof(*rec));
			if (status < 0)
				goto cleanup;
			continue;
		}
		amp_store_docs_put(st, &e->id, rec->doc);
		st->records_parsed++;
		parsed++;
have_doc:
		if (cache_ids)
			git_oid_cpy(&cache_ids[log->count], &e->id);
		log->count++;
	}
	/* Written again once AMP_RECCACHE_SLACK records came from git: a
	 * read parses at most that many.  Before the set-aside, which moves
	 * entries away from cache_ids. */
	if (status == AMP_OK && cache_ids && parsed >= (cache ? AMP_RECCACHE_SLACK : 1))
		amp_reccache_save(st->state_dir, task_id, cache, cache_ids, log->entries,
				  log->count);
	if (status == AMP_OK && amp_task_log_settle(log) < 0)
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
cleanup:
	amp_reccache_free(cache);
	amp_task_files_free(&files);
	amp_flat_free(&flat);
	git_tree_free(tree);
	free(cache_ids);
	git_tree_entry_free(dir_entry);
	if (status < 0)
		amp_task_log_free(log);
	return status;
}

int amp_store_read_task(amp_store *st, git_tree *root, const char *task_id,
			amp_task_log *log, amp_error *err)
{
	return read_task(st, root, task_id, 0, log, err);
}

int amp_store_read_task_controls(amp_store *st, git_tree *root, const char *task_id,
				 amp_task_log *log, amp_error *err)
{
	return read_task(st, root, task_id, 1, log, err);
}

void amp_strv_free(char **v, size_t count)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < count; i++)
		free(v[i]);
	free(v);
}

/* A task directory found by the listing: its name and its tree. */
struct listed {
	char *id;
	git_oid tree;
};

static int cmp_listed_ref(const void *a, const void *b)
{
	return strcmp((*(const struct listed *const *)a)->id,
		      (*(const struct listed *const *)b)->id);
}

/* The layout of the tree a shard path is found in: <YYYY>/<S> in layout 1,
 * <YYYY>/<A>/<B> in layout 2 (layout.c); a task out of its place is told
 * its place in that layout. */
static int shard_layout(const char *shard)
{
	const char *slash = strchr(shard, '/');

	return slash && strchr(slash + 1, '/') ? AMP_LAYOUT_FANNED : AMP_LAYOUT_FLAT;
}

int amp_store_task_in_place(amp_store *st, const char *shard, const git_tree_entry *e)
{
	const char *name = git_tree_entry_name(e);
	char dir[128], path[AMP_PATH_MAX], why[256];

	int layout;

	/* Either layout's place (layout.c): readers look in both. */
	for (layout = AMP_LAYOUT_FLAT; layout <= AMP_LAYOUT_FANNED; layout++)
		if (git_tree_entry_type(e) == GIT_OBJECT_TREE &&
		    amp_store_task_dir(layout, name, dir, sizeof(dir)) == 0 &&
		    !strncmp(dir, "tasks/", 6) && !strncmp(dir + 6, shard, strlen(shard)) &&
		    dir[6 + strlen(shard)] == '/' && !strcmp(dir + 7 + strlen(shard), name))
			return 1;
	snprintf(path, sizeof(path), "tasks/%s/%s", shard, name);
	if (git_tree_entry_type(e) != GIT_OBJECT_TREE)
		amp_store_note_skipped(st, path, "not a task's directory but a file: skipped");
	else if (!amp_task_id_valid(name, strlen(name)))
		amp_store_note_skipped(st, path, "not a task's directory (tasks/<YYYY>/<S>/<task_id>): skipped");
	else if (amp_store_task_dir(shard_layout(shard), name, dir, sizeof(dir)) == 0 &&
		 snprintf(why, sizeof(why), "task %s out of its place (%s): skipped", name, dir) > 0)
		amp_store_note_skipped(st, path, why);
	return 0;
}

void amp_store_note_skipped(amp_store *st, const char *path, const char *why)
{
	size_t i;

	for (i = 0; i < st->skipped.count; i++)
		if (!strcmp(st->skipped.items[i].path, path))
			return;
	amp_errlist_add(&st->skipped, AMP_EIO, path, "%s", why);
}

void amp_store_skipped_clear(amp_store *st)
{
	amp_errlist_free(&st->skipped);
	memset(&st->skipped, 0, sizeof(st->skipped));
}

const amp_errlist *amp_store_skipped(const amp_store *st)
{
	return &st->skipped;
}

/* Walks `depth` levels of subtrees below `tree` (at tasks/`prefix`),
 * collecting the tasks found at the last level. */
static int collect_level(amp_store *st, git_tree *tree, const char *prefix, int depth,
			 struct listed **v, size_t *count, size_t *alloc)
{
	size_t i, n = git_tree_entrycount(tree);
	char path[AMP_PATH_MAX];
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		git_tree *sub = NULL;

		/* A fan-out directory where tasks are (layout 2's <B>) is
		 * walked through. */
		int through = depth == 0 && git_tree_entry_type(e) == GIT_OBJECT_TREE &&
			      amp_store_is_fanout(git_tree_entry_name(e));

		if (depth == 0 && !through && !amp_store_task_in_place(st, prefix, e))
			continue;
		if (git_tree_entry_type(e) != GIT_OBJECT_TREE)
			continue;
		if (depth == 0 && !through) {
			if (*count == *alloc) {
				struct listed *bigger;

				/* the caller reports libgit2's error: this one */
				if (!(bigger = realloc(*v, (*alloc ? *alloc * 2 : 64) * sizeof(**v)))) {
					git_error_set_oom();
					return -1;
				}
				*alloc = *alloc ? *alloc * 2 : 64;
				*v = bigger;
			}
			if (!((*v)[*count].id = strdup(git_tree_entry_name(e)))) {
				git_error_set_oom();
				return -1;
			}
			git_oid_cpy(&(*v)[(*count)++].tree, git_tree_entry_id(e));
			continue;
		}
		if (amp_git_tree_lookup(&sub, st->repo, git_tree_entry_id(e)) < 0)
			return -1;
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "/" : "", git_tree_entry_name(e));
		rc = collect_level(st, sub, path, through ? 0 : depth - 1, v, count, alloc);
		git_tree_free(sub);
	}
	return rc;
}

int amp_store_list_task_trees(amp_store *st, git_tree *root, char ***ids,
			      git_oid **trees, size_t *count, amp_error *err)
{
	git_tree_entry *tasks = NULL;
	git_tree *tree = NULL;
	struct listed *v = NULL, **order = NULL;
	size_t n = 0, alloc = 0, i;
	int rc, status = AMP_OK;

	*ids = NULL;
	if (trees)
		*trees = NULL;
	*count = 0;
	rc = git_tree_entry_bypath(&tasks, root, "tasks");
	if (rc == GIT_ENOTFOUND) {
		git_error_clear();
		return AMP_OK;
	}
	if (rc < 0 || amp_git_tree_lookup(&tree, st->repo, git_tree_entry_id(tasks)) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read tasks/");
		goto cleanup;
	}
	/* tasks/<year>/<shard>/<task_id> */
	if (collect_level(st, tree, "", 2, &v, &n, &alloc) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot list tasks");
		goto cleanup;
	}
	/* Sorted by reference: qsort moves pointers, not 28-byte entries. */
	if (!(order = malloc((n ? n : 1) * sizeof(*order))) ||
	    !(*ids = malloc((n ? n : 1) * sizeof(**ids))) ||
	    (trees && !(*trees = malloc((n ? n : 1) * sizeof(**trees))))) {
		free(*ids);
		*ids = NULL;
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	for (i = 0; i < n; i++)
		order[i] = &v[i];
	qsort(order, n, sizeof(*order), cmp_listed_ref);
	for (i = 0; i < n; i++) {
		(*ids)[i] = order[i]->id;
		if (trees)
			git_oid_cpy(&(*trees)[i], &order[i]->tree);
	}
	*count = n;
	n = 0; /* the names are the caller's now */
cleanup:
	for (i = 0; i < n; i++)
		free(v[i].id);
	free(v);
	free(order);
	git_tree_free(tree);
	git_tree_entry_free(tasks);
	return status;
}

int amp_store_list_tasks(amp_store *st, git_tree *root, char ***ids,
			 size_t *count, amp_error *err)
{
	return amp_store_list_task_trees(st, root, ids, NULL, count, err);
}
