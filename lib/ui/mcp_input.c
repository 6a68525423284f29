/*
 * mcp_input.c - amp mcp's client input, line by line (mcp_input.h).
 */
#include "mcp_input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "json/json.h"

/* Room for 64 KiB more at the end of the buffer; -1 out of memory. */
static int grow(amp_mcp_input *in)
{
	char *more;
	size_t want;

	if (in->start) { /* what was taken goes first */
		memmove(in->buf, in->buf + in->start, in->len - in->start);
		in->len -= in->start;
		in->start = 0;
	}
	if (in->cap - in->len >= 65536)
		return 0;
	want = in->len + 65536;
	if (!(more = realloc(in->buf, want)))
		return -1;
	in->buf = more;
	in->cap = want;
	return 0;
}

/* One read(2): 1 with bytes, 0 at the end, -1 out of memory or an error. */
static int read_once(amp_mcp_input *in)
{
	ssize_t got;

	if (grow(in) < 0)
		return -1;
	do
		got = read(in->fd, in->buf + in->len, in->cap - in->len);
	while (got < 0 && errno == EINTR);
	if (got <= 0) {
		in->eof = 1;
		return got < 0 ? -1 : 0;
	}
	in->len += (size_t)got;
	return 1;
}

int amp_mcp_input_more(amp_mcp_input *in)
{
	if (in->eof || in->len - in->start > 2 * in->max)
		return -1;
	return read_once(in) > 0 ? 0 : -1;
}

int amp_mcp_input_next(amp_mcp_input *in, const char **line, size_t *len, int *too_long)
{
	char *nl;
	size_t n;

	*too_long = 0;
	*len = 0;
	for (;;) {
		n = in->len - in->start;
		nl = n ? memchr(in->buf + in->start, '\n', n) : NULL;
		if (in->skipping) {
			/* the rest of a line too long: dropped up to its end */
			in->start = nl ? (size_t)(nl - in->buf) + 1 : in->len;
			if (nl || (in->eof && !n)) {
				in->skipping = 0;
				*too_long = 1;
				return 1;
			}
		} else if (nl || (in->eof && n)) {
			size_t l = nl ? (size_t)(nl - (in->buf + in->start)) : n;

			*line = in->buf + in->start;
			in->start += nl ? l + 1 : l;
			if (l > in->max) {
				*too_long = 1;
				return 1;
			}
			if (l && (*line)[l - 1] == '\r')
				l--;
			*len = l;
			return 1;
		} else if (n > in->max) {
			in->skipping = 1;
			in->start = in->len;
			continue;
		}
		if (in->eof)
			return 0;
		if (read_once(in) < 0 && !in->eof)
			return -1;
	}
}

int amp_mcp_input_cancels(const amp_mcp_input *in, const json_t *id)
{
	const char *p = in->buf ? in->buf + in->start : NULL, *end = in->buf ? in->buf + in->len : NULL;
	const char *nl;
	int found = 0;

	for (; p && p < end && !found; p = nl + 1) {
		json_t *msg = NULL, *params;
		const char *method;
		amp_error err;

		if (!(nl = memchr(p, '\n', (size_t)(end - p))))
			break; /* not whole yet */
		if ((size_t)(nl - p) > in->max || amp_json_parse(p, (size_t)(nl - p), &msg, &err) < 0)
			continue;
		method = json_string_value(json_object_get(msg, "method"));
		params = json_object_get(msg, "params");
		found = method && !strcmp(method, "notifications/cancelled") &&
			json_equal(json_object_get(params, "requestId"), (json_t *)id);
		json_decref(msg);
	}
	return found;
}

void amp_mcp_input_free(amp_mcp_input *in)
{
	free(in->buf);
	in->buf = NULL;
	in->start = in->len = in->cap = 0;
}
