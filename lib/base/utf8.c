#include "utf8.h"

#include <stdint.h>
#include <string.h>

size_t amp_utf8_seqn(const char *s, size_t avail, unsigned *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned c = p[0], min;
	size_t n, i;

	if (c == 0)
		return 0;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, c &= 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, c &= 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, c &= 0x07, min = 0x10000;
	else
		return 0;
	if (n > avail)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

size_t amp_utf8_seq(const char *s, unsigned *cp)
{
	/* A NUL ends a sequence short before any byte past it is read. */
	return amp_utf8_seqn(s, 4, cp);
}

int amp_utf8_validn(const char *s, size_t len)
{
	const char *end = s + len;
	unsigned cp;
	size_t n;

	while (s < end) {
		uint64_t w;

		/* Most of amp's text is ASCII: eight bytes at a time while
		 * none is above 0x7f nor 0 ((w - 0x01..) & ~w & 0x80.. is not
		 * 0 exactly when a byte of w is 0). */
		while (end - s >= 8) {
			memcpy(&w, s, 8);
			if ((w & UINT64_C(0x8080808080808080)) ||
			    ((w - UINT64_C(0x0101010101010101)) & ~w & UINT64_C(0x8080808080808080)))
				break;
			s += 8;
		}
		if (s == end)
			break;
		if (*s > 0 && (unsigned char)*s < 0x80)
			s++;
		else if ((n = amp_utf8_seqn(s, (size_t)(end - s), &cp)))
			s += n;
		else
			return 0;
	}
	return 1;
}

int amp_utf8_valid(const char *s)
{
	unsigned cp;
	size_t n;

	for (; *s; s += n)
		if (!(n = amp_utf8_seq(s, &cp)))
			return 0;
	return 1;
}

size_t amp_utf8_prefix(const char *s, size_t max, const char *stop)
{
	size_t n = 0, len;
	unsigned cp;

	while (s[n] && n < max && !strchr(stop, s[n])) {
		if (!(len = amp_utf8_seq(s + n, &cp)) || n + len > max)
			break;
		n += len;
	}
	return n;
}
