/*
 * hash.h - FNV-1a, 64 bits (Fowler, Noll and Vo; the parameters of
 * http://www.isthe.com/chongo/tech/comp/fnv/): amp's one hash of bytes
 * that is not a digest, for its in-memory tables (the task log's index,
 * the summaries' slots, the validator's uniqueItems) and for the names of
 * the dashboard's pages of task directories that are not task ids, which
 * are on disk: whatever changes here changes those names.
 */
#ifndef AMP_HASH_H
#define AMP_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a's offset basis (where a hash starts) and prime. */
#define AMP_FNV1A_BASIS 14695981039346656037ULL
#define AMP_FNV1A_PRIME 1099511628211ULL

/* h with the n bytes at data hashed into it (start from AMP_FNV1A_BASIS). */
static inline uint64_t amp_fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;

	while (n--)
		h = (h ^ *p++) * AMP_FNV1A_PRIME;
	return h;
}

/* The same over the bytes of string s before its NUL. */
static inline uint64_t amp_fnv1a_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * AMP_FNV1A_PRIME;
	return h;
}

#endif
