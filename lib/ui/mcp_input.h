/*
 * mcp_input.h - what amp mcp reads from its client: JSON-RPC messages, one
 * a line, read from a file descriptor into a buffer of its own, so that the
 * lines that come while a tool runs (a notifications/cancelled of it) can
 * be looked at before their turn.  Internal to lib/ui (mcp.c).
 */
#ifndef AMP_MCP_INPUT_H
#define AMP_MCP_INPUT_H

#include <jansson.h>
#include <stddef.h>

typedef struct amp_mcp_input {
	int fd;
	size_t max;     /* the longest line taken, in bytes */
	char *buf;      /* bytes read and not taken yet: buf[start..len) */
	size_t start, len, cap;
	int eof;        /* the client closed its end */
	int skipping;   /* dropping the rest of a line longer than max */
} amp_mcp_input;

/*
 * The next line, without its '\n' (nor a '\r' before it): 1 with *line
 * (valid until the next call) and *len; 0 at the end of the input; -1 out
 * of memory.  A line longer than in->max bytes is read to its end and
 * dropped, and given as *too_long = 1 (*len 0).  Blocks until a whole line
 * (or the end) is there.
 */
int amp_mcp_input_next(amp_mcp_input *in, const char **line, size_t *len, int *too_long);

/* Reads once what the descriptor has (it polled readable), keeping it for
 * amp_mcp_input_next.  0, or -1 at its end, on an error, or when more than
 * twice in->max bytes wait already (nothing more is read then). */
int amp_mcp_input_more(amp_mcp_input *in);

/* 1 when a whole line waiting is a notifications/cancelled whose
 * params.requestId is `id` (MCP's cancellation), else 0. */
int amp_mcp_input_cancels(const amp_mcp_input *in, const json_t *id);

void amp_mcp_input_free(amp_mcp_input *in);

#endif
