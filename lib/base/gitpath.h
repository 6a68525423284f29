/*
 * gitpath.h - the names git refuses as a path component (a tree entry's
 * name).  Every name amp writes into the SSOT (an agent's directory, a
 * task's, a record's file) becomes one; a name `git fsck` finds fault with
 * makes a hub with receive.fsckObjects refuse the push and a clone with
 * transfer.fsckObjects refuse every fetch after it.  No repository and no
 * libgit2 here: the rules are git's own (fsck.c's tree checks, path.c's
 * is_ntfs_dot*, utf8.c's is_hfs_dot*), written again.
 */
#ifndef AMP_GITPATH_H
#define AMP_GITPATH_H

#include <stddef.h>

/*
 * NULL when git accepts name[0..len) as the name of a tree entry, else the
 * rule it breaks, a static string such as "is .git to git (hasDotgit)":
 * empty, holding '/' or NUL, "." or "..", ".git" as git, NTFS ("GIT~1",
 * ".git. . ", ".git::$INDEX_ALLOCATION", a backslash-separated part) or
 * HFS+ (any case, with ignorable Unicode such as U+200C) read it, or
 * ".gitmodules", ".gitattributes", ".gitignore" or ".mailmap" as NTFS or
 * HFS+ read them (their 8.3 short names too, "GITMOD~1", "gi7eba~1"): git
 * reads those files from any tree, refuses a tree or a symlink there, and
 * parses the blob found there.
 */
const char *amp_gitpath_component_problem(const char *name, size_t len);

#endif
