/*
 * jsonparse.h - amp_json_parse and its fast path.
 *
 * jansson's parser reads its input a byte at a time through three layers of
 * calls: about 150 instructions a byte on amp's schemas and records, which
 * made the schemas a third of a send and the records most of a first
 * `amp status`.  This parser reads what amp reads every day (objects,
 * arrays, strings and their escapes, integers of up to 18 digits, reals
 * that strtod reads) into the same jansson values, members in the same
 * order, and gives up on anything else: malformed input, a NUL, a lone
 * surrogate, an integer of 19 digits or more, a real out of range, nesting
 * past 64 levels, a member twice.  jansson then decides, so its answers and
 * its error messages stay the reference; this one only has to be right
 * where it answers (test/c/test_json.c compares them).
 */
#ifndef AMP_JSONPARSE_H
#define AMP_JSONPARSE_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"

/* 1 with *out (the caller owns it) when buf[0..len) is a JSON text that
 * json_loadb(JSON_DECODE_ANY | JSON_REJECT_DUPLICATES) reads as *out;
 * 0 when jansson must decide (see above, or out of memory). */
int amp_json_parse_fast(const char *buf, size_t len, json_t **out);

/* Parses exactly one JSON value from buf[0..len).  On failure returns
 * AMP_ESCHEMA with a reason naming the line and column (invalid JSON,
 * invalid UTF-8, NUL byte, nesting deeper than jansson allows), or AMP_EIO
 * when memory ran out while parsing.  The caller owns *out (json_decref). */
int amp_json_parse(const char *buf, size_t len, json_t **out, amp_error *err);

/*
 * json_loadb(buf, len, flags, jerr), except that a parse during which an
 * allocation fails ends at once: NULL, jerr->text "out of memory", and
 * *out_of_memory (when given) 1.  jansson's lexer does not check a failed
 * append to the text it saves (load.c lex_save ignores
 * strbuffer_append_byte's result): under memory pressure it goes on with a
 * byte missing, and returns a string that is not the one it read, or reads
 * past the end of its buffer (`amp status` died in lex_scan under `ulimit
 * -v`; test/39-oom.bats).  What the abandoned parse had allocated is not
 * freed.  Every jansson parse in amp goes through here (or
 * amp_json_parse).  The caller owns the result (json_decref).
 */
json_t *amp_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *jerr,
		       int *out_of_memory);

/* Makes jansson allocate with alloc and free with release (both must
 * accept what the other allocated: malloc's blocks), behind the guard
 * above.  Until called, malloc and free. */
void amp_json_set_alloc(json_malloc_t alloc, json_free_t release);

#endif
