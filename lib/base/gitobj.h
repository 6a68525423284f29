/*
 * gitobj.h - looking up trees and commits through libgit2, with a check
 * that what comes back is the parsed object asked for.
 *
 * libgit2 keeps the raw bytes it read (a git_odb_object) and the parsed
 * object (a git_tree, a git_commit) for one id in the same cache slot.
 * A lookup that misses reads the raw object (cached), parses it, and
 * replaces the raw entry with the parsed one (cache.c cache_store).  When
 * that replacement cannot allocate (the cache's hash map grows before it
 * looks for the key), libgit2 1.5 hands back the raw entry, a
 * git_odb_object, as the git_tree or git_commit: its first use reads
 * garbage.  Seen as `amp status` dying in git_tree_entry_type under
 * `ulimit -v` (test/39-oom.bats).  A parsed object's owner is its
 * repository; the raw object holds its data pointer in that place, so the
 * owner tells them apart.  Each function here is the libgit2 call of the
 * same name, except that such a raw entry is released and the call fails
 * as out of memory (-1, git_error_last() says so); *out is then NULL.
 * The caller owns *out on success and frees it as libgit2 says.
 */
#ifndef AMP_GITOBJ_H
#define AMP_GITOBJ_H

#include <git2.h>

int amp_git_tree_lookup(git_tree **out, git_repository *repo, const git_oid *id);
int amp_git_commit_lookup(git_commit **out, git_repository *repo, const git_oid *id);
int amp_git_commit_tree(git_tree **out, const git_commit *commit);
int amp_git_commit_parent(git_commit **out, const git_commit *commit, unsigned int n);

#endif
