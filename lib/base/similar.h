#ifndef AMP_SIMILAR_H
#define AMP_SIMILAR_H

#include <stddef.h>

/*
 * Names close to a mistyped one, for "did you mean" hints (an unknown
 * command, option or payload field), as git's help.c does for commands.
 */

/* The optimal-string-alignment distance between a and b: insertions,
 * deletions, substitutions and swaps of two neighbours each cost 1
 * ("stauts" -> "status" is 1).  Strings longer than 256 bytes are at
 * least as far as their length difference and are not compared: the
 * result is then (size_t)-1. */
size_t amp_edit_distance(const char *a, const char *b);

/* Fills best[] (room for cap indexes) with the indexes of the candidates
 * nearest to word, in candidate order, and returns how many there are
 * (at most cap): those at the smallest distance, when it is small for
 * the word's length (at most 1 for a word of up to 4 bytes, 2 up to 8, 3
 * beyond), and a candidate that starts with word (a word of 3 or more
 * bytes) counts as distance 1.  0 when none is near: no hint is better
 * than a wrong one.  NULL candidates are skipped. */
size_t amp_similar(const char *word, const char *const *candidates, size_t n,
		   size_t *best, size_t cap);

#endif
