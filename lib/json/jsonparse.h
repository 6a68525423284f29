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
 * invalid UTF-8, NUL byte, nesting deeper than jansson allows).  The caller
 * owns *out (json_decref). */
int amp_json_parse(const char *buf, size_t len, json_t **out, amp_error *err);

#endif
