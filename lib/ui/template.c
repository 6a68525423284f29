/*
 * template.c - example payloads and self-contained schemas, walked out of
 * the schemas themselves: nothing here knows a message type.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <git2.h>

#include "protocol/protocol.h"
#include "template.h"
#include "base/util.h"

/* AMP's schemas nest a few levels; anything deeper is a cycle. */
#define DEPTH_MAX 64
/* A template of this length is not an example any more. */
#define EXAMPLE_MAX 256

typedef struct walk {
	amp_schema_set *set;
	const json_t *facts;
	amp_error *err;
} walk;

int amp_template_schema_uri(const char *name, char *buf, size_t bufsz)
{
	size_t i, n = strlen(name);

	if (n == 0 || n > 64)
		return -1;
	for (i = 0; i < n; i++)
		if (!(name[i] >= 'a' && name[i] <= 'z') && name[i] != '_')
			return -1;
	return snprintf(buf, bufsz, "%s%s.schema.json", AMP_SCHEMA_BASE, name) <
	       (int)bufsz ? 0 : -1;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int amp_template_schema_names(amp_schema_set *set, json_t **out,
			      amp_error *err)
{
	static const char suffix[] = ".schema.json";
	char dir[AMP_PATH_MAX], uri[AMP_PATH_MAX];
	char **names = NULL, **grown;
	size_t n = 0, i, len;
	struct dirent *d;
	DIR *dh = NULL;
	int status = AMP_OK;

	*out = NULL;
	if (amp_schema_dir(dir, sizeof(dir)) < 0 || !(dh = opendir(dir)))
		return amp_error_set(err, AMP_EIO, "", "no schema directory (set AMP_SCHEMA_DIR)");
	while ((d = readdir(dh))) {
		len = strlen(d->d_name);
		if (len <= sizeof(suffix) - 1 ||
		    strcmp(d->d_name + len - (sizeof(suffix) - 1), suffix))
			continue;
		if (!(grown = realloc(names, (n + 1) * sizeof(*names))) ||
		    !(grown[n] = strndup(d->d_name, len - (sizeof(suffix) - 1)))) {
			names = grown ? grown : names;
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
			goto cleanup;
		}
		names = grown;
		n++;
	}
	qsort(names, n, sizeof(*names), by_name);
	*out = json_array();
	for (i = 0; i < n; i++) {
		const json_t *schema = NULL;

		if (amp_template_schema_uri(names[i], uri, sizeof(uri)) == 0)
			schema = amp_schema_set_lookup(set, uri);
		if (schema)
			json_array_append_new(*out, json_pack("{s:s,s:s}", "name", names[i],
				"title", json_string_value(json_object_get(schema, "title")) ?
				json_string_value(json_object_get(schema, "title")) : ""));
	}
cleanup:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(dh);
	return status;
}

/* The URI `ref` names when written in the document `base` (no fragment):
 * "#/x" stays in base, "other.json#/x" is a sibling, a full URI is itself. */
static int join_ref(const char *base, const char *ref, char *out, size_t outsz)
{
	const char *slash = strrchr(base, '/');
	int n;

	if (ref[0] == '#')
		n = snprintf(out, outsz, "%s%s", base, ref);
	else if (strstr(ref, "://") || !slash)
		n = snprintf(out, outsz, "%s", ref);
	else
		n = snprintf(out, outsz, "%.*s%s", (int)(slash - base + 1), base, ref);
	return n >= 0 && (size_t)n < outsz ? 0 : -1;
}

/* Follows "$ref"s from *schema until a schema without one, updating *schema
 * and base (the URI of the document it is in, no fragment). */
static int deref(walk *w, const json_t **schema, char base[AMP_PATH_MAX],
		 const char *path)
{
	const json_t *ref;
	char uri[AMP_PATH_MAX];
	char *hash;
	int hops = 0;

	while (json_is_object(*schema) &&
	       json_is_string(ref = json_object_get(*schema, "$ref"))) {
		if (++hops > DEPTH_MAX ||
		    join_ref(base, json_string_value(ref), uri, sizeof(uri)) < 0 ||
		    !(*schema = amp_schema_set_lookup(w->set, uri)))
			return amp_error_set(w->err, AMP_EIO, path,
					     "the schema's $ref '%s' resolves nowhere",
					     json_string_value(ref));
		if ((hash = strchr(uri, '#')))
			*hash = '\0';
		memcpy(base, uri, strlen(uri) + 1);
	}
	return AMP_OK;
}

static int fits(walk *w, const json_t *schema, const char *base,
		const json_t *value)
{
	amp_errlist errors = { 0 };
	int status = amp_schema_validate(w->set, (json_t *)schema, base,
					 (json_t *)value, &errors);

	amp_errlist_free(&errors);
	return status == AMP_OK;
}

/* v when the schema accepts it, else NULL (v is consumed). */
static json_t *accept(walk *w, const json_t *schema, const char *base, json_t *v)
{
	if (v && fits(w, schema, base, v))
		return v;
	json_decref(v);
	return NULL;
}

/* ---- a string matching a pattern ---------------------------------------
 * Enough of ERE for the patterns a schema writes: literals, escapes,
 * classes (their first member), groups with alternatives (the first),
 * and ? * + {n} {n,} {n,m} (the fewest repetitions). */

typedef struct regen {
	const char *p;
	char *out;
	size_t len, cap;
	int bad;
} regen;

static void put(regen *r, const char *s, size_t n, int keep)
{
	if (!keep)
		return;
	if (r->len + n >= r->cap) {
		r->bad = 1;
		return;
	}
	memcpy(r->out + r->len, s, n);
	r->len += n;
	r->out[r->len] = '\0';
}

static void alternatives(regen *r, int keep);

/* One atom at r->p, written when keep. */
static void atom(regen *r, int keep)
{
	char c = *r->p;

	if (c == '(') {
		r->p++;
		alternatives(r, keep);
		if (*r->p != ')')
			r->bad = 1;
		else
			r->p++;
	} else if (c == '[') {
		char first;

		r->p++;
		if (*r->p == '^') {
			/* a negated class: a letter it rarely excludes */
			r->p++;
			first = 'a';
			if (*r->p == 'a')
				first = 'b';
		} else {
			first = *r->p == '\\' ? r->p[1] : *r->p;
		}
		/* a ']' first in a class is a member */
		if (*r->p == ']')
			r->p++;
		while (*r->p && *r->p != ']')
			r->p += *r->p == '\\' && r->p[1] ? 2 : 1;
		if (*r->p != ']')
			r->bad = 1;
		else
			r->p++;
		put(r, &first, 1, keep);
	} else if (c == '\\' && r->p[1]) {
		char lit = r->p[1] == 'd' ? '0' : r->p[1] == 'w' ? 'a' :
			   r->p[1] == 's' ? ' ' : r->p[1];

		r->p += 2;
		put(r, &lit, 1, keep);
	} else if (c == '.') {
		r->p++;
		put(r, "a", 1, keep);
	} else {
		r->p++;
		put(r, &c, 1, keep);
	}
}

/* The fewest repetitions the quantifier at r->p allows (1 without one). */
static long quantifier(regen *r)
{
	char *end;
	long n;

	switch (*r->p) {
	case '?': case '*': r->p++; return 0;
	case '+': r->p++; return 1;
	case '{':
		n = strtol(r->p + 1, &end, 10);
		if (end == r->p + 1 || n < 0 || n > EXAMPLE_MAX)
			return r->bad = 1, 0;
		while (*end && *end != '}')
			end++;
		if (*end != '}')
			return r->bad = 1, 0;
		r->p = end + 1;
		return n;
	default:
		return 1;
	}
}

static void sequence(regen *r, int keep)
{
	while (!r->bad && *r->p && *r->p != '|' && *r->p != ')') {
		const char *start = r->p;
		size_t at = r->len;
		long n, i;

		if (*r->p == '^' || *r->p == '$') {
			r->p++;
			continue;
		}
		atom(r, keep);
		n = quantifier(r);
		if (n == 0) {
			r->len = at;
			if (keep)
				r->out[at] = '\0';
			continue;
		}
		/* repeat the atom as written */
		for (i = 1; i < n && !r->bad; i++) {
			const char *end = r->p;

			r->p = start;
			atom(r, keep);
			r->p = end;
		}
	}
}

static void alternatives(regen *r, int keep)
{
	int first = 1;

	for (;;) {
		sequence(r, keep && first);
		if (r->bad || *r->p != '|')
			return;
		r->p++;
		first = 0;
	}
}

static int pattern_example(const char *pattern, char *out, size_t outsz)
{
	regen r = { pattern, out, 0, outsz, 0 };

	out[0] = '\0';
	alternatives(&r, 1);
	return r.bad || *r.p ? -1 : 0;
}

/* ---- examples ---------------------------------------------------------- */

static json_t *example(walk *w, const json_t *schema, const char *base,
		       const char *name, const char *path, int depth);

/* A fact about the task named `name`, when the schema accepts it. */
static json_t *fact(walk *w, const json_t *schema, const char *base,
		    const char *name)
{
	json_t *v;

	if (!name || !w->facts)
		return NULL;
	v = json_object_get(json_object_get(w->facts, "values"), name);
	return v && fits(w, schema, base, v) ? json_incref(v) : NULL;
}

static json_t *string_example(walk *w, const json_t *schema, const char *base,
			      const char *name)
{
	const char *pattern = json_string_value(json_object_get(schema, "pattern"));
	const char *format = json_string_value(json_object_get(schema, "format"));
	json_int_t min = json_integer_value(json_object_get(schema, "minLength"));
	char buf[EXAMPLE_MAX + 1];
	json_t *v, *id;
	size_t i, n;

	/* A patterned string may be a reference: the task's own records,
	 * newest first, so that a reference names the latest of its kind. */
	if (pattern && w->facts)
		json_array_foreach(json_object_get(w->facts, "msg_ids"), i, id)
			if (fits(w, schema, base, id))
				return json_incref(id);
	if (format && !strcmp(format, "date-time") &&
	    (v = accept(w, schema, base, json_string("2026-01-01T00:00:00Z"))))
		return v;
	if (pattern && pattern_example(pattern, buf, sizeof(buf)) == 0 &&
	    (v = accept(w, schema, base, json_string(buf))))
		return v;
	snprintf(buf, sizeof(buf), "example-%s", name ? name : "text");
	for (n = strlen(buf); (json_int_t)n < min && n < EXAMPLE_MAX; n++)
		buf[n] = 'x';
	buf[n] = '\0';
	return json_string(buf);
}

static json_t *number_example(const json_t *schema, int integer)
{
	const json_t *max = json_object_get(schema, "maximum");
	const json_t *min = json_object_get(schema, "minimum");
	double x = json_is_number(max) ? json_number_value(max) :
		   json_is_number(min) ? json_number_value(min) : 0;

	return integer ? json_integer((json_int_t)x) : json_real(x);
}

static int required(const json_t *schema, const char *key)
{
	size_t i;
	json_t *k;

	json_array_foreach(json_object_get(schema, "required"), i, k)
		if (json_is_string(k) && !strcmp(json_string_value(k), key))
			return 1;
	return 0;
}

static int add_member(walk *w, json_t *obj, const json_t *props,
		      const char *base, const char *key, const char *path,
		      int depth)
{
	char sub[AMP_PATH_MAX];
	json_t *v;

	snprintf(sub, sizeof(sub), "%s", path);
	amp_pointer_append(sub, sizeof(sub), key);
	if (!(v = example(w, json_object_get(props, key), base, key, sub, depth + 1)))
		return w->err->status;
	json_object_set_new(obj, key, v);
	return AMP_OK;
}

/* What the object's if/then conditions that obj meets cost: first the
 * members they require (a rejection needs issues), then how many they are
 * (a restriction alone, such as an approval's "no criterion failed",
 * costs less than any required member). */
static int conditions_met(walk *w, const json_t *schema, const char *base,
			  const json_t *obj)
{
	const json_t *c;
	size_t i;
	int n = 0;

	json_array_foreach(json_object_get(schema, "allOf"), i, c) {
		const json_t *cond = json_object_get(c, "if");

		if (cond && fits(w, cond, base, obj))
			n += 1 + 1000 * (int)json_array_size(json_object_get(
					json_object_get(c, "then"), "required"));
	}
	return n;
}

/*
 * The schema's if/then conditions: each enum member takes the value that
 * sets off the fewest (the simplest valid payload: a complete result needs
 * no blockers, an info escalation no suspension), then each condition obj
 * meets adds its required members and its consts.
 */
static int apply_conditions(walk *w, const json_t *schema, const char *base,
			    json_t *obj, const char *path, int depth)
{
	const json_t *props = json_object_get(schema, "properties");
	const json_t *c, *k, *s;
	const char *key;
	json_t *v;
	size_t i, j;

	if (!json_array_size(json_object_get(schema, "allOf")))
		return AMP_OK;
	json_object_foreach((json_t *)obj, key, v) {
		const json_t *ps = json_object_get(props, key);
		char pbase[AMP_PATH_MAX];
		json_t *best = NULL, *e;
		int fewest = -1;

		snprintf(pbase, sizeof(pbase), "%s", base);
		if (deref(w, &ps, pbase, path) < 0)
			return w->err->status;
		if (json_array_size(json_object_get(ps, "enum")) < 2)
			continue;
		json_array_foreach(json_object_get(ps, "enum"), j, e) {
			int n;

			if (!fits(w, ps, pbase, e))
				continue;
			json_object_set(obj, key, e);
			n = conditions_met(w, schema, base, obj);
			if (fewest < 0 || n < fewest) {
				fewest = n;
				best = e;
			}
		}
		json_object_set(obj, key, best ? best : v);
	}
	json_array_foreach(json_object_get(schema, "allOf"), i, c) {
		const json_t *cond = json_object_get(c, "if");
		const json_t *then = json_object_get(c, "then");

		if (!cond || !then || !fits(w, cond, base, obj))
			continue;
		json_array_foreach(json_object_get(then, "required"), j, k)
			if (json_is_string(k) && !json_object_get(obj, json_string_value(k)) &&
			    add_member(w, obj, props, base, json_string_value(k), path, depth) < 0)
				return w->err->status;
		json_object_foreach((json_t *)json_object_get(then, "properties"), key, s)
			if (json_object_get(s, "const") && json_object_get(obj, key))
				json_object_set(obj, key, json_object_get(s, "const"));
	}
	return AMP_OK;
}

static json_t *object_example(walk *w, const json_t *schema, const char *base,
			      const char *path, int depth)
{
	const json_t *props = json_object_get(schema, "properties");
	json_t *obj = json_object();
	const char *key;
	json_t *sub;

	/* In the schema's order, which is the protocol's. */
	json_object_foreach((json_t *)props, key, sub)
		if (required(schema, key) &&
		    add_member(w, obj, props, base, key, path, depth) < 0)
			goto fail;
	if (apply_conditions(w, schema, base, obj, path, depth) < 0)
		goto fail;
	return obj;
fail:
	json_decref(obj);
	return NULL;
}

static json_t *array_example(walk *w, const json_t *schema, const char *base,
			     const char *name, const char *path, int depth)
{
	const json_t *items = json_object_get(schema, "items");
	const json_t *maxi = json_object_get(schema, "maxItems");
	json_int_t n = json_integer_value(json_object_get(schema, "minItems"));
	json_t *arr = json_array(), *v;
	char sub[AMP_PATH_MAX];
	json_int_t i;

	/* One item shows its shape; more only when the schema asks. */
	if (n < 1)
		n = 1;
	if (json_is_integer(maxi) && json_integer_value(maxi) < n)
		n = json_integer_value(maxi);
	for (i = 0; i < n && items; i++) {
		snprintf(sub, sizeof(sub), "%s/%lld", path, (long long)i);
		if (!(v = example(w, items, base, name, sub, depth + 1))) {
			json_decref(arr);
			return NULL;
		}
		json_array_append_new(arr, v);
	}
	return arr;
}

static json_t *example(walk *w, const json_t *schema, const char *base_in,
		       const char *name, const char *path, int depth)
{
	char base[AMP_PATH_MAX];
	const json_t *type, *alt, *b;
	const char *t = NULL;
	json_t *v;
	size_t i;

	snprintf(base, sizeof(base), "%s", base_in);
	if (depth > DEPTH_MAX) {
		amp_error_set(w->err, AMP_EIO, path, "the schema nests too deeply");
		return NULL;
	}
	if (deref(w, &schema, base, path) < 0)
		return NULL;
	if (!json_is_object(schema))
		return json_null();
	if ((v = fact(w, schema, base, name)))
		return v;
	if ((v = json_object_get(schema, "const")))
		return json_deep_copy(v);
	if ((v = json_array_get(json_object_get(schema, "enum"), 0)))
		return json_deep_copy(v);
	type = json_object_get(schema, "type");
	t = json_is_array(type) ? json_string_value(json_array_get(type, 0)) :
	    json_string_value(type);
	/* A tri-state (true, false, or null: "cannot be verified yet"):
	 * AMP/1.0 §02 says mark null rather than guess, and null is what an
	 * approval's criteria may hold besides true (review_verdict). */
	if (json_is_array(type) && json_array_size(type) == 2 && t && !strcmp(t, "boolean") &&
	    !strcmp(amp_or_none(json_string_value(json_array_get(type, 1))), "null"))
		return json_null();
	if (!t && json_object_get(schema, "properties"))
		t = "object";
	if (!t) {
		/* no type of its own: the first alternative the whole accepts */
		alt = json_object_get(schema, "anyOf");
		if (!alt)
			alt = json_object_get(schema, "oneOf");
		if (!alt)
			alt = json_object_get(schema, "allOf");
		json_array_foreach(alt, i, b) {
			if (!(v = example(w, b, base, name, path, depth + 1)))
				return NULL;
			if (fits(w, schema, base, v))
				return v;
			json_decref(v);
		}
		return json_null();
	}
	if (!strcmp(t, "object"))
		return object_example(w, schema, base, path, depth);
	if (!strcmp(t, "array"))
		return array_example(w, schema, base, name, path, depth);
	if (!strcmp(t, "string"))
		return string_example(w, schema, base, name);
	if (!strcmp(t, "integer") || !strcmp(t, "number"))
		return number_example(schema, !strcmp(t, "integer"));
	if (!strcmp(t, "boolean"))
		return json_false();
	return json_null();
}

int amp_template_build(amp_schema_set *set, const char *uri,
		       const json_t *facts, json_t **out, amp_error *err)
{
	walk w = { set, facts, err };
	const json_t *schema = amp_schema_set_lookup(set, uri);
	amp_errlist errors = { 0 };
	json_t *v = NULL;
	int status;

	*out = NULL;
	if (!schema)
		return amp_error_set(err, AMP_EUSAGE, "", "no schema %s", uri);
	if (!(v = example(&w, schema, uri, NULL, "", 0)))
		return err->status;
	/* What the walk cannot see (a "not", a condition across members)
	 * is caught here rather than handed to the user. */
	if ((status = amp_schema_validate(set, (json_t *)schema, uri, v, &errors)) < 0) {
		amp_error_set(err, AMP_ESCHEMA, errors.count ? errors.items[0].path : "",
			      "no valid example could be made: %s",
			      errors.count ? errors.items[0].message : "invalid");
		json_decref(v);
		amp_errlist_free(&errors);
		return status;
	}
	amp_errlist_free(&errors);
	*out = v;
	return AMP_OK;
}

/* ---- resolved schemas -------------------------------------------------- */

static json_t *inline_refs(walk *w, const json_t *node, const char *base_in,
			   int depth)
{
	char base[AMP_PATH_MAX];
	const json_t *target = node;
	const char *key;
	json_t *out, *v, *sub;
	size_t i;

	if (depth > DEPTH_MAX) {
		amp_error_set(w->err, AMP_EIO, "", "the schema nests too deeply");
		return NULL;
	}
	snprintf(base, sizeof(base), "%s", base_in);
	if (json_is_array(node)) {
		out = json_array();
		json_array_foreach(node, i, v) {
			if (!(sub = inline_refs(w, v, base, depth + 1)))
				goto fail;
			json_array_append_new(out, sub);
		}
		return out;
	}
	if (!json_is_object(node))
		return json_incref((json_t *)node);
	if (json_object_get(node, "$ref")) {
		if (deref(w, &target, base, "") < 0 ||
		    !(out = inline_refs(w, target, base, depth + 1)))
			return NULL;
		if (json_is_object(out) && json_object_get(node, "description"))
			json_object_set(out, "description",
					json_object_get(node, "description"));
		return out;
	}
	out = json_object();
	json_object_foreach((json_t *)node, key, v) {
		/* every reference is inlined: the definitions and the ids
		 * of the documents they came from say nothing more */
		if (!strcmp(key, "definitions") ||
		    (depth > 0 && (!strcmp(key, "$id") || !strcmp(key, "$schema"))))
			continue;
		/* the names under "properties" are members, not keywords */
		if (!(sub = inline_refs(w, v, base, depth + 1)))
			goto fail;
		json_object_set_new(out, key, sub);
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}

int amp_template_resolve(amp_schema_set *set, const char *uri, json_t **out,
			 amp_error *err)
{
	walk w = { set, NULL, err };
	const json_t *schema = amp_schema_set_lookup(set, uri);
	char base[AMP_PATH_MAX], *hash;

	if (!schema)
		return *out = NULL, amp_error_set(err, AMP_EUSAGE, "", "no schema %s", uri);
	/* A subschema ("...#/definitions/x") resolves its "$ref"s against
	 * its document. */
	snprintf(base, sizeof(base), "%s", uri);
	if ((hash = strchr(base, '#')))
		*hash = '\0';
	return (*out = inline_refs(&w, schema, base, 0)) ? AMP_OK : err->status;
}

/* ---- facts ------------------------------------------------------------- */

int amp_template_facts(amp_store *st, const char *task_id, json_t **out,
		       amp_error *err)
{
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	amp_task_log log = { 0 };
	amp_task_state s;
	const char *workdir = git_repository_workdir(amp_store_repo(st));
	json_t *ids = json_array(), *values;
	size_t i, n;
	int status;

	*out = NULL;
	if ((status = amp_store_tip(st, amp_store_messages_ref(st), &commit,
				    &tree, err)) < 0 ||
	    (status = amp_store_read_task(st, tree, task_id, &log, err)) < 0)
		goto cleanup;
	for (i = log.count; i-- > 0;)
		if (log.entries[i].kind == AMP_ENTRY_MSG &&
		    amp_task_entry_in_place(&log, &log.entries[i]))
			json_array_append_new(ids, json_string(log.entries[i].id));
	amp_task_state_compute(&log, &s);
	values = json_pack("{s:s,s:i,s:s?}", "task_status", s.state,
			   "reject_count", s.reject_count,
			   "last_successful_msg_id", s.last_successful_msg_id);
	amp_task_state_free(&s);
	/* AMP/1.0 §01 repo "must exist .git": the repository the SSOT is in,
	 * without git's trailing slash. */
	if (workdir && (n = strlen(workdir)) > 1)
		json_object_set_new(values, "repo",
				    json_stringn(workdir, workdir[n - 1] == '/' ? n - 1 : n));
	amp_template_dispatch_facts(&log, values);
	*out = json_pack("{s:O,s:o}", "msg_ids", ids, "values", values);
cleanup:
	json_decref(ids);
	amp_task_log_free(&log);
	git_tree_free(tree);
	git_commit_free(commit);
	return status;
}
