/*
 * treecache.h - the trees of a long task's directory in layout 2, kept
 * between processes (issue 35: a write into a task of 10,000 records read
 * and inflated the task's 103 trees, a quarter of a send, to list records
 * of which it adds one).
 *
 * A task's directory in layout 2 (layout.c) is a tree of fan-out trees of
 * at most 100 records each, and a write rewrites three of them.  The
 * reader (records.c read_task) lists the records of such a task through
 * amp_task_files_list, which takes each tree it walks by its id from
 * <state dir>/trees/<task id> when the file has it, else from git; the
 * file is written again (temporary name, then rename) with every tree of
 * the listing once AMP_TREECACHE_SLACK trees came from git, so that no
 * listing reads more than that many.
 *
 * The file holds each tree as git stores it (the object's content), and a
 * tree is used only when its content hashes to the id the parent tree
 * names (git_odb_hash): a file that is stale, cut short, damaged or forged
 * cannot change what a listing says, its trees are read from git instead
 * (and the file written again).  A tree that does not parse as git's tree
 * format makes the listing fail, and the caller lists from git
 * (amp_store_task_files) as it would without the file.
 */
#ifndef AMP_TREECACHE_H
#define AMP_TREECACHE_H

#include <git2.h>
#include <stddef.h>

#include "store.h"

/* Shorter tasks are listed from git only (their three trees). */
#define AMP_TREECACHE_MIN_FILES 64
/* Trees read from git before the file is written again. */
#define AMP_TREECACHE_SLACK 8
/* The file's size bound: past it, trees come from git (a task of about
 * 300,000 records), and the process keeps none between listings. */
#define AMP_TREECACHE_MAX ((size_t)32 << 20)

/* One entry of a task's directory, through its fan-out trees. */
typedef struct amp_task_file {
	const char *name; /* borrowed from the listing */
	git_oid id;
} amp_task_file;

typedef struct amp_task_files {
	amp_task_file *v; /* in name order, which is sequence order */
	size_t count, alloc;
	struct amp_tc_tree *trees; /* the trees walked, for the file */
	size_t ntrees, talloc;
	size_t from_git;           /* trees read from git */
	size_t from_file;          /* trees taken from the file */
} amp_task_files;

/*
 * Lists the record files of the task directory tree `task_tree` of
 * task_id (the same entries as amp_store_task_files, in the same order)
 * with the task's file in st's state directory, and writes the file again
 * when due (a task of AMP_TREECACHE_MIN_FILES files or more).  A tree is
 * checked once per process: the process keeps the last task's trees.  0,
 * or -1 when a tree cannot be read or does not parse (then *out is
 * empty).  Free with amp_task_files_free.
 */
int amp_task_files_list(amp_store *st, const char *task_id, const git_oid *task_tree,
			amp_task_files *out);
void amp_task_files_free(amp_task_files *f);

#endif
