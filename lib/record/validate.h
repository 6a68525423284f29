/*
 * validate.h - checking whole inputs against a schema: what `amp validate`
 * does for each file, kept out of cmd/ so other commands can reuse it.
 *
 * An input is one JSON value (the whole buffer) or JSON lines (one value
 * per non-empty line).  The whole buffer is tried first; it is read as JSON
 * lines only when that fails, it has more than one non-empty line and its
 * first non-empty line is a JSON value on its own, so a truncated
 * pretty-printed document is reported as one parse error, not as a
 * series of broken lines.
 */
#ifndef AMP_VALIDATE_H
#define AMP_VALIDATE_H

#include <stddef.h>

#include "base/error.h"
#include "schema/schema.h"

/* The verdict on one value: `line` is 0 for a whole-buffer value, else the
 * 1-based line of a JSON-lines value.  `status` is AMP_OK, AMP_ESCHEMA
 * (does not conform, or is not JSON) or AMP_EIO (the schema is unusable). */
struct amp_validate_result {
	size_t line;
	int status;
	amp_errlist errors;
};

/* Zero-initialise; release with amp_validate_results_free. */
typedef struct amp_validate_results {
	struct amp_validate_result *items;
	size_t count, alloc;
} amp_validate_results;

/* Parses buf[0..len) as above and validates every value against `schema`
 * (a member of `set`), appending one result per value to `out`.  When
 * `schema` is one of amp's (its $id under AMP_SCHEMA_BASE), each value is
 * first held to amp's bounds (bounds.h) as a whole record, as amp send
 * holds it.  Returns
 * the worst status: AMP_EIO before AMP_ESCHEMA before AMP_OK (AMP_EIO also
 * when out of memory, with no result added). */
int amp_validate_buffer(amp_schema_set *set, json_t *schema, const char *buf,
			size_t len, amp_validate_results *out);

void amp_validate_results_free(amp_validate_results *results);

/* The worse of two statuses, in the order above. */
int amp_validate_worst(int a, int b);

#endif
