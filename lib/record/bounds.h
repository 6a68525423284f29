/*
 * bounds.h - the bounds of what amp accepts, the same when a record is
 * written and when it is read back: whatever amp accepts, amp can read
 * back, ACK and show.
 *
 * The schemas say every bound a schema can say (id patterns, maxLength,
 * maxItems, maxProperties); this module checks the ones it cannot (the size
 * of a record, its nesting depth) and, for every string and member name
 * anywhere in a record, the string length, so that the open objects
 * (tech_constraints) are bounded too.  The figures are in amp-protocol(7)
 * "LIMITS".
 */
#ifndef AMP_BOUNDS_H
#define AMP_BOUNDS_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"

/* Bytes of a record, as received and as stored (2-space indented).  A
 * dispatch with a thousand criteria is some 100 KiB; 1 MiB keeps a task
 * of a few hundred records within what `amp status` reads in a blink. */
#define AMP_LIMIT_MESSAGE_BYTES 1048576
/* Nesting levels of a whole record, the record object being level 1 (the
 * payload is level 2).  The deepest the schemas define is 4; 32 leaves
 * room in tech_constraints while keeping every recursive walk shallow. */
#define AMP_LIMIT_DEPTH 32
/* Characters (Unicode code points, as JSON Schema's maxLength counts them)
 * of any string or member name. */
#define AMP_LIMIT_STRING_CHARS 65536
/* What the error log keeps of a refused input larger than
 * AMP_LIMIT_MESSAGE_BYTES: its first bytes; reasons.json has its size. */
#define AMP_LIMIT_LOG_RAW_BYTES 65536

/* Identifiers (common.schema.json's patterns say the same):
 * task_id "T-YYYY-" and 3 to 9 digits; msg_id "{type}-{task_id}-{unix_ms}"
 * with at most 15 digits of unix_ms (10^15 ms is the year 33658). */
#define AMP_TASK_ID_MIN_DIGITS 3
#define AMP_TASK_ID_MAX_DIGITS 9
#define AMP_TASK_ID_MAX_LEN (7 + AMP_TASK_ID_MAX_DIGITS)
#define AMP_MSG_ID_MS_MAX_DIGITS 15
/* "review_request" / "review_verdict" are the longest type names. */
#define AMP_MSG_ID_MAX_LEN (14 + 1 + AMP_TASK_ID_MAX_LEN + 1 + AMP_MSG_ID_MS_MAX_DIGITS)

/* 1 when id[0..len) is a task_id: common.schema.json's
 * ^T-[0-9]{4}-[0-9]{3,9}$, the one definition amp_store_task_dir and the
 * msg_id parser use. */
int amp_task_id_valid(const char *id, size_t len);

/*
 * Splits a msg_id that matches common.schema.json's msg_id pattern
 * ^(task_dispatch|task_result|review_request|review_verdict|escalation)-
 * T-[0-9]{4}-[0-9]{3,9}-(0|[1-9][0-9]{0,14})$: *task / *task_len (within
 * msg_id) and *ms, each optional.  Returns 0, or -1 when it does not match.
 */
int amp_msg_id_parse(const char *msg_id, const char **task, size_t *task_len,
		     long long *ms);

/*
 * Checks raw bytes before they are parsed: their size (`total` is the
 * whole input's size when the caller read only a prefix, 0 when unknown,
 * else ignored below len) and their nesting depth, counted without
 * recursion so that a 100,000-deep input never reaches a recursive parser.
 * `base_depth` is the depth of the value's parent (0 for a whole record, 1
 * for a payload) and `pointer` its JSON pointer ("" or "/payload").
 * Returns AMP_OK or AMP_ESCHEMA with err naming the limit and the path.
 */
int amp_bounds_check_bytes(const char *buf, size_t len, size_t total,
			   int base_depth, const char *pointer, amp_error *err);

/* The size in bytes of amp_message_dump(msg) (message.h), the stored form
 * whose size the bounds limit, without keeping it. */
size_t amp_message_dump_size(const json_t *msg);

/*
 * Checks a parsed value: nesting depth, the length of every string and
 * member name, and, for a whole record (base_depth 0), its size as amp
 * stores it.  Every violation is appended to `errors` (AMP_ESCHEMA).
 */
int amp_bounds_check_value(const json_t *value, int base_depth,
			   const char *pointer, amp_errlist *errors);

/*
 * Reads a stored record: amp_bounds_check_bytes, the JSON parser, then
 * amp_bounds_check_value.  On failure err holds one reason, with the
 * path in it, fit for an unreadable record.  The caller owns *out.
 */
int amp_bounds_parse_record(const char *buf, size_t len, json_t **out,
			    amp_error *err);

#endif
