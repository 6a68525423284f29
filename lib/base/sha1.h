/*
 * sha1.h - SHA-1 (FIPS 180-4) of a byte stream, for the trailer of the
 * packs amp writes itself (a pack ends with the SHA-1 of everything before
 * it; git and libgit2's indexer check it).  Object names are libgit2's
 * business; this is only the pack's checksum.
 */
#ifndef AMP_SHA1_H
#define AMP_SHA1_H

#include <stddef.h>
#include <stdint.h>

typedef struct amp_sha1 {
	uint32_t h[5];
	uint64_t bytes;        /* bytes hashed so far */
	unsigned char block[64];
	size_t used;           /* bytes of block[] filled */
} amp_sha1;

void amp_sha1_init(amp_sha1 *c);
void amp_sha1_update(amp_sha1 *c, const void *data, size_t len);
/* Writes the 20-byte digest to out; c must be initialised again before
 * another use. */
void amp_sha1_final(amp_sha1 *c, unsigned char out[20]);

#endif
