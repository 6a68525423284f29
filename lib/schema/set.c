/*
 * set.c - a schema set: the documents, their "$id" index and lookups.
 *
 * The set keeps every document it was given and three hash tables built
 * from them, so that validation never re-parses or re-walks a schema:
 *
 *   index     absolute URI -> [subschema, scope]  ("$id"s and documents)
 *   resolved  scope "\x1f" $ref -> absolute URI   (RFC 3986 resolution)
 *   targets   absolute URI -> [subschema, scope]  (memoised lookups,
 *                                                 JSON pointer fragments)
 *
 * "scope" is the base URI in which the subschema's own "$id" (if any) is
 * to be read; validate() (keywords.c) applies that "$id" when it enters the
 * subschema, so an entry found by "$id" and one found by a JSON pointer
 * behave alike.  The strings of these tables double as interned base URIs:
 * validation passes `const char *` pointers into them down the recursion.
 *
 * Every "pattern" of a document is compiled when the document is added
 * (pattern.c), so that a schema whose pattern does not compile is refused
 * there, naming where the pattern is; but for amp's own schemas
 * (amp_schema_set_load_amp), compiled when first used: every command loads
 * them, and compiling all 16 patterns cost a command 0.26M instructions
 * (8% of an amp inbox, 7.5% of a send) for the one or two it matches.  A
 * bad one there is then an error where it is used.
 */
#include "schema_int.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "json/json.h"

/* --- the set ----------------------------------------------------------- */

/* Makes "a\x1fb" in the set's scratch buffer; NULL when out of memory. */
static const char *make_key(amp_schema_set *set, const char *a, const char *b)
{
	size_t la = a ? strlen(a) : 0, lb = strlen(b), need = la + lb + 2;
	char *bigger;

	if (need > set->scratch_alloc) {
		if (!(bigger = realloc(set->scratch, need * 2)))
			return NULL;
		set->scratch = bigger;
		set->scratch_alloc = need * 2;
	}
	if (la)
		memcpy(set->scratch, a, la);
	set->scratch[la] = '\x1f';
	memcpy(set->scratch + la + 1, b, lb + 1);
	return set->scratch;
}

static json_t *make_entry(json_t *schema, const char *scope)
{
	return json_pack("[O, s]", schema, scope ? scope : "");
}

static int index_put(amp_schema_set *set, const char *uri, json_t *schema,
		     const char *scope)
{
	json_t *entry = make_entry(schema, scope);

	if (!entry || json_object_set_new(set->index, uri, entry) < 0)
		return -1;
	return 0;
}

static int is_schema(json_t *v)
{
	return json_is_object(v) || json_is_boolean(v);
}

/* Where index_walk is: the document's URI and the JSON pointer in it. */
struct walk {
	const char *doc;
	struct buf ptr;
	amp_error *err;
};

/* Compiles the patterns of `node` (pattern.c keeps them for validation):
 * AMP_EIO naming the document and the pointer of one that does not
 * compile.  Those beside a "$ref" are never used (draft-07), so not
 * compiled. */
static int compile_patterns(amp_schema_set *set, json_t *node, struct walk *w)
{
	json_t *pattern = json_object_get(node, "pattern"), *props, *sub;
	const char *source, *why = NULL;
	size_t mark = w->ptr.len;
	int status = AMP_OK;

	if (json_object_get(node, "$ref") || set->defer_patterns)
		return AMP_OK;
	if (json_is_string(pattern) &&
	    schema_pattern_get(set->patterns, json_string_value(pattern),
			       json_string_length(pattern), &why) < 0)
		return amp_error_set(w->err, AMP_EIO, "", "%s#%s/pattern: invalid pattern %s: %s",
				     w->doc, w->ptr.p, json_string_value(pattern), why);
	props = json_object_get(node, "patternProperties");
	if (!json_is_object(props))
		return AMP_OK;
	json_object_foreach(props, source, sub) {
		if (schema_pattern_get(set->patterns, source, strlen(source), &why) >= 0)
			continue;
		schema_buf_puts(&w->ptr, "/patternProperties");
		schema_buf_put_token(&w->ptr, source);
		status = amp_error_set(w->err, AMP_EIO, "", "%s#%s: invalid pattern %s: %s",
				       w->doc, w->ptr.p ? w->ptr.p : "", source, why);
		break;
	}
	schema_buf_cut(&w->ptr, mark);
	return status;
}

