/*
 * util.h - small helpers shared by commands and library: whole-file reads,
 * JSON output, and terminal output conventions.
 */
#ifndef AMP_UTIL_H
#define AMP_UTIL_H

#include <jansson.h>
#include <stdio.h>

#include "error.h"
#include "utf8.h" /* amp_utf8_*, for util.h's many callers */

/* `s` for a JSON string: itself when it is UTF-8, else as amp_term()
 * escapes it (a file name is any bytes; JSON strings are UTF-8).  The
 * result may be amp_term's buffer: use it before the eighth next call. */
const char *amp_json_text(const char *s);

/* A string that may be missing, for messages: "(none)" when NULL. */
static inline const char *amp_or_none(const char *s)
{
	return s ? s : "(none)";
}

/* Reads all of `path` ("-" = stdin) into a NUL-terminated buffer the caller
 * frees; *len excludes the terminator.  AMP_EIO on failure. */
int amp_read_file(const char *path, char **buf, size_t *len, amp_error *err);

/* Like amp_read_file, reading no more than max + 1 bytes: *len > max says
 * the input is larger than max, without reading it all into memory. */
int amp_read_file_max(const char *path, size_t max, char **buf, size_t *len,
		      amp_error *err);

/* json_dumps(v, flags) with every real written in the shortest form that
 * reads back as the same double (%.<p>g for the least p in 1..17; ".0"
 * added when that looks like an integer): jansson writes %.17g, so a
 * confidence of 0.95 was stored as 0.94999999999999996.  The caller frees
 * the result; NULL when out of memory or v cannot be dumped. */
char *amp_json_dumps(const json_t *v, size_t flags);

/* The same, written to f; 0, or -1 on failure. */
int amp_json_dumpf(const json_t *v, FILE *f, size_t flags);

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

/*
 * s made safe to print on a terminal, for every human-readable output: a
 * C0 control, DEL, a C1 control (U+0080..U+009F), a bidirectional override
 * or isolate (U+202A..U+202E, U+2066..U+2069) and a byte that is not valid
 * UTF-8 are written as escapes ("\n", "\t", "\r", "\x1b", "\u009b",
 * "\u202e"), and a backslash as "\\", so every value stays on its line and
 * cannot move the cursor, change colours or rename the window.  Returns `s`
 * itself when nothing needs escaping (printable ASCII, no backslash), else
 * one of 8 buffers owned by this module that the next calls reuse in turn,
 * so a printf may take up to 8 escaped arguments.  NULL gives "(null)".
 */
const char *amp_term(const char *s);

/*
 * The one parser of numbers given on the command line, in git config and
 * in the environment.  `what` names the source in the error
 * ("--ack-timeout", "git config amp.heartbeatTimeout", "AMP_NOW").
 * amp_parse_int takes a decimal integer (an optional "-" and digits, nothing
 * else); amp_parse_real a finite decimal number ("0.5", "1e-3"; no "inf",
 * "nan", hexadecimal or surrounding blanks).  A value outside [min, max] is
 * an error too.  Returns AMP_OK, or AMP_EUSAGE with the reason in err:
 * "--ack-timeout: 4294967297 is out of range (1..604800)".
 */
int amp_parse_int(const char *what, const char *s, long long min,
		  long long max, long long *out, amp_error *err);
int amp_parse_real(const char *what, const char *s, double min, double max,
		   double *out, amp_error *err);

/* A duration of `seconds` (negative counts as its absolute value) in the
 * compact form of listings: "45s", "4m", "1h05m", "2h", "3d2h", "3d"
 * (whole units, rounded down) into buf; returns buf. */
#define AMP_DURATION_BUFSZ 32
char *amp_duration_format(long long seconds, char buf[AMP_DURATION_BUFSZ]);

#endif
