/*
 * hints.c - what a schema error says beyond the keyword that failed
 * (issue 34, "help and mistakes like git"): the property a misspelt one
 * probably meant, and the condition of an if/then that made a member
 * required.
 */
#include "schema_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/similar.h"

/* The length of the prefix a and b share. */
static size_t common_prefix(const char *a, const char *b)
{
	size_t n = 0;

	while (a[n] && a[n] == b[n])
		n++;
	return n;
}

const char *schema_hint_property(json_t *props, json_t *instance, const char *key)
{
	const char *names[256], *name, *best = NULL;
	size_t n = 0, found, pick[2], shared, most = 0;
	int tie = 0;
	json_t *sub;

	if (!json_is_object(props))
		return NULL;
	/* The properties the instance lacks: a misspelt one is missing. */
	json_object_foreach(props, name, sub)
		if (n < 256 && !json_object_get(instance, name))
			names[n++] = name;
	if ((found = amp_similar(key, names, n, pick, 2)) == 1)
		return names[pick[0]];
	if (found)
		return NULL;
	/* A word that starts the same and ends otherwise ("suggestion",
	 * "suggested_fix"): the one sharing the longest prefix, of at
	 * least 5 bytes and half the word, when no other shares as much. */
	for (found = 0; found < n; found++) {
		shared = common_prefix(key, names[found]);
		if (shared > most) {
			most = shared;
			best = names[found];
			tie = 0;
		} else if (shared == most) {
			tie = 1;
		}
	}
	return best && !tie && most >= 5 && most * 2 >= strlen(key) ? best : NULL;
}

void schema_hint_condition(json_t *cond, char *buf, size_t bufsz)
{
	json_t *props = json_object_get(cond, "properties"), *sub, *v, *e;
	const char *name;
	size_t used = 0, i;
	char *text;

	buf[0] = '\0';
	json_object_foreach(props, name, sub) {
		if ((v = json_object_get(sub, "const"))) {
			text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
			used += (size_t)snprintf(buf + used, used < bufsz ? bufsz - used : 0,
						 "%s%s is %s", used ? " and " : "", name,
						 text ? text : "?");
			free(text);
		} else if (json_is_array(v = json_object_get(sub, "enum"))) {
			used += (size_t)snprintf(buf + used, used < bufsz ? bufsz - used : 0,
						 "%s%s is one of ", used ? " and " : "", name);
			json_array_foreach(v, i, e) {
				text = json_dumps(e, JSON_ENCODE_ANY | JSON_COMPACT);
				used += (size_t)snprintf(buf + used,
							 used < bufsz ? bufsz - used : 0,
							 "%s%s", i ? ", " : "", text ? text : "?");
				free(text);
			}
		} else {
			/* a condition other than a value: not said in words */
			buf[0] = '\0';
			return;
		}
		if (used >= bufsz) {
			buf[0] = '\0';
			return;
		}
	}
}