/*
 * Indexes every "$id" below `node`, which sits in scope `scope`, and
 * compiles its patterns.  Only the keywords whose values are schemas are
 * entered: an "$id" inside "enum", "const" or an unknown keyword is data,
 * not an identifier.  A "$ref" makes its siblings (its "$id" too)
 * meaningless in draft-07.  AMP_EIO in w->err: out of memory, or a
 * pattern that does not compile.
 */
static int index_walk(amp_schema_set *set, json_t *node, const char *scope,
		      unsigned depth, struct walk *w)
{
	static const char *const single[] = {
		"items", "additionalItems", "contains", "additionalProperties",
		"propertyNames", "not", "if", "then", "else"
	};
	static const char *const arrays[] = { "items", "allOf", "anyOf",
					      "oneOf" };
	static const char *const maps[] = { "properties", "patternProperties",
					    "definitions", "dependencies" };
	json_t *id, *child, *v;
	char *abs = NULL, *own = NULL, num[32];
	const char *key, *frag;
	size_t i, j, mark;
	int status = AMP_EIO;

	if (!json_is_object(node) || depth > 4096)
		return 0;
	if (compile_patterns(set, node, w) < 0)
		return AMP_EIO;
	mark = w->ptr.len;
	id = json_object_get(node, "$id");
	if (json_is_string(id) && !json_object_get(node, "$ref")) {
		if (!(abs = schema_uri_resolve(scope, json_string_value(id))) ||
		    !(own = strdup(abs)))
			goto oom;
		schema_strip_fragment(own);
		if (json_string_value(id)[0] != '#' &&
		    index_put(set, own, node, scope) < 0)
			goto oom;
		frag = strchr(abs, '#');
		if (frag && frag[1] && frag[1] != '/' &&
		    index_put(set, abs, node, scope) < 0)
			goto oom;
		scope = own;
	}
	for (i = 0; i < sizeof(single) / sizeof(single[0]); i++) {
		if (!(child = json_object_get(node, single[i])))
			continue;
		schema_buf_put_token(&w->ptr, single[i]);
		if (index_walk(set, child, scope, depth + 1, w) < 0)
			goto cleanup;
		schema_buf_cut(&w->ptr, mark);
	}
	for (i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		child = json_object_get(node, arrays[i]);
		json_array_foreach(child, j, v) {
			snprintf(num, sizeof(num), "/%zu", j);
			schema_buf_put_token(&w->ptr, arrays[i]);
			schema_buf_puts(&w->ptr, num);
			if (index_walk(set, v, scope, depth + 1, w) < 0)
				goto cleanup;
			schema_buf_cut(&w->ptr, mark);
		}
	}
	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		child = json_object_get(node, maps[i]);
		if (!json_is_object(child))
			continue;
		json_object_foreach(child, key, v) {
			schema_buf_put_token(&w->ptr, maps[i]);
			schema_buf_put_token(&w->ptr, key);
			if (index_walk(set, v, scope, depth + 1, w) < 0)
				goto cleanup;
			schema_buf_cut(&w->ptr, mark);
		}
	}
	if (w->ptr.oom)
		goto oom;
	status = 0;
	goto cleanup;
oom:
	status = amp_error_set(w->err, AMP_EIO, "", "out of memory");
cleanup:
	free(abs);
	free(own);
	return status;
}

amp_schema_set *amp_schema_set_new(void)
{
	amp_schema_set *set = calloc(1, sizeof(*set));

	if (!set)
		return NULL;
	set->docs = json_array();
	set->index = json_object();
	set->resolved = json_object();
	set->targets = json_object();
	set->scopes = json_object();
	set->roots = json_object();
	set->patterns = schema_patterns_new();
	set->retired = json_array();
	if (!set->docs || !set->index || !set->resolved || !set->targets ||
	    !set->scopes || !set->roots || !set->patterns || !set->retired) {
		amp_schema_set_free(set);
		return NULL;
	}
	return set;
}

void amp_schema_set_free(amp_schema_set *set)
{
	if (!set)
		return;
	schema_patterns_free(set->patterns);
	json_decref(set->docs);
	json_decref(set->index);
	json_decref(set->resolved);
	json_decref(set->targets);
	json_decref(set->scopes);
	json_decref(set->roots);
	json_decref(set->lazy);
	json_decref(set->retired);
	free(set->scratch);
	free(set);
}

