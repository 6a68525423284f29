/*
 * schema.c - JSON Schema draft-07 validation over jansson.
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
 * to be read; validate() applies that "$id" when it enters the subschema,
 * so an entry found by "$id" and one found by a JSON pointer behave alike.
 * The strings of these tables double as interned base URIs: validation
 * passes `const char *` pointers into them down the recursion.
 *
 * Regular expressions are POSIX EREs (see translate_pattern() for what is
 * translated from ECMA-262 and share/doc/validator.md for what is not),
 * compiled once per pattern string and kept in the set.
 */
#include "schema.h"

#include <dirent.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "ere.h"
#include "base/refname.h"
#include "base/util.h"

struct pattern {
	regex_t re;       /* compiled in the UTF-8 locale (ok), maybe lazily */
	regex_t re_ascii; /* the same, compiled in the C locale (ok_ascii) */
	int ok, ok_ascii;
	char *ere;        /* what re compiles, until it is compiled */
	char *error;
	amp_ere *nfa;     /* for ASCII strings, when the ERE is plain (ere.h) */
};

struct amp_schema_set {
	json_t *docs;		/* every document added, owned */
	json_t *index;
	json_t *resolved;
	json_t *targets;
	json_t *scopes;		/* scope "\x1f" $id -> scope inside it */
	json_t *roots;		/* "%p" of a document -> its scope */
	json_t *pattern_ids;	/* pattern source -> index in patterns */
	struct pattern *patterns;
	size_t npatterns, apatterns;
	unsigned anon;
	char *scratch;		/* key building for the tables */
	size_t scratch_alloc;
	json_t *lazy;		/* URI prefix -> file or directory, read on first use */
	json_t *retired;	/* targets tables replaced while lookups held
				 * strings of theirs (a document loaded lazily
				 * in the middle of a validation) */
};

/* A growable string; `oom` sticks once an allocation failed. */
struct buf {
	char *p;
	size_t len, alloc;
	int oom;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
	char *bigger;
	size_t alloc;

