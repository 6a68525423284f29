#include "refname.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

/* git's refs.c check_refname_component(), applied to every component of
 * "refs/heads/<name>", and strbuf_check_branch_ref()'s two extra rules. */
const char *amp_refname_branch_problem(const char *name)
{
	const char *p, *component = name;
	size_t len = strlen(name);

	if (!len)
		return "is empty";
	if (name[0] == '-')
		return "starts with '-'";
	if (!strcmp(name, "HEAD"))
		return "is \"HEAD\"";
	if (!strcmp(name, "@"))
		return "is \"@\", git's name for HEAD";
	if (name[0] == '/' || name[len - 1] == '/')
		return "starts or ends with '/'";
	if (name[len - 1] == '.')
		return "ends with '.'";
	for (p = name; *p; p++) {
		unsigned char ch = (unsigned char)*p;

		if (ch < 0x20 || ch == 0x7f)
			return "contains a control character";
		if (strchr(" ~^:?*[\\", ch))
			return "contains one of space ~ ^ : ? * [ \\";
		if (ch == '.' && p[1] == '.')
			return "contains \"..\"";
		if (ch == '@' && p[1] == '{')
			return "contains \"@{\"";
		if (ch == '/' && p[1] == '/')
			return "contains \"//\"";
		if (ch == '/' || !p[1]) {
			const char *end = ch == '/' ? p : p + 1;

			if (*component == '.')
				return "has a component starting with '.'";
			if (end - component >= 5 && !strncmp(end - 5, ".lock", 5))
				return "has a component ending with \".lock\"";
			component = p + 1;
		}
	}
	return NULL;
}

/* 1 when `name` (n bytes) is a word of `list`, ignoring case. */
static int in_list(const char *name, size_t n, const char *list)
{
	const char *p = list;
	size_t w;

	while (*p) {
		p += strspn(p, " ,\t");
		w = strcspn(p, " ,\t");
		if (w && w == n && !strncasecmp(p, name, n))
			return 1;
		p += w;
	}
	return 0;
}

int amp_refname_is_protected(const char *name, const char *list)
{
	const char *slash;

	/* Ref names are case-sensitive, but on a case-insensitive file
	 * system (macOS, Windows) refs/heads/Main is the file of main. */
	if (!strncasecmp(name, "refs/", 5))
		name += 5;
	if (!strncasecmp(name, "heads/", 6)) {
		name += 6;
	} else if (!strncasecmp(name, "remotes/", 8) &&
		   (slash = strchr(name + 8, '/')) && slash > name + 8) {
		name = slash + 1;
	}
	return in_list(name, strlen(name), AMP_PROTECTED_BRANCHES) ||
	       (list && in_list(name, strlen(name), list));
}

int amp_refname_may_be_protected(const char *name, const char *list)
{
	const char *last = strrchr(name, '/');

	if (amp_refname_is_protected(name, list))
		return 1;
	if (!last || !*++last)
		return 0;
	return !strcasecmp(last, "HEAD") || in_list(last, strlen(last), AMP_PROTECTED_BRANCHES) ||
	       (list && in_list(last, strlen(last), list));
}