int amp_schema_set_add(amp_schema_set *set, json_t *schema, const char *uri,
		       amp_error *err)
{
	char anon[64], ptr[32], *doc = NULL;
	struct walk walk = { 0 };
	const char *scope;
	json_t *id = json_object_get(schema, "$id");
	int status = AMP_OK;

	if (!is_schema(schema))
		return amp_error_set(err, AMP_EIO, "",
				     "%s: a schema must be an object or a boolean",
				     uri ? uri : "schema");
	if (!uri || !*uri) {
		/* Anonymous documents still need a base for their "#..."
		 * references; this one cannot collide with a real URI. */
		snprintf(anon, sizeof(anon), "urn:amp-anonymous:%u",
			 ++set->anon);
		uri = anon;
	}
	scope = uri;
	if (json_is_string(id) && !json_object_get(schema, "$ref"))
		doc = schema_uri_resolve(uri, json_string_value(id));
	else
		doc = strdup(uri);
	if (!doc) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	schema_strip_fragment(doc);
	snprintf(ptr, sizeof(ptr), "%p", (void *)schema);
	/* A document added again (or a new one with an old URI) replaces
	 * the old entries, so memoised lookups must go.  The old table is
	 * kept, not freed: a document loaded lazily during a validation
	 * (a "$ref" into common.schema.json) comes here while the caller
	 * still holds a scope string of that table. */
	if (json_object_size(set->targets)) {
		json_t *fresh = json_object();

		if (!fresh || json_array_append(set->retired, set->targets) < 0) {
			json_decref(fresh);
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
			goto cleanup;
		}
		json_decref(set->targets);
		set->targets = fresh;
	}
	if (json_array_append(set->docs, schema) < 0 ||
	    index_put(set, doc, schema, scope) < 0 ||
	    (strcmp(doc, scope) && index_put(set, scope, schema, scope) < 0) ||
	    json_object_set_new(set->roots, ptr, json_string(scope)) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	walk.doc = doc;
	walk.err = err;
	schema_buf_add(&walk.ptr, "", 0);
	status = index_walk(set, schema, scope, 0, &walk);
cleanup:
	free(walk.ptr.p);
	free(doc);
	return status;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads, parses and adds one file, named in the set by its file: URI
 * unless it has an "$id". */
int amp_schema_set_add_file(amp_schema_set *set, const char *path,
			    amp_error *err)
{
	char *data = NULL, *real = NULL, *uri = NULL;
	size_t len;
	json_t *schema = NULL;
	amp_error perr;
	int status;

	if ((status = amp_read_file(path, &data, &len, err)) < 0)
		goto cleanup;
	if (amp_json_parse(data, len, &schema, &perr) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "%s: %s", path,
				       perr.message);
		goto cleanup;
	}
	if (strcmp(path, "-") && (real = realpath(path, NULL))) {
		if (!(uri = malloc(strlen(real) + 8))) {
			status = amp_error_set(err, AMP_EIO, "",
					       "out of memory");
			goto cleanup;
		}
		sprintf(uri, "file://%s", real);
	}
	if ((status = amp_schema_set_add(set, schema, uri, err)) < 0)
		goto cleanup;
cleanup:
	json_decref(schema);
	free(data);
	free(real);
	free(uri);
	return status;
}

int amp_schema_set_add_dir(amp_schema_set *set, const char *dir,
			   amp_error *err)
{
	DIR *d = NULL;
	struct dirent *de;
	char **names = NULL, **bigger, *path = NULL;
	size_t n = 0, alloc = 0, i;
	int status = AMP_OK;

	if (!(d = opendir(dir))) {
		status = amp_error_set(err, AMP_EIO, "", "%s: cannot open "
				       "schema directory", dir);
		goto cleanup;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !has_suffix(de->d_name, ".json"))
			continue;
		if (n == alloc) {
			alloc = alloc ? alloc * 2 : 16;
			if (!(bigger = realloc(names, alloc * sizeof(*names)))) {
				status = amp_error_set(err, AMP_EIO, "",
						       "out of memory");
				goto cleanup;
			}
			names = bigger;
		}
		if (!(names[n] = strdup(de->d_name))) {
			status = amp_error_set(err, AMP_EIO, "",
					       "out of memory");
			goto cleanup;
		}
		n++;
	}
	/* Sorted, so that two files claiming one "$id" always resolve the
	 * same way. */
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; i < n; i++) {
		free(path);
		if (!(path = malloc(strlen(dir) + strlen(names[i]) + 2))) {
			status = amp_error_set(err, AMP_EIO, "",
					       "out of memory");
			goto cleanup;
		}
		sprintf(path, "%s/%s", dir, names[i]);
		if ((status = amp_schema_set_add_file(set, path, err)) < 0)
			goto cleanup;
	}
