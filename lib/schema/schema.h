/*
 * schema.h - a JSON Schema draft-07 validator over jansson.
 *
 * A schema set holds every schema a validation may reach through "$ref",
 * indexed by absolute URI ("$id" of the root, and of every subschema that
 * declares one).  AMP's own schemas live in schemas/ and have ids under
 * AMP_SCHEMA_BASE; "$ref" between them is resolved inside the set, never
 * over a network.
 */
#ifndef AMP_SCHEMA_H
#define AMP_SCHEMA_H

#include <jansson.h>

#include "base/error.h"

#define AMP_SCHEMA_BASE "https://amp.invalid/schemas/1.0/"
/* The schema of a whole AMP/1.0 message, and of an ACK record. */
#define AMP_SCHEMA_MESSAGE AMP_SCHEMA_BASE "message.schema.json"
#define AMP_SCHEMA_ACK     AMP_SCHEMA_BASE "ack.schema.json"
/* The draft-07 meta-schema, shipped as json-schema/draft-07.schema.json. */
#define AMP_SCHEMA_DRAFT07 "http://json-schema.org/draft-07/schema#"

/* Limits that turn a runaway recursion into an error: "$ref"s followed
 * within one another, and schema plus value nesting in all. */
#define AMP_SCHEMA_REF_DEPTH_MAX 200
#define AMP_SCHEMA_DEPTH_MAX     5000

/* PCRE2's limits on matching one string against one "pattern": steps of
 * backtracking (pcre2_set_match_limit), and the memory of its backtracking
 * frames in KiB (pcre2_set_heap_limit).  Past either, the string is
 * invalid (an error at its path): a schema's catastrophic pattern such as
 * ^(a+)+$ costs tens of milliseconds, not hours. */
#define AMP_SCHEMA_MATCH_LIMIT      1000000
#define AMP_SCHEMA_MATCH_LIMIT_TEXT "1,000,000"
#define AMP_SCHEMA_MATCH_HEAP_KIB   65536

typedef struct amp_schema_set amp_schema_set;

/* A new, empty set; NULL when out of memory.  Free with amp_schema_set_free. */
amp_schema_set *amp_schema_set_new(void);
void amp_schema_set_free(amp_schema_set *set);

/* Adds a schema document.  Its URI is its "$id" when it has one, else
 * `uri` (which may be NULL for an anonymous schema).  Every nested "$id" is
 * indexed too, and every "pattern" and "patternProperties" compiled: one
 * that does not compile is AMP_EIO, naming the document and the JSON
 * pointer of the pattern.  The set takes its own reference to `schema`. */
int amp_schema_set_add(amp_schema_set *set, json_t *schema, const char *uri,
		       amp_error *err);

/* Adds every *.json file of `dir` (non-recursive).  A file that is not JSON
 * is an AMP_EIO error naming the file. */
int amp_schema_set_add_dir(amp_schema_set *set, const char *dir,
			   amp_error *err);

/* Reads and adds one schema file ("-" = stdin).  Its URI is its "$id",
 * else "file://<real path>", so sibling files added the same way resolve
 * relative "$ref"s between them.  Unreadable or not JSON: AMP_EIO. */
int amp_schema_set_add_file(amp_schema_set *set, const char *path,
			    amp_error *err);

/* Adds the bundled draft-07 meta-schema (found with amp_data_path()), so
 * that "$ref": "http://json-schema.org/draft-07/schema#" resolves. */
int amp_schema_set_add_meta(amp_schema_set *set, amp_error *err);

/* Registers documents to be read on first use: a URI equal to
 * `uri_prefix` is the file `path`; a URI `uri_prefix` + NAME (a plain file
 * name) is the file `path`/NAME, when `path` is a directory.  The document
 * must carry that URI as its "$id". */
int amp_schema_set_add_lazy(amp_schema_set *set, const char *uri_prefix,
			    const char *path);

/* The schema document or subschema registered under `uri` (fragment
 * allowed: "...#/definitions/x"); borrowed, NULL when unknown. */
json_t *amp_schema_set_lookup(amp_schema_set *set, const char *uri);

/*
 * Validates `instance` against `schema`, which must have been added to the
 * set (or be a subschema of one; `base_uri` is then the URI its relative
 * "$ref"s resolve against, NULL meaning the schema's own "$id").
 *
 * Returns AMP_OK when valid, AMP_ESCHEMA when not (every failure appended
 * to `errors`, each with the JSON pointer of the failing value and a
 * one-line reason; a string PCRE2 gave up matching, past
 * AMP_SCHEMA_MATCH_LIMIT, is one), or AMP_EIO when the schema itself is
 * unusable (a "$ref" that resolves nowhere, a pattern that does not
 * compile), with the reason in `errors`.
 *
 * The set memoises "$ref" resolutions and compiled patterns as it goes, so
 * one set must not be used by two threads at once.
 */
int amp_schema_validate(amp_schema_set *set, json_t *schema,
			const char *base_uri, json_t *instance,
			amp_errlist *errors);

/* Convenience: loads the AMP schemas from amp_schema_dir() (or `dir` when
 * not NULL), plus the draft-07 meta-schema when it is found, into a new set
 * that the caller frees. */
int amp_schema_set_load_amp(amp_schema_set **out, const char *dir,
			    amp_error *err);

#endif
