/*
 * sync_index.c - the records of a tree by identity (sync_index.h): a
 * record's seq is per clone, so a join knows a record by its task, kind
 * and id; and the paths a replayed commit adds.
 */
#include <stdio.h>
#include "base/gitobj.h"
#include <stdlib.h>
#include <string.h>

#include "record/record.h"
#include "store/store.h"
#include "sync_index.h"

/* The identity of a record file name: its kind and id, since the seq is
 * per clone; a name that is not a record's is its own identity. */
void amp_sync_record_key(const char *name, char *buf, size_t bufsz, int *seq,
			 amp_entry_kind *kind, const char **id, size_t *id_len)
{
	if (amp_store_entry_parse(name, seq, kind, id, id_len) == 0) {
		snprintf(buf, bufsz, "%c:%.*s", (char)*kind, (int)*id_len, *id);
	} else {
		*id = NULL;
		snprintf(buf, bufsz, "?:%s", name);
	}
}

int amp_sync_is_marker(const char *name)
{
	amp_entry_kind kind;
	const char *id;
	size_t id_len;

	return amp_store_entry_parse(name, NULL, &kind, &id, &id_len) == 0 &&
	       kind == AMP_ENTRY_CTL && id_len > strlen(MARKER_PREFIX) &&
	       !strncmp(id, MARKER_PREFIX, strlen(MARKER_PREFIX));
}

/* The identity of the record a marker sets aside: "s:<blob>". */
void amp_sync_set_aside_key(const char *marker, char *buf, size_t bufsz)
{
	amp_entry_kind kind;
	const char *id;
	size_t id_len;

	amp_store_entry_parse(marker, NULL, &kind, &id, &id_len);
	snprintf(buf, bufsz, "s:%.*s", (int)(id_len - strlen(MARKER_PREFIX)),
		 id + strlen(MARKER_PREFIX));
}

/* Indexes the directory of task `task` in `root` (either may be missing:
 * empty), in either layout. */
int amp_sync_index_dir(git_repository *repo, git_tree *root, const char *task,
		       struct dir_index *ix, amp_error *err)
{
	git_tree_entry *e = NULL;
	git_tree *t = NULL;
	amp_flat f = { 0 };
	char key[AMP_PATH_MAX], hex[GIT_OID_HEXSZ + 1], dir[128];
	size_t i, n;
	int status = AMP_OK;

	ix->next_seq = 1;
	if (!(ix->ids = json_object()))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (!root || amp_store_task_lookup(root, task, &e, dir, sizeof(dir)) < 0) {
		git_error_clear();
		return AMP_OK;
	}
	if (git_tree_entry_type(e) != GIT_OBJECT_TREE ||
	    amp_git_tree_lookup(&t, repo, git_tree_entry_id(e)) < 0 ||
	    amp_store_task_files(repo, t, &f) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read %s", dir);
		goto cleanup;
	}
	n = f.count;
	for (i = 0; i < n; i++) {
		const git_tree_entry *r = f.v[i].e;
		const char *before = i > 0 ? git_tree_entry_name(f.v[i - 1].e) : "";
		amp_entry_kind kind;
		const char *id;
		size_t id_len;
		int seq = 0;

		amp_sync_record_key(git_tree_entry_name(r), key, sizeof(key), &seq, &kind, &id,
				    &id_len);
		/* The record after a marker is set aside: its identity is the
		 * marker's, never its kind and id (the record in force has
		 * those). */
		if (amp_sync_is_marker(before))
			amp_sync_set_aside_key(before, key, sizeof(key));
		git_oid_tostr(hex, sizeof(hex), git_tree_entry_id(r));
		json_object_set_new(ix->ids, key, json_string(hex));
		if (id && seq >= ix->next_seq)
			ix->next_seq = seq + 1;
	}
cleanup:
	amp_flat_free(&f);
	git_tree_free(t);
	git_tree_entry_free(e);
	return status;
}

void amp_sync_updates_clear(struct updates *u)
{
	size_t i;

	for (i = 0; i < u->count; i++)
		free((char *)u->items[i].path);
	u->count = 0;
}

int amp_sync_updates_add(struct updates *u, const char *path, const git_oid *blob)
{
	git_tree_update *item;

	if (u->count == u->alloc) {
		size_t alloc = u->alloc ? u->alloc * 2 : 8;
		git_tree_update *more = realloc(u->items, alloc * sizeof(*more));

		if (!more)
			return -1;
		u->items = more;
		u->alloc = alloc;
	}
	item = &u->items[u->count];
	memset(item, 0, sizeof(*item));
	if (!(item->path = strdup(path)))
		return -1;
	item->action = GIT_TREE_UPDATE_UPSERT;
	item->filemode = GIT_FILEMODE_BLOB;
	git_oid_cpy(&item->id, blob);
	u->count++;
	return 0;
}

/* Reads blob `id` as a JSON object into *doc (NULL when it is not one). */
int amp_sync_read_doc(git_repository *repo, const git_oid *id, json_t **doc, amp_error *err)
{
	git_blob *b = NULL;
	amp_error perr;

	*doc = NULL;
	if (git_blob_lookup(&b, repo, id) < 0)
		return amp_error_git(err, AMP_EIO, "cannot read blob %s", git_oid_tostr_s(id));
	if (amp_bounds_parse_record(git_blob_rawcontent(b), (size_t)git_blob_rawsize(b), doc,
				    &perr) < 0 || !json_is_object(*doc)) {
		json_decref(*doc);
		*doc = NULL;
	}
	git_blob_free(b);
	return AMP_OK;
}
