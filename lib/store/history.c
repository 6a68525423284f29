/*
 * history.c - the walk of a history down its first parents (store.h).
 */
#include "store.h"

void amp_first_parents_start(amp_first_parents *w, git_repository *repo, const git_oid *tip)
{
	w->repo = repo;
	git_oid_cpy(&w->next, tip);
	w->done = 0;
}

int amp_first_parents_next(amp_first_parents *w, git_commit **out)
{
	int rc;

	*out = NULL;
	if (w->done)
		return GIT_ITEROVER;
	amp_store_walk_step();
	if ((rc = git_commit_lookup(out, w->repo, &w->next)) < 0) {
		w->done = 1;
		return rc;
	}
	if (git_commit_parentcount(*out))
		git_oid_cpy(&w->next, git_commit_parent_id(*out, 0));
	else
		w->done = 1;
	return 0;
}
