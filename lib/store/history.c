/*
 * history.c - the walk of a history down its first parents (store.h).
 */
#include <stdlib.h>
#include "base/gitobj.h"

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
	if ((rc = amp_git_commit_lookup(out, w->repo, &w->next)) < 0) {
		w->done = 1;
		return rc;
	}
	if (git_commit_parentcount(*out))
		git_oid_cpy(&w->next, git_commit_parent_id(*out, 0));
	else
		w->done = 1;
	return 0;
}

int amp_first_parents_ids(git_repository *repo, const git_oid *tip, git_oid **ids, size_t *n,
			  amp_error *err)
{
	amp_first_parents chain;
	git_commit *c = NULL;
	git_oid *grown;
	size_t alloc = 0;
	int rc;

	*ids = NULL;
	*n = 0;
	amp_first_parents_start(&chain, repo, tip);
	while ((rc = amp_first_parents_next(&chain, &c)) == 0) {
		if (*n == alloc) {
			alloc = alloc ? alloc * 2 : 1024;
			if (!(grown = realloc(*ids, alloc * sizeof(**ids)))) {
				git_commit_free(c);
				free(*ids);
				*ids = NULL;
				return amp_error_set(err, AMP_EIO, "", "out of memory");
			}
			*ids = grown;
		}
		git_oid_cpy(&(*ids)[(*n)++], git_commit_id(c));
		git_commit_free(c);
		c = NULL;
	}
	if (rc != GIT_ITEROVER) {
		free(*ids);
		*ids = NULL;
		return amp_error_git(err, AMP_EIO, "cannot walk the history below %s",
				     git_oid_tostr_s(tip));
	}
	return AMP_OK;
}
