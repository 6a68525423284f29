/*
 * utf8.h - UTF-8 sequences: decoding one, and whether a text is valid.
 * Below the JSON parser (json/), which reads strings with them.
 */
#ifndef AMP_UTF8_H
#define AMP_UTF8_H

#include <stddef.h>

/* Length of the UTF-8 sequence at s (1..4) storing its code point in *cp,
 * or 0 when s does not start a valid one (overlong forms, surrogates and
 * code points above U+10FFFF are invalid; so is the NUL terminator). */
size_t amp_utf8_seq(const char *s, unsigned *cp);
/* The same within the `avail` (>= 1) bytes at s, NUL or not after them. */
size_t amp_utf8_seqn(const char *s, size_t avail, unsigned *cp);

/* True when all of s is valid UTF-8. */
int amp_utf8_valid(const char *s);
/* True when s[0..len) is valid UTF-8 holding no NUL. */
int amp_utf8_validn(const char *s, size_t len);

/* The length of the longest prefix of s of at most max bytes that ends
 * at a character's start and before any byte of `stop` (a set of ASCII
 * bytes, may be ""): a text cut for a glance, still valid UTF-8 when s
 * is. */
size_t amp_utf8_prefix(const char *s, size_t max, const char *stop);

#endif
