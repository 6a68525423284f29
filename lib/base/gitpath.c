/*
 * gitpath.c - the names git refuses as a path component (gitpath.h).
 *
 * The rules follow git's: fsck_tree() in fsck.c flags a tree entry named
 * "" (emptyName), holding '/' (fullPathname), "." (hasDot), ".."
 * (hasDotdot) or one is_hfs_dotgit() or is_ntfs_dotgit() matches
 * (hasDotgit); it reads a ".gitmodules" or ".gitattributes" as HFS+ or NTFS
 * would name it as that file (gitmodulesBlob when it is a tree), and a
 * symlink named as ".gitignore" or ".mailmap" is an error of its own.  amp
 * refuses the four file names whatever the entry is.
 */
#include "gitpath.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/* s[i], or '\0' past the end: git's checks read up to a NUL. */
static char at(const char *s, size_t len, size_t i)
{
	return i < len ? s[i] : '\0';
}

/* The next code point of s[*i..len) that HFS+ does not ignore (git's
 * next_hfs_char), 0 at the end or at bytes that are not UTF-8. */
static unsigned hfs_next(const char *s, size_t len, size_t *i)
{
	unsigned cp;
	size_t n;

	for (;;) {
		if (*i >= len)
			return 0;
		if (!(n = amp_utf8_seqn(s + *i, len - *i, &cp))) {
			*i = len;
			return 0;
		}
		*i += n;
		if ((cp >= 0x200c && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) ||
		    (cp >= 0x206a && cp <= 0x206f) || cp == 0xfeff)
			continue;
		return cp;
	}
}

/* 1 when HFS+ reads s as "." then needle (lower case ASCII), in any case
 * and with ignorable code points anywhere (git's is_hfs_dot_generic). */
static int is_hfs_dot(const char *s, size_t len, const char *needle)
{
	size_t i = 0;
	unsigned c;

	if (hfs_next(s, len, &i) != '.')
		return 0;
	for (; *needle; needle++)
		if ((c = hfs_next(s, len, &i)) > 127 || tolower((int)c) != *needle)
			return 0;
	c = hfs_next(s, len, &i);
	return c == 0 || c == '/';
}

/* 1 when s[from..len) holds only spaces and dots, NTFS drops those at the
 * end of a name, up to the end or a ':' (an alternate data stream). */
static int ntfs_tail(const char *s, size_t len, size_t from)
{
	char c;

	for (; (c = at(s, len, from)) && c != ':'; from++)
		if (c != ' ' && c != '.')
			return 0;
	return 1;
}

/* 1 when part[skip..n) holds only spaces and dots (n >= skip). */
static int spaces_and_dots(const char *part, size_t n, size_t skip)
{
	if (n < skip)
		return 0;
	for (; skip < n; skip++)
		if (part[skip] != ' ' && part[skip] != '.')
			return 0;
	return 1;
}

/* git's is_ntfs_dotgit: ".git" or its short name "git~1", then spaces and
 * dots, in a part that ends at the end, '/', ':' or a backslash (NTFS's
 * separator: the next part is checked too). */
static int is_ntfs_dotgit(const char *s, size_t len)
{
	size_t start = 0, i;

	for (i = 0;; i++) {
		char c = at(s, len, i);

		if (c && c != '\\' && c != '/' && c != ':')
			continue;
		if ((spaces_and_dots(s + start, i - start, 4) && !strncasecmp(s + start, ".git", 4)) ||
		    (spaces_and_dots(s + start, i - start, 5) && !strncasecmp(s + start, "git~1", 5)))
			return 1;
		if (c != '\\')
			return 0;
		start = i + 1;
	}
}

/* git's is_ntfs_dot_generic: "." and needle in any case, its 8.3 short
 * name (the first six characters, '~' and 1 to 4) or the fall-back short
 * name NTFS makes from a hash (`shortname`, six characters, then '~' and
 * digits), each followed by spaces and dots only. */
static int is_ntfs_dot(const char *s, size_t len, const char *needle, const char *shortname)
{
	size_t n = strlen(needle), i;
	int saw_tilde = 0;
	char c;

	if (at(s, len, 0) == '.' && len > n && !strncasecmp(s + 1, needle, n))
		return ntfs_tail(s, len, n + 1);
	if (len >= 8 && !strncasecmp(s, needle, 6) && s[6] == '~' && s[7] >= '1' && s[7] <= '4')
		return ntfs_tail(s, len, 8);
	for (i = 0; i < 8; i++) {
		c = at(s, len, i);
		if (!c)
			return 0;
		if (saw_tilde) {
			if (c < '0' || c > '9')
				return 0;
		} else if (c == '~') {
			c = at(s, len, ++i);
			if (c < '1' || c > '9')
				return 0;
			saw_tilde = 1;
		} else if (i >= 6 || (c & 0x80) || tolower((unsigned char)c) != shortname[i]) {
			return 0;
		}
	}
	return ntfs_tail(s, len, i);
}

/* The files git reads from any tree, with the short-name prefix NTFS
 * gives each (git's path.c). */
static const struct {
	const char *name, *shortname, *why;
} git_files[] = {
	{ "gitmodules", "gi7eba", "is .gitmodules to git (gitmodulesBlob)" },
	{ "gitattributes", "gi7d29", "is .gitattributes to git (gitattributesBlob)" },
	{ "gitignore", "gi250a", "is .gitignore to git" },
	{ "mailmap", "maba30", "is .mailmap to git" },
};

const char *amp_gitpath_component_problem(const char *name, size_t len)
{
	size_t i;

	if (!len)
		return "is empty (emptyName)";
	if (memchr(name, '\0', len))
		return "holds a NUL byte";
	if (memchr(name, '/', len))
		return "holds a '/' (fullPathname)";
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return len == 1 ? "is \".\" (hasDot)" : "is \"..\" (hasDotdot)";
	if (is_hfs_dot(name, len, "git") || is_ntfs_dotgit(name, len))
		return "is .git to git (hasDotgit)";
	for (i = 0; i < sizeof(git_files) / sizeof(git_files[0]); i++)
		if (is_hfs_dot(name, len, git_files[i].name) ||
		    is_ntfs_dot(name, len, git_files[i].name, git_files[i].shortname))
			return git_files[i].why;
	return NULL;
}
