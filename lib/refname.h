/*
 * refname.h - git branch names: whether a string is one, and whether it
 * names a protected branch.  No repository and no libgit2 here, so that
 * `amp validate` (which loads neither) applies the same rule as `amp send`.
 */
#ifndef AMP_REFNAME_H
#define AMP_REFNAME_H

/* AMP/1.0 §01 Branch Validation: the branches always protected. */
#define AMP_PROTECTED_BRANCHES "main master"

/*
 * NULL when `name` is a valid git branch name, as `git check-ref-format
 * --branch` decides (refs/heads/<name> is a valid ref, no leading '-', not
 * "HEAD"), and also not "@", git's shorthand for HEAD.  Otherwise the rule
 * it breaks, a static string such as "contains \"..\"".
 */
const char *amp_refname_branch_problem(const char *name);

/*
 * 1 when `name` spells one of the branches of `list` (space- or
 * comma-separated names), compared case-insensitively after removing a
 * leading "refs/heads/", "heads/", "refs/remotes/<remote>/" or
 * "remotes/<remote>/"; 0 otherwise.  "origin/main" is not such a spelling:
 * as a branch it is refs/heads/origin/main, another branch.
 */
int amp_refname_is_protected(const char *name, const char *list);

#endif
