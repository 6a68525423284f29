/*
 * buf.c - a growable string, for URIs, patterns and error messages.
 */
#include "schema_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void schema_buf_add(struct buf *b, const char *s, size_t n)
{
	char *bigger;
	size_t alloc;

	if (b->oom)
		return;
	/* Sizes near SIZE_MAX would wrap below; no message is that long. */
	if (n > SIZE_MAX / 4 || b->len > SIZE_MAX / 4) {
		b->oom = 1;
		return;
	}
	if (b->len + n + 1 > b->alloc) {
		alloc = b->alloc ? b->alloc : 64;
		while (alloc < b->len + n + 1)
			alloc *= 2;
		if (!(bigger = realloc(b->p, alloc))) {
			b->oom = 1;
			return;
		}
		b->p = bigger;
		b->alloc = alloc;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void schema_buf_puts(struct buf *b, const char *s)
{
	schema_buf_add(b, s, strlen(s));
}

void schema_buf_putc(struct buf *b, char c)
{
	schema_buf_add(b, &c, 1);
}

/* Hands the string over to the caller (NULL when out of memory). */
char *schema_buf_detach(struct buf *b)
{
	char *p;

	if (!b->p && !b->oom)
		schema_buf_add(b, "", 0);
	if (b->oom) {
		free(b->p);
		return NULL;
	}
	p = b->p;
	b->p = NULL;
	b->len = b->alloc = 0;
	return p;
}

/* Appends "/" and `key` as a JSON pointer token (RFC 6901: "~" as "~0",
 * "/" as "~1"). */
void schema_buf_put_token(struct buf *b, const char *key)
{
	schema_buf_putc(b, '/');
	for (; *key; key++) {
		if (*key == '~')
			schema_buf_puts(b, "~0");
		else if (*key == '/')
			schema_buf_puts(b, "~1");
		else
			schema_buf_putc(b, *key);
	}
}

/* Cuts the string back to its first `len` bytes. */
void schema_buf_cut(struct buf *b, size_t len)
{
	if (b->p && len <= b->len) {
		b->len = len;
		b->p[len] = '\0';
	}
}