cleanup:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(path);
	if (d)
		closedir(d);
	return status;
}

int amp_schema_set_add_meta(amp_schema_set *set, amp_error *err)
{
	char path[4096];

	if (amp_data_path("json-schema/draft-07.schema.json", path,
			  sizeof(path)) < 0)
		return amp_error_set(err, AMP_EIO, "",
				     "cannot find the draft-07 meta-schema "
				     "(json-schema/draft-07.schema.json)");
	return amp_schema_set_add_file(set, path, err);
}

int amp_schema_set_load_amp(amp_schema_set **out, const char *dir,
			    amp_error *err)
{
	char found[4096];
	amp_schema_set *set = NULL;
	int status;

	if (!dir) {
		if (amp_schema_dir(found, sizeof(found)) < 0)
			return amp_error_set(err, AMP_EIO, "",
					     "cannot find the AMP schema "
					     "directory (set AMP_SCHEMA_DIR)");
		dir = found;
	}
	if (!(set = amp_schema_set_new()))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	set->defer_patterns = 1;
	/* schemas/<name> has the id AMP_SCHEMA_BASE<name> (test/15-crosscheck
	 * checks it), so each is read when first needed. */
	if ((status = amp_schema_set_add_lazy(set, AMP_SCHEMA_BASE, dir)) < 0) {
		amp_error_set(err, status, "", "out of memory");
		goto cleanup;
	}
	/* AMP's schemas do not need the meta-schema; it is there for any
	 * "$ref" to it, so its absence is not an error. */
	if (amp_data_path("json-schema/draft-07.schema.json", found, sizeof(found)) == 0 &&
	    (status = amp_schema_set_add_lazy(set, "http://json-schema.org/draft-07/schema",
					      found)) < 0) {
		amp_error_set(err, status, "", "out of memory");
		goto cleanup;
	}
	*out = set;
	set = NULL;
cleanup:
	amp_schema_set_free(set);
	return status;
}

/* --- lookups ----------------------------------------------------------- */

/* Walks a JSON pointer (already percent-decoded) from `entry`, entering
 * the "$id"s it passes so that the result carries the right scope. */
static json_t *pointer_walk(json_t *entry, const char *pointer)
{
	json_t *node = json_array_get(entry, 0), *id, *result = NULL;
	char *scope = NULL, *tok = NULL, *next, *w;
	const char *p = pointer;
	size_t len;

	if (!(scope = strdup(json_string_value(json_array_get(entry, 1)))))
		goto cleanup;
	while (*p == '/') {
		p++;
		len = strcspn(p, "/");
		free(tok);
		if (!(tok = strndup(p, len)))
			goto cleanup;
		p += len;
		for (w = tok, next = tok; *next; next++) {
			if (next[0] == '~' && next[1] == '0')
				*w++ = '~', next++;
			else if (next[0] == '~' && next[1] == '1')
				*w++ = '/', next++;
			else
				*w++ = *next;
		}
		*w = '\0';
		id = json_object_get(node, "$id");
		if (json_is_string(id) && !json_object_get(node, "$ref")) {
			char *inner = schema_uri_resolve(scope, json_string_value(id));

			if (!inner)
				goto cleanup;
			schema_strip_fragment(inner);
			free(scope);
			scope = inner;
		}
		if (json_is_object(node)) {
			node = json_object_get(node, tok);
		} else if (json_is_array(node)) {
			char *end;
			unsigned long long i;

			if (!*tok || (tok[0] == '0' && tok[1]) ||
			    strspn(tok, "0123456789") != strlen(tok))
				goto cleanup;
			i = strtoull(tok, &end, 10);
			node = json_array_get(node, (size_t)i);
		} else {
			node = NULL;
		}
		if (!node)
			goto cleanup;
	}
	if (*p == '\0')
		result = make_entry(node, scope);
cleanup:
	free(scope);
	free(tok);
	return result;
}

