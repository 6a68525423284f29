#include "sha1.h"

#include <string.h>

static uint32_t rol(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

/* One round: e gets the new value and the names rotate by the caller's
 * order of arguments, so the 80 rounds run without moving a..e around. */
#define ROUND(a, b, c, d, e, f, k, w) \
	((e) += rol(a, 5) + (f) + (k) + (w), (b) = rol(b, 30))
#define F1(b, c, d) (d ^ (b & (c ^ d)))
#define F2(b, c, d) (b ^ c ^ d)
#define F3(b, c, d) ((b & c) | (d & (b | c)))
/* The message schedule in 16 words, each computed as a round needs it. */
#define W(i) (w[(i) & 15] = rol(w[((i) + 13) & 15] ^ w[((i) + 8) & 15] ^ \
				 w[((i) + 2) & 15] ^ w[(i) & 15], 1))
/* Five rounds, after which the names are back in place. */
#define FIVE(F, k, w0, w1, w2, w3, w4) do { \
	ROUND(a, b, c, d, e, F(b, c, d), k, w0); \
	ROUND(e, a, b, c, d, F(a, b, c), k, w1); \
	ROUND(d, e, a, b, c, F(e, a, b), k, w2); \
	ROUND(c, d, e, a, b, F(d, e, a), k, w3); \
	ROUND(b, c, d, e, a, F(c, d, e), k, w4); \
} while (0)

/*
 * The 80 rounds written out five at a time, with the schedule kept in 16
 * words: a loop that picked the round's function and constant by its
 * number cost ~43 instructions a byte, which a pack holding the directory
 * of a long task (88 KB) felt; this costs ~28.
 */
static void compress(uint32_t h[5], const unsigned char *p)
{
	uint32_t w[16], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (i = 0; i < 15; i += 5)
		FIVE(F1, 0x5a827999, w[i], w[i + 1], w[i + 2], w[i + 3], w[i + 4]);
	FIVE(F1, 0x5a827999, w[15], W(16), W(17), W(18), W(19));
	for (i = 20; i < 40; i += 5)
		FIVE(F2, 0x6ed9eba1, W(i), W(i + 1), W(i + 2), W(i + 3), W(i + 4));
	for (; i < 60; i += 5)
		FIVE(F3, 0x8f1bbcdc, W(i), W(i + 1), W(i + 2), W(i + 3), W(i + 4));
	for (; i < 80; i += 5)
		FIVE(F2, 0xca62c1d6, W(i), W(i + 1), W(i + 2), W(i + 3), W(i + 4));
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

void amp_sha1_init(amp_sha1 *c)
{
	static const uint32_t iv[5] = { 0x67452301, 0xefcdab89, 0x98badcfe,
					0x10325476, 0xc3d2e1f0 };

	memcpy(c->h, iv, sizeof(iv));
	c->bytes = 0;
	c->used = 0;
}

void amp_sha1_update(amp_sha1 *c, const void *data, size_t len)
{
	const unsigned char *p = data;

	c->bytes += len;
	if (c->used) {
		size_t take = 64 - c->used < len ? 64 - c->used : len;

		memcpy(c->block + c->used, p, take);
		c->used += take, p += take, len -= take;
		if (c->used < 64)
			return;
		compress(c->h, c->block);
		c->used = 0;
	}
	for (; len >= 64; p += 64, len -= 64)
		compress(c->h, p);
	memcpy(c->block, p, len);
	c->used = len;
}

void amp_sha1_final(amp_sha1 *c, unsigned char out[20])
{
	uint64_t bits = c->bytes * 8;
	unsigned char pad[72] = { 0x80 };
	size_t padlen = (c->used < 56 ? 56 : 120) - c->used;
	int i;

	for (i = 0; i < 8; i++)
		pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
	amp_sha1_update(c, pad, padlen + 8);
	for (i = 0; i < 20; i++)
		out[i] = (unsigned char)(c->h[i / 4] >> (24 - 8 * (i % 4)));
}
