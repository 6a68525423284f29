/*
 * sigcache.c - verified signatures, kept (sigcache.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "sigcache.h"

void amp_sigcache_init(amp_sigcache *c, const char *state_dir, const char *allowed)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "%s/record-sigs", state_dir);
	snprintf(c->allowed, sizeof(c->allowed), "%s", allowed);
}

void amp_sigcache_free(amp_sigcache *c)
{
	json_decref(c->map);
	c->map = NULL;
}

/* What identifies amp.allowedSigners as read: a cache made against
 * another file (rotated keys) is not used. */
static void allowed_stamp(const amp_sigcache *c, char *buf, size_t bufsz)
{
	struct stat sb;

	if (stat(c->allowed, &sb) < 0)
		snprintf(buf, bufsz, "amp-record-sigs 1 none");
	else
		snprintf(buf, bufsz, "amp-record-sigs 1 %lld %lld.%09ld", (long long)sb.st_size,
			 (long long)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec);
}

/* c->map, read from the cache file once: key "<sig> <record> <when>",
 * value the principal.  NULL when out of memory. */
static json_t *load(amp_sigcache *c)
{
	char stamp[128], line[1024];
	FILE *f;

	if (c->map)
		return c->map;
	if (!(c->map = json_object()))
		return NULL;
	c->timeless = 0;
	if ((f = fopen(c->allowed, "r"))) {
		int bounded = 0;

		while (!bounded && fgets(line, sizeof(line), f))
			bounded = strstr(line, "valid-") != NULL;
		c->timeless = !bounded && !ferror(f);
		fclose(f);
	}
	allowed_stamp(c, stamp, sizeof(stamp));
	if (!(f = fopen(c->path, "r")))
		return c->map;
	if (fgets(line, sizeof(line), f) && !strncmp(line, stamp, strlen(stamp)) &&
	    line[strlen(stamp)] == '\n') {
		while (fgets(line, sizeof(line), f)) {
			char sig[41], rec[41], key[128], who[300];
			long long when;

			/* A line cut by a crash is not one: skipped. */
			if (!strchr(line, '\n') ||
			    sscanf(line, "%40s %40s %lld %299s", sig, rec, &when, who) != 4)
				continue;
			snprintf(key, sizeof(key), "%s %s %lld", sig, rec, when);
			json_object_set_new(c->map, key, json_string(who));
		}
	}
	fclose(f);
	return c->map;
}

int amp_sigcache_timeless(amp_sigcache *c)
{
	load(c);
	return c->timeless;
}

const char *amp_sigcache_get(amp_sigcache *c, const char *key)
{
	return load(c) ? json_string_value(json_object_get(c->map, key)) : NULL;
}

void amp_sigcache_put(amp_sigcache *c, const char *key, const char *principal)
{
	char stamp[128], line[1024], dir[PATH_MAX + 32], *slash;
	FILE *f;
	int fresh;

	if (!load(c) || strpbrk(principal, " \t\r\n") || !*principal)
		return;
	json_object_set_new(c->map, key, json_string(principal));
	allowed_stamp(c, stamp, sizeof(stamp));
	fresh = 1;
	if ((f = fopen(c->path, "r"))) {
		fresh = !fgets(line, sizeof(line), f) || strncmp(line, stamp, strlen(stamp)) ||
			line[strlen(stamp)] != '\n';
		fclose(f);
	}
	snprintf(dir, sizeof(dir), "%s", c->path);
	if ((slash = strrchr(dir, '/')))
		*slash = '\0';
	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return;
	if (!(f = fopen(c->path, fresh ? "w" : "a")))
		return;
	if (fresh)
		fprintf(f, "%s\n", stamp);
	fprintf(f, "%s %s\n", key, principal);
	fclose(f);
}