/* The [subschema, scope] entry of an absolute URI; borrowed from the set,
 * NULL when nothing answers to it. */
/*
 * A document registered with amp_schema_set_add_lazy is parsed the first
 * time a URI under its prefix is looked up: validating one AMP message needs
 * three of the schema files, and parsing all of them was a quarter of an
 * `amp send`.  Returns 0 when `uri` (without fragment) got loaded.
 */
static int load_lazy(amp_schema_set *set, const char *uri)
{
	const char *prefix, *name;
	json_t *where;
	char path[4096];
	size_t n;

	json_object_foreach(set->lazy, prefix, where) {
		n = strlen(prefix);
		if (strncmp(uri, prefix, n))
			continue;
		name = uri + n;
		if (!*name) {
			/* the prefix names one document */
			snprintf(path, sizeof(path), "%s", json_string_value(where));
		} else {
			/* a document of the directory: a plain file name only */
			if (strchr(name, '/') || name[0] == '.' ||
			    snprintf(path, sizeof(path), "%s/%s",
				     json_string_value(where), name) >= (int)sizeof(path))
				continue;
		}
		if (access(path, R_OK) == 0 &&
		    amp_schema_set_add_file(set, path, NULL) == 0)
			return json_object_get(set->index, uri) ? 0 : -1;
	}
	return -1;
}

int amp_schema_set_add_lazy(amp_schema_set *set, const char *uri_prefix,
			    const char *path)
{
	if (!set->lazy && !(set->lazy = json_object()))
		return AMP_EIO;
	return json_object_set_new(set->lazy, uri_prefix, json_string(path)) < 0 ?
	       AMP_EIO : AMP_OK;
}

json_t *schema_lookup_entry(amp_schema_set *set, const char *uri)
{
	json_t *entry, *doc;
	char *copy = NULL, *frag;

	if ((entry = json_object_get(set->targets, uri)))
		return entry;
	if (!(entry = json_object_get(set->index, uri))) {
		if (!(copy = strdup(uri)))
			return NULL;
		frag = strchr(copy, '#');
		if (frag)
			*frag++ = '\0';
		if (!(doc = json_object_get(set->index, copy)) && load_lazy(set, copy) == 0)
			doc = json_object_get(set->index, copy);
		if (doc && frag)
			schema_percent_decode(frag);
		if (!doc || (frag && *frag && *frag != '/'))
			entry = NULL;
		else if (!frag || !*frag)
			entry = json_incref(doc);
		else
			entry = pointer_walk(doc, frag);
		free(copy);
		if (!entry)
			return NULL;
		if (json_object_set_new(set->targets, uri, entry) < 0)
			return NULL;
	}
	return entry;
}

json_t *amp_schema_set_lookup(amp_schema_set *set, const char *uri)
{
	char *copy = NULL;
	json_t *entry;
	size_t n;

	/* "...schema#" names the document, like "...schema". */
	n = strlen(uri);
	if (n && uri[n - 1] == '#') {
		if (!(copy = strndup(uri, n - 1)))
			return NULL;
		uri = copy;
	}
	entry = schema_lookup_entry(set, uri);
	free(copy);
	return json_array_get(entry, 0);
}

/* scope + relative reference -> absolute URI, memoised in `table`; with
 * `strip`, without its fragment (the scope an "$id" opens).  The result
 * lives as long as the set; NULL when out of memory. */
const char *schema_resolve_cached(amp_schema_set *set, json_t *table,
				  const char *scope, const char *ref, int strip)
{
	const char *key = make_key(set, scope, ref);
	json_t *v;
	char *abs;

	if (!key)
		return NULL;
	if ((v = json_object_get(table, key)))
		return json_string_value(v);
	if (!(abs = schema_uri_resolve(scope, ref)))
		return NULL;
	if (strip)
		schema_strip_fragment(abs);
	v = json_string(abs);
	free(abs);
	if (!v || json_object_set_new(table, key, v) < 0)
		return NULL;
	return json_string_value(v);
}

