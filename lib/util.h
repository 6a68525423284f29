/*
 * util.h - small helpers shared by commands and library: whole-file reads,
 * JSON parsing with located errors, and terminal output conventions.
 */
#ifndef AMP_UTIL_H
#define AMP_UTIL_H

#include <jansson.h>
#include <stdio.h>

#include "error.h"

/* Reads all of `path` ("-" = stdin) into a NUL-terminated buffer the caller
 * frees; *len excludes the terminator.  AMP_EIO on failure. */
int amp_read_file(const char *path, char **buf, size_t *len, amp_error *err);

/* Like amp_read_file, reading no more than max + 1 bytes: *len > max says
 * the input is larger than max, without reading it all into memory. */
int amp_read_file_max(const char *path, size_t max, char **buf, size_t *len,
		      amp_error *err);

/* Parses exactly one JSON value from buf[0..len).  On failure returns
 * AMP_ESCHEMA with a reason naming the line and column (invalid JSON,
 * invalid UTF-8, NUL byte, nesting deeper than jansson allows).  The caller
 * owns *out (json_decref). */
int amp_json_parse(const char *buf, size_t len, json_t **out, amp_error *err);

/* Prints "amp <cmd>: error: <path>: <reason>" to stderr, leaving out the
 * path when it is empty. */
void amp_print_error(const char *cmd, const amp_error *err);

/* True when `stream` should get colour: a TTY, NO_COLOR unset, TERM not
 * "dumb". */
int amp_use_color(FILE *stream);

/* Escapes one JSON pointer reference token (RFC 6901: "~" -> "~0",
 * "/" -> "~1") and appends "/token" to the pointer in buf (size bufsz),
 * truncating safely. */
void amp_pointer_append(char *buf, size_t bufsz, const char *token);

/* Directory holding the running executable (from /proc/self/exe), without a
 * trailing slash, in buf.  Returns 0 or -1. */
int amp_exe_dir(char *buf, size_t bufsz);

/* The schema directory: $AMP_SCHEMA_DIR, else <exe>/../schemas (build
 * tree), else <exe>/../share/amp/schemas (installed), else the compiled-in
 * AMP_DATADIR/schemas.  Writes it into buf; returns 0, or -1 when none exists. */
int amp_schema_dir(char *buf, size_t bufsz);

/* Finds a data file shipped with amp, `rel` being its path under the data
 * directory (e.g. "json-schema/draft-07.schema.json"): beside the schema
 * directory (<schemas>/../share/<rel> in the source tree,
 * <schemas>/../<rel> when installed), then relative to the executable
 * (<exe>/../share/<rel> and up to two levels higher, for build/test and
 * build/asan/bin), then AMP_DATADIR/<rel>.  Writes the path into buf;
 * returns 0, or -1 when none exists. */
int amp_data_path(const char *rel, char *buf, size_t bufsz);

#endif
