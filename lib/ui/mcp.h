/*
 * mcp.h - amp as a Model Context Protocol server over stdio (amp mcp).
 *
 * JSON-RPC 2.0, one message a line (MCP's stdio transport): requests are
 * read from `in`, responses written to `out`, nothing else on `out`.  One
 * server speaks for one agent (a role, perhaps a named instance) on one
 * SSOT.  Its tools run amp's own commands (`amp <cmd> ... --json`, the
 * running executable, an argv and never a shell), so that every write goes
 * through the CLI's rules, signing and sync, and a failure is amp's error
 * object; the input schemas of the send tools are amp's schemas, read at
 * start from the directory the CLI validates with.
 */
#ifndef AMP_MCP_H
#define AMP_MCP_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "base/error.h"
#include "schema/schema.h"

/* The protocol revisions amp mcp speaks, newest first: the two newest the
 * official TypeScript SDK (@modelcontextprotocol/sdk 1.32) knows. */
#define AMP_MCP_PROTOCOL_LATEST   "2025-11-25"
#define AMP_MCP_PROTOCOL_PREVIOUS "2025-06-18"

/* The longest request line read, in bytes (a send of a 1 MiB record, its
 * escapes and the envelope fit); a longer one is answered with a parse
 * error and skipped. */
#define AMP_MCP_LINE_MAX (4 * 1024 * 1024)

/* Who the server speaks for, and how it runs amp.  Borrowed strings. */
typedef struct amp_mcp_config {
	const char *role;    /* the agent's role: --from of every write */
	const char *agent;   /* --agent of every write; NULL: as the CLI finds it */
	const char *repo;    /* --repo of every command; NULL: the CLI's default */
	const char *program; /* the amp executable the tools run */
	size_t line_max;     /* 0: AMP_MCP_LINE_MAX */
} amp_mcp_config;

typedef struct amp_mcp amp_mcp;

/* A server for `cfg` whose tool schemas are made from `set` (amp's schemas,
 * amp_schema_set_load_amp).  *out is new (amp_mcp_free); both cfg and set
 * must outlive it.  A schema amp needs missing: AMP_EIO. */
int amp_mcp_new(amp_mcp **out, const amp_mcp_config *cfg, amp_schema_set *set,
		amp_error *err);
void amp_mcp_free(amp_mcp *s);

/* The answer to one request line (any bytes): a new JSON-RPC response the
 * caller decrefs, or NULL for a notification or a response, which get
 * none. */
json_t *amp_mcp_handle(amp_mcp *s, const char *line, size_t len);

/* Serves requests from `in` until it ends, one response line each on
 * `out`.  Returns AMP_OK at the end of the input, AMP_EIO when `out`
 * cannot be written. */
int amp_mcp_serve(amp_mcp *s, FILE *in, FILE *out, amp_error *err);

#endif