	if (b->oom)
		return;
	/* Sizes near SIZE_MAX would wrap below; no message is that long. */
	if (n > SIZE_MAX / 4 || b->len > SIZE_MAX / 4) {
		b->oom = 1;
		return;
	}
	if (b->len + n + 1 > b->alloc) {
		alloc = b->alloc ? b->alloc : 64;
		while (alloc < b->len + n + 1)
			alloc *= 2;
		if (!(bigger = realloc(b->p, alloc))) {
			b->oom = 1;
			return;
		}
		b->p = bigger;
		b->alloc = alloc;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void buf_puts(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

static void buf_putc(struct buf *b, char c)
{
	buf_add(b, &c, 1);
}

/* Hands the string over to the caller (NULL when out of memory). */
static char *buf_detach(struct buf *b)
{
	char *p;

	if (!b->p && !b->oom)
		buf_add(b, "", 0);
	if (b->oom) {
		free(b->p);
		return NULL;
	}
	p = b->p;
	b->p = NULL;
	b->len = b->alloc = 0;
	return p;
}

/* --- URIs (RFC 3986) --------------------------------------------------- */

struct uri {
	const char *scheme, *auth, *path, *query, *frag;
	size_t scheme_len, auth_len, path_len, query_len, frag_len;
	int has_scheme, has_auth, has_query, has_frag;
};

static void uri_split(const char *s, struct uri *u)
{
	const char *p = s;

	memset(u, 0, sizeof(*u));
	if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) {
		p++;
		while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		       (*p >= '0' && *p <= '9') || *p == '+' || *p == '-' ||
		       *p == '.')
			p++;
		if (*p == ':') {
			u->has_scheme = 1;
			u->scheme = s;
			u->scheme_len = (size_t)(p - s);
			s = p + 1;
		}
	}
	if (s[0] == '/' && s[1] == '/') {
		u->has_auth = 1;
		u->auth = s + 2;
		u->auth_len = strcspn(u->auth, "/?#");
		s = u->auth + u->auth_len;
	}
	u->path = s;
	u->path_len = strcspn(s, "?#");
	s += u->path_len;
	if (*s == '?') {
		u->has_query = 1;
		u->query = s + 1;
		u->query_len = strcspn(u->query, "#");
		s = u->query + u->query_len;
	}
	if (*s == '#') {
		u->has_frag = 1;
		u->frag = s + 1;
		u->frag_len = strlen(u->frag);
	}
}

/* RFC 3986 §5.2.4, appending the result to out. */
static void remove_dots(struct buf *out, const char *in, size_t n)
{
	struct buf b = { 0 };
	const char *end = in + n;
	size_t seg;

	buf_add(&b, "", 0);
	while (in < end) {
		size_t left = (size_t)(end - in);

		if (left >= 3 && !strncmp(in, "../", 3)) {
			in += 3;
		} else if (left >= 2 && !strncmp(in, "./", 2)) {
			in += 2;
		} else if ((left >= 3 && !strncmp(in, "/./", 3)) ||
			   (left == 2 && !strncmp(in, "/.", 2))) {
			in += 2;
			if (left == 2) {
				buf_putc(&b, '/');
				break;
			}
		} else if ((left >= 4 && !strncmp(in, "/../", 4)) ||
			   (left == 3 && !strncmp(in, "/..", 3))) {
			in += 3;
			while (b.len > 0 && b.p[b.len - 1] != '/')
				b.len--;
			if (b.len > 0)
				b.len--;
			if (b.p)
				b.p[b.len] = '\0';
			if (left == 3) {
				buf_putc(&b, '/');
				break;
			}
		} else if ((left == 1 && in[0] == '.') ||
			   (left == 2 && !strncmp(in, "..", 2))) {
			break;
		} else {
			seg = 1;
			while (seg < left && in[seg] != '/')
				seg++;
			if (in[0] != '/') {
				/* the first segment has no leading slash */
				seg = 0;
				while (seg < left && in[seg] != '/')
					seg++;
			}
			buf_add(&b, in, seg);
			in += seg;
		}
	}
	if (b.oom)
		out->oom = 1;
	else
		buf_add(out, b.p, b.len);
	free(b.p);
}

/* The absolute form of `ref` against `base` (RFC 3986 §5.2.2); the caller
 * frees it.  A NULL or empty base leaves `ref` as it is. */
static char *uri_resolve(const char *base, const char *ref)
{
	struct uri b, r;
	struct buf out = { 0 };
	const char *slash;

	if (!base || !*base)
		return strdup(ref);
	uri_split(base, &b);
	uri_split(ref, &r);
	if (r.has_scheme) {
		buf_add(&out, r.scheme, r.scheme_len);
		buf_putc(&out, ':');
	} else if (b.has_scheme) {
		buf_add(&out, b.scheme, b.scheme_len);
		buf_putc(&out, ':');
	}
	if (r.has_scheme || r.has_auth) {
		if (r.has_auth) {
			buf_puts(&out, "//");
			buf_add(&out, r.auth, r.auth_len);
		}
		remove_dots(&out, r.path, r.path_len);
		if (r.has_query) {
			buf_putc(&out, '?');
			buf_add(&out, r.query, r.query_len);
		}
	} else {
		if (b.has_auth) {
			buf_puts(&out, "//");
			buf_add(&out, b.auth, b.auth_len);
		}
		if (r.path_len == 0) {
			buf_add(&out, b.path, b.path_len);
			if (r.has_query || b.has_query)
				buf_putc(&out, '?');
			if (r.has_query)
				buf_add(&out, r.query, r.query_len);
			else if (b.has_query)
				buf_add(&out, b.query, b.query_len);
		} else {
			if (r.path[0] == '/') {
				remove_dots(&out, r.path, r.path_len);
			} else {
				struct buf merged = { 0 };

				if (b.has_auth && b.path_len == 0) {
					buf_putc(&merged, '/');
				} else {
					slash = NULL;
					for (size_t i = 0; i < b.path_len; i++)
						if (b.path[i] == '/')
							slash = b.path + i;
					if (slash)
						buf_add(&merged, b.path,
							(size_t)(slash - b.path) + 1);
				}
				buf_add(&merged, r.path, r.path_len);
				if (merged.oom)
					out.oom = 1;
				else
					remove_dots(&out, merged.p, merged.len);
				free(merged.p);
			}
			if (r.has_query) {
				buf_putc(&out, '?');
				buf_add(&out, r.query, r.query_len);
			}
		}
	}
	if (r.has_frag) {
		buf_putc(&out, '#');
		buf_add(&out, r.frag, r.frag_len);
	}
	return buf_detach(&out);
}

/* Cuts the fragment off an absolute URI in place. */
static void strip_fragment(char *uri)
{
	char *hash = strchr(uri, '#');

	if (hash)
		*hash = '\0';
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes s in place (a fragment is a URI component, so
 * "#/percent%25field" names the member "percent%field"). */
static void percent_decode(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '%' && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
			*w++ = (char)(hexval(s[1]) * 16 + hexval(s[2]));
			s += 2;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

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

/*
 * Indexes every "$id" below `node`, which sits in scope `scope`.  Only the
 * keywords whose values are schemas are entered: an "$id" inside "enum",
 * "const" or an unknown keyword is data, not an identifier.  A "$ref"
 * makes its siblings (its "$id" too) meaningless in draft-07.
 */
static int index_walk(amp_schema_set *set, json_t *node, const char *scope,
		      unsigned depth)
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
	char *abs = NULL, *own = NULL;
	const char *key, *frag;
	size_t i, j;
	int status = -1;

	if (!json_is_object(node) || depth > 4096)
		return 0;
	id = json_object_get(node, "$id");
	if (json_is_string(id) && !json_object_get(node, "$ref")) {
		if (!(abs = uri_resolve(scope, json_string_value(id))) ||
		    !(own = strdup(abs)))
			goto cleanup;
		strip_fragment(own);
		if (json_string_value(id)[0] != '#' &&
		    index_put(set, own, node, scope) < 0)
			goto cleanup;
		frag = strchr(abs, '#');
		if (frag && frag[1] && frag[1] != '/' &&
		    index_put(set, abs, node, scope) < 0)
			goto cleanup;
		scope = own;
	}
	for (i = 0; i < sizeof(single) / sizeof(single[0]); i++)
		if ((child = json_object_get(node, single[i])) &&
		    index_walk(set, child, scope, depth + 1) < 0)
			goto cleanup;
	for (i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		child = json_object_get(node, arrays[i]);
		json_array_foreach(child, j, v)
			if (index_walk(set, v, scope, depth + 1) < 0)
				goto cleanup;
	}
	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		child = json_object_get(node, maps[i]);
		if (!json_is_object(child))
			continue;
		json_object_foreach(child, key, v)
			if (index_walk(set, v, scope, depth + 1) < 0)
				goto cleanup;
	}
	status = 0;
cleanup:
	free(abs);
	free(own);
	return status;
}

/* If no UTF-8 locale is active, regcomp() would see bytes, not
 * characters ("^.$" would not match "é"); draft-07 patterns work on code
 * points, so switch LC_CTYPE to C.UTF-8.  This is process-wide, which is
 * why it only ever moves away from a non-UTF-8 locale. */
static void ensure_utf8_ctype(void)
{
	const char *codeset = nl_langinfo(CODESET);

	if (codeset && (!strcmp(codeset, "UTF-8") || !strcmp(codeset, "utf8")))
		return;
	if (!setlocale(LC_CTYPE, "C.UTF-8"))
		setlocale(LC_CTYPE, "C.utf8");
}

amp_schema_set *amp_schema_set_new(void)
{
	amp_schema_set *set = calloc(1, sizeof(*set));

	if (!set)
		return NULL;
	ensure_utf8_ctype();
	set->docs = json_array();
	set->index = json_object();
	set->resolved = json_object();
	set->targets = json_object();
	set->scopes = json_object();
	set->roots = json_object();
	set->pattern_ids = json_object();
	set->retired = json_array();
	if (!set->docs || !set->index || !set->resolved || !set->targets ||
	    !set->scopes || !set->roots || !set->pattern_ids || !set->retired) {
		amp_schema_set_free(set);
		return NULL;
	}
	return set;
}

void amp_schema_set_free(amp_schema_set *set)
{
	size_t i;

	if (!set)
		return;
	for (i = 0; i < set->npatterns; i++) {
		if (set->patterns[i].ok)
			if (!set->patterns[i].ere)
				regfree(&set->patterns[i].re);
		if (set->patterns[i].ok_ascii)
			regfree(&set->patterns[i].re_ascii);
		free(set->patterns[i].ere);
		free(set->patterns[i].error);
		amp_ere_free(set->patterns[i].nfa);
	}
	free(set->patterns);
	json_decref(set->docs);
	json_decref(set->index);
	json_decref(set->resolved);
	json_decref(set->targets);
	json_decref(set->scopes);
	json_decref(set->roots);
	json_decref(set->pattern_ids);
	json_decref(set->lazy);
	json_decref(set->retired);
	free(set->scratch);
	free(set);
}

int amp_schema_set_add(amp_schema_set *set, json_t *schema, const char *uri,
		       amp_error *err)
{
	char anon[64], ptr[32], *doc = NULL;
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
		doc = uri_resolve(uri, json_string_value(id));
	else
		doc = strdup(uri);
	if (!doc) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	strip_fragment(doc);
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
	    json_object_set_new(set->roots, ptr, json_string(scope)) < 0 ||
	    index_walk(set, schema, scope, 0) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
cleanup:
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
			char *inner = uri_resolve(scope, json_string_value(id));

			if (!inner)
				goto cleanup;
			strip_fragment(inner);
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

static json_t *lookup_entry(amp_schema_set *set, const char *uri)
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
			percent_decode(frag);
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
	entry = lookup_entry(set, uri);
	free(copy);
	return json_array_get(entry, 0);
}

/* scope + relative reference -> absolute URI, memoised in `table`; with
 * `strip`, without its fragment (the scope an "$id" opens).  The result
 * lives as long as the set; NULL when out of memory. */
static const char *resolve_cached(amp_schema_set *set, json_t *table,
				  const char *scope, const char *ref, int strip)
{
	const char *key = make_key(set, scope, ref);
	json_t *v;
	char *abs;

	if (!key)
		return NULL;
	if ((v = json_object_get(table, key)))
		return json_string_value(v);
	if (!(abs = uri_resolve(scope, ref)))
		return NULL;
	if (strip)
		strip_fragment(abs);
	v = json_string(abs);
	free(abs);
	if (!v || json_object_set_new(table, key, v) < 0)
		return NULL;
	return json_string_value(v);
}

/* --- patterns ---------------------------------------------------------- */

static void put_utf8(struct buf *b, unsigned long cp)
{
	char s[4];

	if (cp < 0x80) {
		s[0] = (char)cp;
		buf_add(b, s, 1);
	} else if (cp < 0x800) {
		s[0] = (char)(0xC0 | (cp >> 6));
		s[1] = (char)(0x80 | (cp & 0x3F));
		buf_add(b, s, 2);
	} else if (cp < 0x10000) {
		s[0] = (char)(0xE0 | (cp >> 12));
		s[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		s[2] = (char)(0x80 | (cp & 0x3F));
		buf_add(b, s, 3);
	} else {
		s[0] = (char)(0xF0 | (cp >> 18));
		s[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		s[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		s[3] = (char)(0x80 | (cp & 0x3F));
		buf_add(b, s, 4);
	}
}

/* Reads the hex digits of \uXXXX or \xHH after *p; -1 when malformed. */
static long hex_escape(const char **p, int digits)
{
	long v = 0;
	int i, h;

	for (i = 0; i < digits; i++) {
		if ((h = hexval((unsigned char)(*p)[i])) < 0)
			return -1;
		v = v * 16 + h;
	}
	*p += digits;
	return v;
}

/* A single-character escape shared by both contexts; -1 if not one. */
static long char_escape(const char **p)
{
	char c = **p;

	switch (c) {
	case 'n': (*p)++; return '\n';
	case 't': (*p)++; return '\t';
	case 'r': (*p)++; return '\r';
	case 'f': (*p)++; return '\f';
	case 'v': (*p)++; return '\v';
	case '0': (*p)++; return 0;
	case 'u': (*p)++; return hex_escape(p, 4);
	case 'x': (*p)++; return hex_escape(p, 2);
	}
	return -2;
}

/* Translates "[...]" starting at *p (just after '['); *p is left after
 * the closing ']'.  POSIX brackets take backslashes literally and give
 * ']' '-' '^' meaning by position, so escaped ones are moved where they
 * are literal. */
static int translate_bracket(const char **p, struct buf *out, char *why,
			     size_t whysz)
{
	struct buf body = { 0 };
	int neg = 0, rbr = 0, dash = 0, caret = 0, status = -1;
	const char *s = *p;
	long cp;

	if (*s == '^') {
		neg = 1;
		s++;
	}
	if (*s == ']') {
		snprintf(why, whysz, "empty character class");
		goto cleanup;
	}
	while (*s && *s != ']') {
		if (*s == '\\') {
			s++;
			switch (*s) {
			case 'd': buf_puts(&body, "0-9"); s++; continue;
			case 'w': buf_puts(&body, "A-Za-z0-9_"); s++; continue;
			case 's': buf_puts(&body, "[:space:]"); s++; continue;
			case 'D': case 'W': case 'S':
				snprintf(why, whysz, "\\%c inside [...] is not "
					 "supported", *s);
				goto cleanup;
			case ']': rbr = 1; s++; continue;
			case '-': dash = 1; s++; continue;
			case '^': caret = 1; s++; continue;
			case 'b': buf_putc(&body, '\b'); s++; continue;
			case '\0':
				snprintf(why, whysz, "trailing backslash");
				goto cleanup;
			}
			cp = char_escape(&s);
			if (cp == -1) {
				snprintf(why, whysz, "malformed escape");
				goto cleanup;
			}
			if (cp == -2)
				cp = (unsigned char)*s++;
			if (cp == ']')
				rbr = 1;
			else if (cp == '-')
				dash = 1;
			else if (cp == '^')
				caret = 1;
			else
				put_utf8(&body, (unsigned long)cp);
		} else if (*s == '-' && (body.len == 0 || s[1] == ']')) {
			dash = 1;
			s++;
		} else {
			buf_putc(&body, *s++);
		}
	}
	if (*s != ']') {
		snprintf(why, whysz, "unterminated [");
		goto cleanup;
	}
	*p = s + 1;
	if (!neg && caret && body.len == 0 && !rbr && !dash) {
		buf_puts(out, "\\^");
		status = 0;
		goto cleanup;
	}
	buf_putc(out, '[');
	if (neg)
		buf_putc(out, '^');
	if (rbr)
		buf_putc(out, ']');
	if (body.len)
		buf_add(out, body.p, body.len);
	if (caret)
		buf_putc(out, '^');
	if (dash)
		buf_putc(out, '-');
	buf_putc(out, ']');
	status = 0;
cleanup:
	free(body.p);
	return status;
}

/*
 * Translates an ECMA-262 pattern to a POSIX ERE; -1 with a reason in
 * `why` when it uses something ERE cannot express.
 *
 * Translated: \d \D \w \W \s \S (ASCII classes, as ECMA-262 defines them,
 * except that \s is [[:space:]]), \n \t \r \f \v \0 \xHH \uXXXX, escaped
 * punctuation, escapes inside [...], "(?:" groups, literal "{" that does not
 * start a quantifier, and lazy quantifiers (made greedy: only whether a
 * string matches is asked, never where).  Refused: look-around "(?=",
 * "(?!", "(?<", back-references and other escapes like \p{...}.
 */
static int translate_pattern(const char *src, struct buf *out, char *why,
			     size_t whysz)
{
	const char *s = src, *q;
	long cp;

	while (*s) {
		char c = *s;

		if (c == '\\') {
			s++;
			switch (*s) {
			case 'd': buf_puts(out, "[0-9]"); s++; continue;
			case 'D': buf_puts(out, "[^0-9]"); s++; continue;
			case 'w': buf_puts(out, "[A-Za-z0-9_]"); s++; continue;
			case 'W': buf_puts(out, "[^A-Za-z0-9_]"); s++; continue;
			case 's': buf_puts(out, "[[:space:]]"); s++; continue;
			case 'S': buf_puts(out, "[^[:space:]]"); s++; continue;
			case 'b': buf_puts(out, "\\b"); s++; continue;
			case 'B': buf_puts(out, "\\B"); s++; continue;
			case '\0':
				snprintf(why, whysz, "trailing backslash");
				return -1;
			}
			if (*s >= '1' && *s <= '9') {
				snprintf(why, whysz, "back-references are not "
					 "supported");
				return -1;
			}
			cp = char_escape(&s);
			if (cp == -1) {
				snprintf(why, whysz, "malformed escape");
				return -1;
			}
			if (cp == -2) {
				if ((*s >= 'a' && *s <= 'z') ||
				    (*s >= 'A' && *s <= 'Z')) {
					snprintf(why, whysz, "escape \\%c is "
						 "not supported", *s);
					return -1;
				}
				cp = (unsigned char)*s++;
			}
			if (cp == 0) {
				snprintf(why, whysz, "NUL in a pattern is not "
					 "supported");
				return -1;
			}
			if (cp < 0x80 && strchr(".[]{}()\\*+?^$|", (int)cp))
				buf_putc(out, '\\');
			put_utf8(out, (unsigned long)cp);
			continue;
		}
		if (c == '[') {
			s++;
			if (translate_bracket(&s, out, why, whysz) < 0)
				return -1;
			continue;
		}
		if (c == '(' && s[1] == '?') {
			if (s[2] != ':') {
				snprintf(why, whysz, "group \"(?%c\" (look-around "
					 "or named group) is not supported",
					 s[2] ? s[2] : ' ');
				return -1;
			}
			buf_putc(out, '(');
			s += 3;
			continue;
		}
		if (c == '{') {
			/* A quantifier only when it reads {n}, {n,} or {n,m}. */
			q = s + 1;
			if (*q >= '0' && *q <= '9') {
				while (*q >= '0' && *q <= '9')
					q++;
				if (*q == ',')
					for (q++; *q >= '0' && *q <= '9'; q++)
						;
			}
			if (*q == '}' && q > s + 1 && s[1] != ',') {
				buf_add(out, s, (size_t)(q - s) + 1);
				s = q + 1;
				if (*s == '?')
					s++;
			} else {
				buf_puts(out, "\\{");
				s++;
			}
			continue;
		}
		buf_putc(out, c);
		s++;
		if ((c == '*' || c == '+' || c == '?') && *s == '?')
			s++;
	}
	return 0;
}

/*
 * glibc's regex engine in a UTF-8 locale works on wide characters: 170,000
 * instructions to match a msg_id, a tenth of an `amp send` with compiling.
 * A pattern and a string that are both ASCII match alike in the C locale,
 * where it works on bytes, several times faster: such a pattern is also
 * compiled there, and used for ASCII strings.
 */
static locale_t c_locale(void)
{
	static locale_t c;

	if (!c)
		c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	return c;
}

static int is_ascii(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] >= 0x80)
			return 0;
	return 1;
}

/* The compiled form of `source`, compiled on first use; NULL with the
 * reason in *why when it does not compile. */
static struct pattern *pattern_get(amp_schema_set *set, const char *source,
				   const char **why)
{
	json_t *id = json_object_get(set->pattern_ids, source);
	struct pattern *pat, *bigger;
	struct buf ere = { 0 };
	char reason[256];
	int rc;

	if (!id) {
		if (set->npatterns == set->apatterns) {
			size_t alloc = set->apatterns ? set->apatterns * 2 : 16;

			if (!(bigger = realloc(set->patterns,
					       alloc * sizeof(*bigger)))) {
				*why = "out of memory";
				return NULL;
			}
			set->patterns = bigger;
			set->apatterns = alloc;
		}
		pat = &set->patterns[set->npatterns];
		memset(pat, 0, sizeof(*pat));
		reason[0] = '\0';
		if (translate_pattern(source, &ere, reason, sizeof(reason)) < 0) {
			pat->error = strdup(reason);
		} else if (ere.oom || (!ere.p && !(ere.p = strdup("")))) {
			pat->error = strdup("out of memory");
		} else {
			/* never NULL, even for the empty pattern: regex_match
			 * compiles it when a string past ASCII comes */
			const char *text = ere.p;
			int ascii = is_ascii(text, strlen(text));

			/* An ASCII pattern is compiled for ASCII strings only: a
			 * plain one as an NFA (ere.h), another in the C locale;
			 * its UTF-8 form waits for a string that is not ASCII
			 * (regex_match). */
			if (ascii && !(pat->nfa = amp_ere_compile(text)) && c_locale()) {
				locale_t was = uselocale(c_locale());

				pat->ok_ascii = regcomp(&pat->re_ascii, text,
							REG_EXTENDED | REG_NOSUB) == 0;
				uselocale(was);
			}
			if (pat->nfa || pat->ok_ascii) {
				pat->ok = 1;
				pat->ere = ere.p;
				ere.p = NULL;
			} else if ((rc = regcomp(&pat->re, text, REG_EXTENDED | REG_NOSUB))) {
				regerror(rc, &pat->re, reason, sizeof(reason));
				pat->error = strdup(reason);
			} else {
				pat->ok = 1;
			}
		}
		free(ere.p);
		if (json_object_set_new(set->pattern_ids, source,
					json_integer((json_int_t)set->npatterns)) < 0) {
			if (pat->ok && !pat->ere)
				regfree(&pat->re);
			if (pat->ok_ascii)
				regfree(&pat->re_ascii);
			free(pat->ere);
			free(pat->error);
			amp_ere_free(pat->nfa);
			*why = "out of memory";
			return NULL;
		}
		set->npatterns++;
		id = json_object_get(set->pattern_ids, source);
	}
	pat = &set->patterns[json_integer_value(id)];
	if (!pat->ok) {
		*why = pat->error ? pat->error : "out of memory";
		return NULL;
	}
	return pat;
}

/* 1 when s matches; 0 when not, or when the UTF-8 form of an ASCII
 * pattern, compiled now, does not compile (it did in the C locale: only
 * out of memory can do that). */
static int regex_match(struct pattern *pat, const char *s, size_t len)
{
	int ascii, rc;
	regex_t *re;
	locale_t was;

	if (pat->nfa && (rc = amp_ere_match(pat->nfa, s, len)) >= 0)
		return rc;
	ascii = pat->ok_ascii && is_ascii(s, len);
	re = ascii ? &pat->re_ascii : &pat->re;

	if (!ascii && pat->ere) {
		if (regcomp(&pat->re, pat->ere, REG_EXTENDED | REG_NOSUB))
			return 0; /* ere kept: tried again next time */
		free(pat->ere);
		pat->ere = NULL;
	}
	was = ascii ? uselocale(c_locale()) : (locale_t)0;
#ifdef REG_STARTEND
	regmatch_t m[1];

	/* REG_STARTEND lets a string with "\u0000" be matched whole. */
	m[0].rm_so = 0;
	m[0].rm_eo = (regoff_t)len;
	rc = regexec(re, s, 1, m, REG_STARTEND);
#else
	rc = regexec(re, s, 0, NULL, 0);
#endif
	if (ascii)
		uselocale(was);
	return rc == 0;
}

/* --- values ------------------------------------------------------------ */

/* floor() and fabs() without libm, which the Makefile does not link:
 * doubles of magnitude 2^52 and more are integers already. */
static double dfloor(double d)
{
	double t;

	if (!(d > -4503599627370496.0 && d < 4503599627370496.0))
		return d;
	t = (double)(long long)d;
	return t > d ? t - 1 : t;
}

static double dabs(double d)
{
	return d < 0 ? -d : d;
}

static int is_integral(json_t *v)
{
	double d;

	if (json_is_integer(v))
		return 1;
	if (!json_is_real(v))
		return 0;
	d = json_real_value(v);
	return isfinite(d) && d == dfloor(d);
}

/* An int64 compared with a double, exactly. */
static int cmp_int_real(json_int_t i, double r)
{
	double fl;
	json_int_t fi;

	if (r >= 9223372036854775808.0)
		return -1;
	if (r < -9223372036854775808.0)
		return 1;
	fl = dfloor(r);
	fi = (json_int_t)fl;
	if (i < fi)
		return -1;
	if (i > fi)
		return 1;
	return r > fl ? -1 : 0;
}

static int num_cmp(json_t *a, json_t *b)
{
	double x, y;

	if (json_is_integer(a) && json_is_integer(b))
		return (json_integer_value(a) > json_integer_value(b)) -
		       (json_integer_value(a) < json_integer_value(b));
	if (json_is_integer(a))
		return cmp_int_real(json_integer_value(a), json_real_value(b));
	if (json_is_integer(b))
		return -cmp_int_real(json_integer_value(b), json_real_value(a));
	x = json_real_value(a);
	y = json_real_value(b);
	return (x > y) - (x < y);
}

/* Deep equality as JSON Schema means it: 1 and 1.0 are the same number. */
static int json_same(json_t *a, json_t *b)
{
	const char *key;
	json_t *v;
	size_t i;

	if (json_is_number(a) && json_is_number(b))
		return num_cmp(a, b) == 0;
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       !memcmp(json_string_value(a), json_string_value(b),
			       json_string_length(a));
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return 0;
		json_array_foreach(a, i, v)
			if (!json_same(v, json_array_get(b, i)))
				return 0;
		return 1;
	case JSON_OBJECT:
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach(a, key, v) {
			json_t *w = json_object_get(b, key);

			if (!w || !json_same(v, w))
				return 0;
		}
		return 1;
	default:
		return 1;
	}
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	while (n--) {
		h ^= (unsigned char)*s++;
		h *= 1099511628211ULL;
	}
	return h;
}

/* A hash consistent with json_same(), for uniqueItems. */
static uint64_t json_hash(json_t *v)
{
	const char *key;
	json_t *w;
	uint64_t h;
	size_t i;
	double d;

	switch (json_typeof(v)) {
	case JSON_INTEGER:
		return mix((uint64_t)json_integer_value(v) ^ 0x1111);
	case JSON_REAL:
		d = json_real_value(v);
		if (d == dfloor(d) && d >= -9223372036854775808.0 &&
		    d < 9223372036854775808.0)
			return mix((uint64_t)(json_int_t)d ^ 0x1111);
		return mix((uint64_t)d ^ 0x2222);
	case JSON_STRING:
		return hash_bytes(json_string_value(v), json_string_length(v));
	case JSON_ARRAY:
		h = 0x3333;
		json_array_foreach(v, i, w)
			h = mix(h * 31 + json_hash(w));
		return h;
	case JSON_OBJECT:
		/* Members in any order: a commutative sum. */
		h = 0x4444;
		json_object_foreach(v, key, w)
			h += mix(hash_bytes(key, strlen(key)) * 7 + json_hash(w));
		return h;
	case JSON_TRUE:
		return 0x5555;
	case JSON_FALSE:
		return 0x6666;
	default:
		return 0x7777;
	}
}

/* Prints a number as short as round-trips. */
static const char *num_text(json_t *v, char *buf, size_t n)
{
	if (json_is_integer(v)) {
		snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else {
		snprintf(buf, n, "%.15g", json_real_value(v));
		if (strtod(buf, NULL) != json_real_value(v))
			snprintf(buf, n, "%.17g", json_real_value(v));
	}
	return buf;
}

static const char *type_name(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE: case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

static int type_is(const char *name, json_t *v)
{
	if (!strcmp(name, "integer"))
		return is_integral(v);
	if (!strcmp(name, "number"))
		return json_is_number(v);
	if (!strcmp(name, "boolean"))
		return json_is_boolean(v);
	return !strcmp(name, type_name(v));
}

static size_t utf8_length(const char *s, size_t n)
{
	size_t count = 0;

	while (n--)
		if (((unsigned char)*s++ & 0xC0) != 0x80)
			count++;
	return count;
}

/* Appends a compact dump of v to b, at most `room` bytes. */
static void dump_into(struct buf *b, json_t *v, size_t room)
{
	char *text = amp_json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

	if (!text)
		return;
	if (strlen(text) > room) {
		buf_add(b, text, room);
		buf_puts(b, "...");
	} else {
		buf_puts(b, text);
	}
	free(text);
}

/* --- validation -------------------------------------------------------- */

struct ctx {
	amp_schema_set *set;
	amp_errlist *errs;
	struct buf ptr;		/* JSON pointer of the current value */
	unsigned depth, ref_depth;
	int fatal;
	amp_error first_fatal;	/* kept when anyOf & co. roll back */
	int silent;		/* only valid or not: no reasons kept */
};

static int validate(struct ctx *c, json_t *s, const char *scope, json_t *v);

static int fail(struct ctx *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records an error at the current pointer; returns 1 ("invalid"). */
static int fail(struct ctx *c, int status, const char *fmt, ...)
{
	char msg[AMP_MSG_MAX];
	va_list ap;

	if (c->silent && status != AMP_EIO)
		return 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (status == AMP_EIO && !c->fatal) {
		c->fatal = 1;
		amp_error_set(&c->first_fatal, status, c->ptr.p, "%s", msg);
	}
	if (amp_errlist_add(c->errs, status, c->ptr.p, "%s", msg) != status &&
	    !c->fatal) {
		c->fatal = 1;
		amp_error_set(&c->first_fatal, AMP_EIO, "", "out of memory");
	}
	return 1;
}

static size_t push_key(struct ctx *c, const char *key)
{
	size_t mark = c->ptr.len;

	buf_putc(&c->ptr, '/');
	for (; *key; key++) {
		if (*key == '~')
			buf_puts(&c->ptr, "~0");
		else if (*key == '/')
			buf_puts(&c->ptr, "~1");
		else
			buf_putc(&c->ptr, *key);
	}
	return mark;
}

static size_t push_index(struct ctx *c, size_t i)
{
	size_t mark = c->ptr.len;
	char num[32];

	snprintf(num, sizeof(num), "/%zu", i);
	buf_puts(&c->ptr, num);
	return mark;
}

static void pop(struct ctx *c, size_t mark)
{
	if (c->ptr.p && mark <= c->ptr.len) {
		c->ptr.len = mark;
		c->ptr.p[mark] = '\0';
	}
}

/* Validates without leaving errors behind: for "not", "if", "contains"
 * and propertyNames, whose subschema failing is not itself the error. */
static int quiet(struct ctx *c, json_t *s, const char *scope, json_t *v)
{
	size_t mark = c->errs->count;
	int bad = validate(c, s, scope, v);

	amp_errlist_truncate(c->errs, mark);
	return bad;
}

static int check_type(struct ctx *c, json_t *type, json_t *v)
{
	struct buf want = { 0 };
	json_t *t;
	size_t i;
	int bad;

	if (json_is_string(type)) {
		if (type_is(json_string_value(type), v))
			return 0;
		return fail(c, AMP_ESCHEMA, "expected %s, got %s",
			    json_string_value(type), type_name(v));
	}
	json_array_foreach(type, i, t)
		if (json_is_string(t) && type_is(json_string_value(t), v))
			return 0;
	if (!json_is_array(type))
		return 0;
	json_array_foreach(type, i, t) {
		if (!json_is_string(t))
			continue;
		if (want.len)
			buf_puts(&want, i + 1 == json_array_size(type) ?
				 " or " : ", ");
		buf_puts(&want, json_string_value(t));
	}
	bad = fail(c, AMP_ESCHEMA, "expected %s, got %s",
		   want.p ? want.p : "nothing", type_name(v));
	free(want.p);
	return bad;
}

/* The "not" failure in the words a reader wants: the forbidden value when
 * the schema is a plain enum or const, with the schema's description when
 * it has one (the branch: "must not be \"Main\": a protected branch ..."),
 * else the value that matched. */
static int fail_not(struct ctx *c, json_t *schema, json_t *v)
{
	struct buf value = { 0 };
	int bad;

	dump_into(&value, v, 200);
	if (json_is_object(schema) && json_object_size(schema) == 1 &&
	    (json_is_array(json_object_get(schema, "enum")) ||
	     json_object_get(schema, "const")))
		bad = fail(c, AMP_ESCHEMA, "must not be %s",
			   value.p ? value.p : "this value");
	else if (json_is_string(json_object_get(schema, "description")))
		bad = fail(c, AMP_ESCHEMA, "must not be %s: %s",
			   value.p ? value.p : "this value",
			   json_string_value(json_object_get(schema, "description")));
	else
		bad = fail(c, AMP_ESCHEMA, "%s matches the \"not\" schema, "
			   "so it is not allowed", value.p ? value.p : "the value");
	free(value.p);
	return bad;
}

static int check_enum(struct ctx *c, json_t *values, json_t *v)
{
	struct buf list = { 0 };
	json_t *e;
	size_t i;
	int bad;

	if (!json_is_array(values))
		return 0;
	json_array_foreach(values, i, e)
		if (json_same(e, v))
			return 0;
	json_array_foreach(values, i, e) {
		if (list.len > 400) {
			buf_puts(&list, ", ...");
			break;
		}
		if (i)
			buf_puts(&list, ", ");
		dump_into(&list, e, 200);
	}
	bad = fail(c, AMP_ESCHEMA, "must be one of %s", list.p ? list.p : "");
	free(list.p);
	return bad;
}

static int check_const(struct ctx *c, json_t *value, json_t *v)
{
	struct buf text = { 0 };
	int bad;

	if (json_same(value, v))
		return 0;
	dump_into(&text, value, 400);
	bad = fail(c, AMP_ESCHEMA, "must be equal to %s",
		   text.p ? text.p : "the constant");
	free(text.p);
	return bad;
}

static int check_multiple(struct ctx *c, json_t *m, json_t *v)
{
	char text[64];
	double x, y, q;

	if (!json_is_number(m) || json_number_value(m) <= 0)
		return 0;
	if (json_is_integer(v) && json_is_integer(m)) {
		if (json_integer_value(v) % json_integer_value(m) == 0)
			return 0;
	} else {
		x = json_number_value(v);
		y = json_number_value(m);
		q = x / y;
		/* 0.0075 / 0.0001 is 74.99999999999999 in binary floating
		 * point: accept a quotient within a relative 1e-9 of an
		 * integer.  Overflow (1e308 / 0.5) is a failure. */
		if (isfinite(q) && dabs(q - dfloor(q + 0.5)) <=
				   1e-9 * (dabs(q) > 1.0 ? dabs(q) : 1.0))
			return 0;
	}
	return fail(c, AMP_ESCHEMA, "must be a multiple of %s",
		    num_text(m, text, sizeof(text)));
}

static int check_number(struct ctx *c, const char *key, json_t *limit,
			json_t *v)
{
	char text[64];
	int cmp;

	if (!json_is_number(limit))
		return 0;
	cmp = num_cmp(v, limit);
	num_text(limit, text, sizeof(text));
	if (!strcmp(key, "minimum") && cmp < 0)
		return fail(c, AMP_ESCHEMA, "must be at least %s", text);
	if (!strcmp(key, "maximum") && cmp > 0)
		return fail(c, AMP_ESCHEMA, "must be at most %s", text);
	if (!strcmp(key, "exclusiveMinimum") && cmp <= 0)
		return fail(c, AMP_ESCHEMA, "must be greater than %s", text);
	if (!strcmp(key, "exclusiveMaximum") && cmp >= 0)
		return fail(c, AMP_ESCHEMA, "must be less than %s", text);
	return 0;
}

/* A count limit from the schema; -1 when the keyword is malformed. */
static long long limit_of(json_t *n)
{
	if (json_is_integer(n))
		return json_integer_value(n);
	if (is_integral(n) && json_real_value(n) < 9e18)
		return (long long)json_real_value(n);
	return -1;
}

static int check_pattern(struct ctx *c, json_t *pattern, json_t *v)
{
	const char *why = NULL;
	struct pattern *re;

	if (!json_is_string(pattern))
		return 0;
	if (!(re = pattern_get(c->set, json_string_value(pattern), &why)))
		return fail(c, AMP_EIO, "invalid pattern %s: %s",
			    json_string_value(pattern), why);
	if (regex_match(re, json_string_value(v), json_string_length(v)))
		return 0;
	return fail(c, AMP_ESCHEMA, "string does not match pattern %s",
		    json_string_value(pattern));
}

static int check_format(struct ctx *c, json_t *format, json_t *v)
{
	int64_t ms;

	if (!json_is_string(format) || !json_is_string(v))
		return 0;
	/* amp's own format: validators that do not know it ignore it, as
	 * draft-07 says of unknown formats. */
	if (!strcmp(json_string_value(format), "git-branch-name")) {
		const char *problem = amp_refname_branch_problem(json_string_value(v));

		if (!problem && json_string_length(v) == strlen(json_string_value(v)))
			return 0;
		return fail(c, AMP_ESCHEMA, "is not a valid git branch name: it %s (git check-ref-format --branch)",
			    problem ? problem : "contains a NUL character");
	}
	/* Other formats are annotations only, as draft-07 allows. */
	if (strcmp(json_string_value(format), "date-time"))
		return 0;
	if (json_string_length(v) == strlen(json_string_value(v)) &&
	    amp_time_parse(json_string_value(v), &ms) == 0)
		return 0;
	return fail(c, AMP_ESCHEMA, "must be an RFC 3339 date-time, got \"%s\"",
		    json_string_value(v));
}

static int check_items(struct ctx *c, json_t *s, json_t *items,
		       const char *scope, json_t *v)
{
	json_t *extra, *item;
	size_t i, n = json_array_size(v), mark;
	int bad = 0;

	if (!json_is_array(items)) {
		if (json_is_true(items))
			return 0;
		json_array_foreach(v, i, item) {
			mark = push_index(c, i);
			bad |= validate(c, items, scope, item);
			pop(c, mark);
		}
		return bad;
	}
	for (i = 0; i < n && i < json_array_size(items); i++) {
		mark = push_index(c, i);
		bad |= validate(c, json_array_get(items, i), scope,
				json_array_get(v, i));
		pop(c, mark);
	}
	extra = json_object_get(s, "additionalItems");
	if (!extra || json_is_true(extra) || n <= json_array_size(items))
		return bad;
	if (json_is_false(extra))
		return fail(c, AMP_ESCHEMA, "must have at most %zu items "
			    "(additionalItems is false)",
			    json_array_size(items));
	for (i = json_array_size(items); i < n; i++) {
		mark = push_index(c, i);
		bad |= validate(c, extra, scope, json_array_get(v, i));
		pop(c, mark);
	}
	return bad;
}

struct hashed {
	uint64_t hash;
	size_t index;
};

static int cmp_hashed(const void *a, const void *b)
{
	const struct hashed *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/* Sorting by hash keeps a long array O(n log n) instead of all pairs. */
static int check_unique(struct ctx *c, json_t *v)
{
	struct hashed *h;
	size_t n = json_array_size(v), i, j, a = 0, b = 0;
	int dup = 0;

	if (n < 2)
		return 0;
	if (!(h = malloc(n * sizeof(*h))))
		return fail(c, AMP_EIO, "out of memory");
	for (i = 0; i < n; i++) {
		h[i].hash = json_hash(json_array_get(v, i));
		h[i].index = i;
	}
	qsort(h, n, sizeof(*h), cmp_hashed);
	for (i = 0; i < n && !dup; i++)
		for (j = i + 1; j < n && h[j].hash == h[i].hash && !dup; j++)
			if (json_same(json_array_get(v, h[i].index),
				      json_array_get(v, h[j].index))) {
				dup = 1;
				a = h[i].index;
				b = h[j].index;
			}
	free(h);
	if (!dup)
		return 0;
	return fail(c, AMP_ESCHEMA, "array items must be unique (items %zu and "
		    "%zu are equal)", a < b ? a : b, a < b ? b : a);
}

static int check_contains(struct ctx *c, json_t *sub, const char *scope,
			  json_t *v)
{
	json_t *item;
	size_t i;

	json_array_foreach(v, i, item)
		if (!quiet(c, sub, scope, item))
			return 0;
	return fail(c, AMP_ESCHEMA, "must contain at least one item matching "
		    "the \"contains\" schema");
}

static int matches_any_pattern(struct ctx *c, json_t *patterns,
			       const char *key)
{
	const char *source, *why;
	json_t *sub;
	struct pattern *re;

	json_object_foreach(patterns, source, sub) {
		if ((re = pattern_get(c->set, source, &why)) &&
		    regex_match(re, key, strlen(key)))
			return 1;
	}
	return 0;
}

static int check_properties(struct ctx *c, json_t *props, const char *scope,
			    json_t *v)
{
	const char *key;
	json_t *sub, *member;
	size_t mark;
	int bad = 0;

	if (!json_is_object(props))
		return 0;
	/* Walk the smaller of the two; the other side is a hash lookup. */
	if (json_object_size(props) <= json_object_size(v)) {
		json_object_foreach(props, key, sub) {
			if (!(member = json_object_get(v, key)))
				continue;
			mark = push_key(c, key);
			bad |= validate(c, sub, scope, member);
			pop(c, mark);
		}
	} else {
		json_object_foreach(v, key, member) {
			if (!(sub = json_object_get(props, key)))
				continue;
			mark = push_key(c, key);
			bad |= validate(c, sub, scope, member);
			pop(c, mark);
		}
	}
	return bad;
}

static int check_pattern_props(struct ctx *c, json_t *patterns,
			       const char *scope, json_t *v)
{
	const char *source, *key, *why = NULL;
	json_t *sub, *member;
	struct pattern *re;
	size_t mark;
	int bad = 0;

	if (!json_is_object(patterns))
		return 0;
	json_object_foreach(patterns, source, sub) {
		if (!(re = pattern_get(c->set, source, &why))) {
			bad |= fail(c, AMP_EIO, "invalid pattern %s: %s",
				    source, why);
			continue;
		}
		json_object_foreach(v, key, member) {
			if (!regex_match(re, key, strlen(key)))
				continue;
			mark = push_key(c, key);
			bad |= validate(c, sub, scope, member);
			pop(c, mark);
		}
	}
	return bad;
}

static int check_additional(struct ctx *c, json_t *s, json_t *extra,
			    const char *scope, json_t *v)
{
	json_t *props = json_object_get(s, "properties");
	json_t *patterns = json_object_get(s, "patternProperties");
	const char *key;
	json_t *member;
	size_t mark;
	int bad = 0;

	if (json_is_true(extra))
		return 0;
	json_object_foreach(v, key, member) {
		if (json_is_object(props) && json_object_get(props, key))
			continue;
		if (json_is_object(patterns) &&
		    matches_any_pattern(c, patterns, key))
			continue;
		if (json_is_false(extra)) {
			bad |= fail(c, AMP_ESCHEMA, "unexpected property \"%s\"",
				    key);
			continue;
		}
		mark = push_key(c, key);
		bad |= validate(c, extra, scope, member);
		pop(c, mark);
	}
	return bad;
}

static int check_required(struct ctx *c, json_t *required, json_t *v)
{
	json_t *name;
	size_t i;
	int bad = 0;

	json_array_foreach(required, i, name)
		if (json_is_string(name) &&
		    !json_object_get(v, json_string_value(name)))
			bad |= fail(c, AMP_ESCHEMA,
				    "missing required property \"%s\"",
				    json_string_value(name));
	return bad;
}

static int check_dependencies(struct ctx *c, json_t *deps, const char *scope,
			      json_t *v)
{
	const char *key;
	json_t *dep, *name;
	size_t i;
	int bad = 0;

	if (!json_is_object(deps))
		return 0;
	json_object_foreach(deps, key, dep) {
		if (!json_object_get(v, key))
			continue;
		if (json_is_array(dep)) {
			json_array_foreach(dep, i, name)
				if (json_is_string(name) &&
				    !json_object_get(v, json_string_value(name)))
					bad |= fail(c, AMP_ESCHEMA,
						    "property \"%s\" requires "
						    "property \"%s\"", key,
						    json_string_value(name));
		} else {
			bad |= validate(c, dep, scope, v);
		}
	}
	return bad;
}

static int name_error(struct ctx *c, const char *key, size_t mark)
{
	char reason[AMP_MSG_MAX];

	snprintf(reason, sizeof(reason), "%s", c->errs->count > mark ?
		 c->errs->items[mark].message : "invalid");
	amp_errlist_truncate(c->errs, mark);
	return fail(c, AMP_ESCHEMA, "invalid property name \"%s\": %s", key,
		    reason);
}

static int check_property_names(struct ctx *c, json_t *sub,
				const char *scope, json_t *v)
{
	const char *key;
	json_t *member, *name;
	size_t mark;
	int bad = 0, failed;

	if (json_is_true(sub))
		return 0;
	json_object_foreach(v, key, member) {
		if (!(name = json_string(key)))
			return fail(c, AMP_EIO, "out of memory");
		mark = c->errs->count;
		failed = validate(c, sub, scope, name);
		json_decref(name);
		if (failed)
			bad |= name_error(c, key, mark);
	}
	return bad;
}

/* True when every error from `from` on is about a value below the current
 * one: the branch agreed with the value here and failed deeper down, which
 * makes its errors the useful ones to show for a failed anyOf/oneOf. */
static int errors_are_deeper(struct ctx *c, size_t from)
{
	size_t i, here = c->ptr.len;

	if (from == c->errs->count)
		return 0;
	for (i = from; i < c->errs->count; i++)
		if (strlen(c->errs->items[i].path) <= here)
			return 0;
	return 1;
}

/* anyOf (one = 0) and oneOf (one = 1).  A passing keyword leaves no
 * errors; a failing one leaves one summary and, when some branch failed
 * only below this value, that branch's errors. */
static int check_some_of(struct ctx *c, json_t *branches, int one,
			 const char *scope, json_t *v)
{
	amp_errlist best = { 0 };
	size_t mark = c->errs->count, i, n = json_array_size(branches);
	size_t matched = 0, first = 0, second = 0, before;
	int have_best = 0;

	if (!json_is_array(branches) || !n)
		return 0;
	for (i = 0; i < n; i++) {
		before = c->errs->count;
		if (c->silent) {
			/* No reasons to choose from: count the matches. */
			if (!validate(c, json_array_get(branches, i), scope, v) &&
			    (++matched > 1 || !one))
				break;
			continue;
		}
		if (!validate(c, json_array_get(branches, i), scope, v)) {
			if (matched++ == 0)
				first = i;
			else
				second = i;
			if (!one || matched > 1)
				break;
			continue;
		}
		if (!matched && errors_are_deeper(c, before) &&
		    (!have_best || c->errs->count - before < best.count)) {
			amp_errlist_truncate(&best, 0);
			best.count = 0;
			for (size_t k = before; k < c->errs->count; k++)
				amp_errlist_add(&best, c->errs->items[k].status,
						c->errs->items[k].path, "%s",
						c->errs->items[k].message);
			have_best = 1;
		}
		amp_errlist_truncate(c->errs, before);
	}
	amp_errlist_truncate(c->errs, mark);
	if (matched == 1 || (!one && matched)) {
		amp_errlist_free(&best);
		return 0;
	}
	if (c->silent)
		return 1;
	if (matched > 1)
		fail(c, AMP_ESCHEMA, "must match exactly one schema in "
		     "\"oneOf\", but matches schemas %zu and %zu", first,
		     second);
	else if (one)
		fail(c, AMP_ESCHEMA, "must match exactly one schema in "
		     "\"oneOf\", but matches none");
	else
		fail(c, AMP_ESCHEMA, "must match at least one schema in "
		     "\"anyOf\"");
	if (!matched && have_best)
		amp_errlist_extend(c->errs, &best);
	amp_errlist_free(&best);
	return 1;
}

static int check_ref(struct ctx *c, const char *ref, const char *scope,
		     json_t *v)
{
	const char *abs;
	json_t *entry;
	int bad;

	if (c->ref_depth >= AMP_SCHEMA_REF_DEPTH_MAX)
		return fail(c, AMP_EIO, "$ref nesting deeper than %d at \"%s\" "
			    "(recursive schema?)", AMP_SCHEMA_REF_DEPTH_MAX,
			    ref);
	if (!(abs = resolve_cached(c->set, c->set->resolved, scope, ref, 0)))
		return fail(c, AMP_EIO, "out of memory");
	if (!(entry = lookup_entry(c->set, abs)))
		return fail(c, AMP_EIO, "cannot resolve $ref \"%s\"", abs);
	c->ref_depth++;
	bad = validate(c, json_array_get(entry, 0),
		       json_string_value(json_array_get(entry, 1)), v);
	c->ref_depth--;
	return bad;
}

/* The keywords that apply to every type of value, and the type-specific
 * ones, dispatched by walking the schema's members once. */
static int check_keyword(struct ctx *c, json_t *s, const char *key,
			 json_t *val, const char *scope, json_t *v)
{
	json_t *sub;
	size_t i;
	long long n;
	int bad = 0;

	switch (key[0]) {
	case 'a':
		if (!strcmp(key, "allOf")) {
			json_array_foreach(val, i, sub)
				bad |= validate(c, sub, scope, v);
			return bad;
		}
		if (!strcmp(key, "anyOf"))
			return check_some_of(c, val, 0, scope, v);
		if (!strcmp(key, "additionalProperties") && json_is_object(v))
			return check_additional(c, s, val, scope, v);
		return 0;
	case 'c':
		if (!strcmp(key, "const"))
			return check_const(c, val, v);
		if (!strcmp(key, "contains") && json_is_array(v))
			return check_contains(c, val, scope, v);
		return 0;
	case 'd':
		if (!strcmp(key, "dependencies") && json_is_object(v))
			return check_dependencies(c, val, scope, v);
		return 0;
	case 'e':
		if (!strcmp(key, "enum"))
			return check_enum(c, val, v);
		if (!strcmp(key, "exclusiveMinimum") ||
		    !strcmp(key, "exclusiveMaximum"))
			return json_is_number(v) ?
			       check_number(c, key, val, v) : 0;
		return 0;
	case 'f':
		if (!strcmp(key, "format"))
			return check_format(c, val, v);
		return 0;
	case 'i':
		if (!strcmp(key, "items") && json_is_array(v))
			return check_items(c, s, val, scope, v);
		if (!strcmp(key, "if")) {
			sub = json_object_get(s, quiet(c, val, scope, v) ?
					      "else" : "then");
			return sub ? validate(c, sub, scope, v) : 0;
		}
		return 0;
	case 'm':
		if (!strcmp(key, "minimum") || !strcmp(key, "maximum"))
			return json_is_number(v) ?
			       check_number(c, key, val, v) : 0;
		if (!strcmp(key, "multipleOf"))
			return json_is_number(v) ? check_multiple(c, val, v) : 0;
		if ((n = limit_of(val)) < 0)
			return 0;
		if (json_is_string(v)) {
			size_t len = utf8_length(json_string_value(v),
						 json_string_length(v));

			if (!strcmp(key, "minLength") && len < (size_t)n)
				return fail(c, AMP_ESCHEMA, "must be at least "
					    "%lld characters long", n);
			if (!strcmp(key, "maxLength") && len > (size_t)n)
				return fail(c, AMP_ESCHEMA, "must be at most "
					    "%lld characters long", n);
		} else if (json_is_array(v)) {
			if (!strcmp(key, "minItems") &&
			    json_array_size(v) < (size_t)n)
				return fail(c, AMP_ESCHEMA, "must have at least "
					    "%lld items", n);
			if (!strcmp(key, "maxItems") &&
			    json_array_size(v) > (size_t)n)
				return fail(c, AMP_ESCHEMA, "must have at most "
					    "%lld items", n);
		} else if (json_is_object(v)) {
			if (!strcmp(key, "minProperties") &&
			    json_object_size(v) < (size_t)n)
				return fail(c, AMP_ESCHEMA, "must have at least "
					    "%lld properties", n);
			if (!strcmp(key, "maxProperties") &&
			    json_object_size(v) > (size_t)n)
				return fail(c, AMP_ESCHEMA, "must have at most "
					    "%lld properties", n);
		}
		return 0;
	case 'n':
		if (!strcmp(key, "not") && !quiet(c, val, scope, v))
			return fail_not(c, val, v);
		return 0;
	case 'o':
		if (!strcmp(key, "oneOf"))
			return check_some_of(c, val, 1, scope, v);
		return 0;
	case 'p':
		if (!json_is_object(v)) {
			if (!strcmp(key, "pattern") && json_is_string(v))
				return check_pattern(c, val, v);
			return 0;
		}
		if (!strcmp(key, "properties"))
			return check_properties(c, val, scope, v);
		if (!strcmp(key, "patternProperties"))
			return check_pattern_props(c, val, scope, v);
		if (!strcmp(key, "propertyNames"))
			return check_property_names(c, val, scope, v);
		return 0;
	case 'r':
		if (!strcmp(key, "required") && json_is_object(v))
			return check_required(c, val, v);
		return 0;
	case 't':
		if (!strcmp(key, "type"))
			return check_type(c, val, v);
		return 0;
	case 'u':
		if (!strcmp(key, "uniqueItems") && json_is_true(val) &&
		    json_is_array(v))
			return check_unique(c, v);
		return 0;
	}
	return 0;
}

/* Returns 0 when v is valid against s, 1 when not (errors recorded). */
static int validate(struct ctx *c, json_t *s, const char *scope, json_t *v)
{
	const char *key;
	json_t *ref, *id, *val;
	int bad = 0;

	if (json_is_true(s))
		return 0;
	if (json_is_false(s))
		return fail(c, AMP_ESCHEMA, "no value is allowed here "
			    "(the schema is false)");
	if (!json_is_object(s))
		return 0;
	if (c->depth >= AMP_SCHEMA_DEPTH_MAX)
		return fail(c, AMP_EIO, "schema and value nested deeper than "
			    "%d levels", AMP_SCHEMA_DEPTH_MAX);
	c->depth++;
	/* Draft-07 §8.3: all other properties in a "$ref" object are
	 * ignored, its "$id" included. */
	ref = json_object_get(s, "$ref");
	if (json_is_string(ref)) {
		bad = check_ref(c, json_string_value(ref), scope, v);
		goto out;
	}
	id = json_object_get(s, "$id");
	if (json_is_string(id) && json_string_value(id)[0] != '#') {
		if (!(scope = resolve_cached(c->set, c->set->scopes, scope,
					     json_string_value(id), 1))) {
			bad = fail(c, AMP_EIO, "out of memory");
			goto out;
		}
	}
	json_object_foreach(s, key, val)
		bad |= check_keyword(c, s, key, val, scope, v);
out:
	c->depth--;
	return bad;
}

int amp_schema_validate(amp_schema_set *set, json_t *schema,
			const char *base_uri, json_t *instance,
			amp_errlist *errors)
{
	struct ctx c;
	char ptr[32];
	json_t *root;
	amp_error err;
	size_t i, mark = errors->count;
	int bad, status;

	memset(&c, 0, sizeof(c));
	c.set = set;
	c.errs = errors;
	buf_add(&c.ptr, "", 0);
	if (!base_uri) {
		snprintf(ptr, sizeof(ptr), "%p", (void *)schema);
		if (!(root = json_object_get(set->roots, ptr))) {
			/* Not added yet: add it, so that its own "#..."
			 * references resolve. */
			if (amp_schema_set_add(set, schema, NULL, &err) < 0)
				return amp_errlist_add(errors, AMP_EIO, "",
						       "%s", err.message);
			root = json_object_get(set->roots, ptr);
		}
		base_uri = json_string_value(root);
	}
	if (c.ptr.oom)
		return amp_errlist_add(errors, AMP_EIO, "", "out of memory");
	/* Most instances are valid: a first pass only says whether, without
	 * formatting a reason for every branch of a oneOf that does not
	 * match; an invalid instance is walked again for its reasons. */
	c.silent = 1;
	bad = validate(&c, schema, base_uri, instance);
	if (bad && !c.fatal) {
		c.silent = 0;
		bad = validate(&c, schema, base_uri, instance);
	}
	free(c.ptr.p);
	status = bad ? AMP_ESCHEMA : AMP_OK;
	if (c.fatal) {
		status = AMP_EIO;
		/* A rolled-back branch may have held the only trace. */
		for (i = mark; i < errors->count; i++)
			if (errors->items[i].status == AMP_EIO)
				break;
		if (i == errors->count)
			amp_errlist_add(errors, AMP_EIO, c.first_fatal.path,
					"%s", c.first_fatal.message);
	}
	return status;
}
