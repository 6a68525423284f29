/*
 * names.c - the names amp gives things in the SSOT (names.h).
 */
#include "names.h"

#include <string.h>

#include "base/gitpath.h"

const char *amp_agent_problem(const char *name, size_t len)
{
	const char *git;
	size_t i, dots = 0;

	if (len < 1 || len > AMP_AGENT_MAX)
		return "(1 to 64 of A-Z a-z 0-9 . _ -)";
	for (i = 0; i < len; i++) {
		if (!name[i] ||
		    !strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", name[i]))
			return "(1 to 64 of A-Z a-z 0-9 . _ -)";
		dots += name[i] == '.';
	}
	/* The name is a directory of the SSOT (registry.h) and the author
	 * name of the commits it writes. */
	if ((git = amp_gitpath_component_problem(name, len)))
		return git;
	if (dots == len)
		return "only dots, which git drops from an author name";
	return NULL;
}

int amp_agent_valid(const char *name, size_t len)
{
	return !amp_agent_problem(name, len);
}

#define PREFIX AMP_REGISTRY_DIR "/"
#define NAME_HEAD AMP_REGISTER_HEAD

int amp_registry_parse_path(const char *path, char *agent, size_t agentsz, int64_t *ms,
			    char hex[13])
{
	const char *a = path + strlen(PREFIX), *slash, *p, *dash;
	size_t len, i;
	int64_t v = 0;

	if (strncmp(path, PREFIX, strlen(PREFIX)) || !(slash = strchr(a, '/')))
		return -1;
	len = (size_t)(slash - a);
	if (!amp_agent_valid(a, len) || len >= agentsz)
		return -1;
	p = slash + 1;
	if (strncmp(p, NAME_HEAD, strlen(NAME_HEAD)))
		return -1;
	p += strlen(NAME_HEAD);
	/* <unix_ms>: 1 to 15 digits, no leading zero (one name per time). */
	if (!(dash = strchr(p, '-')) || dash == p || dash - p > 15 || (*p == '0' && dash - p > 1))
		return -1;
	for (; p < dash; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	p = dash + 1;
	for (i = 0; i < 12; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return -1;
	if (strcmp(p + 12, ".json"))
		return -1;
	memcpy(agent, a, len);
	agent[len] = '\0';
	memcpy(hex, p, 12);
	hex[12] = '\0';
	*ms = v;
	return 0;
}
