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
 * "remotes/<remote>/"; 0 otherwise.  A full ref names one branch:
 * refs/heads/origin/main is not main.
 */
int amp_refname_is_protected(const char *name, const char *list);

/*
 * 1 when a branch name handed to someone else's git (a dispatch's branch,
 * which the executor checks out by name) may resolve to a protected branch
 * of `list`: amp_refname_is_protected, or its last '/'-separated component
 * is one of them ("origin/main" is refs/remotes/origin/main in a
 * repository with a remote "origin" and no branch of that name, and a
 * remote's name may hold '/'), or is "HEAD" after a '/' ("origin/HEAD", the
 * remote's default branch).  amp cannot know the remotes of the executor's
 * repository, so every such name is refused; the work hooks, which see the
 * exact ref, use amp_refname_is_protected.
 */
int amp_refname_may_be_protected(const char *name, const char *list);

#endif
