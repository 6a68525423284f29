/* gitobj.c - tree and commit lookups that refuse libgit2's raw cache
 * entry in place of the parsed object (gitobj.h says why). */
#include "gitobj.h"

static int checked(git_object **obj, git_repository *repo, int rc)
{
	if (rc < 0)
		return rc;
	if (git_object_owner(*obj) == repo)
		return rc;
	/* git_object_free drops the reference by the entry's own kind, so
	 * the raw object is released as a raw object. */
	git_object_free(*obj);
	*obj = NULL;
	git_error_set_oom();
	return -1;
}

int amp_git_tree_lookup(git_tree **out, git_repository *repo, const git_oid *id)
{
	return checked((git_object **)out, repo, git_tree_lookup(out, repo, id));
}

int amp_git_commit_lookup(git_commit **out, git_repository *repo, const git_oid *id)
{
	return checked((git_object **)out, repo, git_commit_lookup(out, repo, id));
}

int amp_git_commit_tree(git_tree **out, const git_commit *commit)
{
	return checked((git_object **)out, git_commit_owner(commit), git_commit_tree(out, commit));
}

int amp_git_commit_parent(git_commit **out, const git_commit *commit, unsigned int n)
{
	return checked((git_object **)out, git_commit_owner(commit),
		       git_commit_parent(out, commit, n));
}
