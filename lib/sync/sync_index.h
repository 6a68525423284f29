/*
 * sync_index.h - the records of a tree by identity, and the paths of a
 * replayed commit (sync_index.c).  Private to lib/sync/.
 */
#ifndef AMP_SYNC_INDEX_H
#define AMP_SYNC_INDEX_H

#include "base/error.h"
#include "record/record.h"
#include "store/store.h"

/* The records of one task directory of a tree, by identity. */
struct dir_index {
	json_t *ids;  /* "<kind>:<id>" (or "?:<name>") -> blob id, hex */
	int next_seq; /* what the next record appended there gets */
};

/* Markers are named "<seq>.ctl.superseded-<blob>.json", <blob> being the
 * set-aside record's blob id: one name per record content. */
#define MARKER_PREFIX "superseded-"

/* A record the two sides hold with different content. */
struct conflict {
	char local[AMP_PATH_MAX * 2];  /* its path in the local commit */
	char remote[AMP_PATH_MAX * 2]; /* the remote's record of that id */
	git_oid blob;                  /* the local content */
	git_oid commit;                /* the local commit that added it */
	char id[AMP_PATH_MAX];         /* its msg_id, for a message */
};

/* The new paths of one replayed commit. */
struct updates {
	git_tree_update *items;
	size_t count, alloc;
};

/* The identity of a record file name into buf: "<kind>:<id>", since the
 * seq is per clone; a name that is not a record's is its own identity
 * ("?:<name>", *id NULL).  seq may be NULL. */
void amp_sync_record_key(const char *name, char *buf, size_t bufsz, int *seq,
			 amp_entry_kind *kind, const char **id, size_t *id_len);

/* 1 when `name` is a superseded marker's (MARKER_PREFIX). */
int amp_sync_is_marker(const char *name);

/* The identity of the record marker `marker` sets aside: "s:<blob>". */
void amp_sync_set_aside_key(const char *marker, char *buf, size_t bufsz);

/* Indexes directory `dir` of `root` into *ix (either may be missing:
 * empty); the caller frees ix->ids (json_decref), also on failure. */
int amp_sync_index_dir(git_repository *repo, git_tree *root, const char *dir,
		       struct dir_index *ix, amp_error *err);

/* Empties u (its array stays, for the next commit; free(u->items) at the
 * end). */
void amp_sync_updates_clear(struct updates *u);

/* Adds an upsert of blob at path to u: 0, or -1 out of memory. */
int amp_sync_updates_add(struct updates *u, const char *path, const git_oid *blob);

/* Reads blob `id` as a JSON object into *doc (NULL when it is not one;
 * the caller's reference otherwise). */
int amp_sync_read_doc(git_repository *repo, const git_oid *id, json_t **doc, amp_error *err);

#endif
