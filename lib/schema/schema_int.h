/*
 * schema_int.h - what the files of lib/schema/ share; not for outside the
 * folder (schema.h is its public header).
 *
 *   buf.c       a growable string
 *   uri.c       RFC 3986 resolution, fragments
 *   pattern.c   "pattern" regular expressions, by PCRE2
 *   formats.c   the "format"s amp checks
 *   set.c       a schema set: documents, "$id" index, lookups (uri, pattern)
 *   hints.c     what an error says more: a misspelt property, a condition
 *   keywords.c  validation: the draft-07 keywords (set, pattern, formats)
 *
 * Each file calls only those listed before it (share/check-layers holds
 * the folder to no loop).
 */
#ifndef AMP_SCHEMA_INT_H
#define AMP_SCHEMA_INT_H

#include <stddef.h>

#include "schema.h"

/* --- buf.c --- */

/* A growable string; `oom` sticks once an allocation failed. */
struct buf {
	char *p;
	size_t len, alloc;
	int oom;
};

void schema_buf_add(struct buf *b, const char *s, size_t n);
void schema_buf_puts(struct buf *b, const char *s);
void schema_buf_putc(struct buf *b, char c);
/* Appends "/" and `key` as a JSON pointer token (RFC 6901). */
void schema_buf_put_token(struct buf *b, const char *key);
/* Cuts the string back to its first `len` bytes. */
void schema_buf_cut(struct buf *b, size_t len);
/* Hands the string over to the caller (NULL when out of memory). */
char *schema_buf_detach(struct buf *b);

/* --- uri.c --- */

/* base + reference -> absolute URI (RFC 3986 5.2), malloc'd; NULL when
 * out of memory. */
char *schema_uri_resolve(const char *base, const char *ref);
/* Cuts the fragment off an absolute URI in place. */
void schema_strip_fragment(char *uri);
/* Percent-decodes s in place. */
void schema_percent_decode(char *s);

/* --- pattern.c --- */

/* The compiled patterns of a set: NULL when out of memory. */
struct schema_patterns *schema_patterns_new(void);
void schema_patterns_free(struct schema_patterns *p);
/* The id of the compiled form of `source` (`len` bytes), compiled on first
 * use and kept; -1 with the reason in *why (borrowed) when it does not
 * compile. */
int schema_pattern_get(struct schema_patterns *p, const char *source,
		       size_t len, const char **why);
/* 1 when some part of s[0..len) matches pattern `id`, 0 when none does;
 * -1 with the reason in *why (borrowed) when PCRE2 gave up: the match
 * limit (AMP_SCHEMA_MATCH_LIMIT), or s is not UTF-8. */
int schema_pattern_match(struct schema_patterns *p, int id, const char *s,
			 size_t len, const char **why);

/* --- formats.c --- */

/* 0 when string `v` is a valid `format` (or amp does not check that
 * format), else 1 with the reason in why[0..n). */
int schema_format_check(const char *format, json_t *v, char *why, size_t n);

/* --- set.c --- */

struct amp_schema_set {
	json_t *docs;		/* every document added, owned */
	json_t *index;
	json_t *resolved;
	json_t *targets;
	json_t *scopes;		/* scope "\x1f" $id -> scope inside it */
	json_t *roots;		/* "%p" of a document -> its scope */
	struct schema_patterns *patterns;
	int defer_patterns;	/* amp's own set: compile a pattern when first
				 * used, not when its document is added */
	unsigned anon;
	char *scratch;		/* key building for the tables */
	size_t scratch_alloc;
	json_t *lazy;		/* URI prefix -> file or directory, read on first use */
	json_t *retired;	/* targets tables replaced while lookups held
				 * strings of theirs (a document loaded lazily
				 * in the middle of a validation) */
};

/* The [subschema, scope] entry of an absolute URI; borrowed from the set,
 * NULL when nothing answers to it. */
json_t *schema_lookup_entry(amp_schema_set *set, const char *uri);
/* scope + relative reference -> absolute URI, memoised in `table`; with
 * `strip`, without its fragment (the scope an "$id" opens).  The result
 * lives as long as the set; NULL when out of memory. */
const char *schema_resolve_cached(amp_schema_set *set, json_t *table,
				  const char *scope, const char *ref, int strip);

/* --- hints.c --- */

/* The property of `props` (a "properties" object) that the unexpected
 * `key` of `instance` probably meant: one the instance lacks, near it
 * (base/similar.h) or sharing a long prefix with it; NULL when none is
 * clearly the one.  Borrowed from props. */
const char *schema_hint_property(json_t *props, json_t *instance, const char *key);

/* The "if" schema `cond` in words, into buf: `decision is "rejected"`,
 * `completion_status is one of "partial", "failed"`; "" when it holds
 * more than consts and enums of properties, or does not fit. */
void schema_hint_condition(json_t *cond, char *buf, size_t bufsz);

#endif
