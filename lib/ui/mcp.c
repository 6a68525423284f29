/*
 * mcp.c - amp as a Model Context Protocol server over stdio (mcp.h).
 *
 * The server holds no state of the SSOT: each tool call runs one amp
 * command and returns what it printed, so that amp mcp can never say
 * something the CLI would not.
 */
#include "mcp.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/proc.h"
#include "mcp_input.h"
#include "template.h"
#include "base/util.h"
#include "json/json.h"

/* JSON-RPC 2.0 error codes, and MCP's "resource not found". */
#define RPC_PARSE_ERROR      (-32700)
#define RPC_INVALID_REQUEST  (-32600)
#define RPC_METHOD_NOT_FOUND (-32601)
#define RPC_INVALID_PARAMS   (-32602)
#define RPC_INTERNAL_ERROR   (-32603)
#define MCP_RESOURCE_NOT_FOUND (-32002)

/* How a tool argument becomes words of the command line. */
enum arg_kind {
	ARG_OPTION,  /* "--opt" "value" (a string, an integer or a number) */
	ARG_FLAG,    /* "--opt" when true */
	ARG_LIST,    /* "--opt" "item" for each item of an array */
	ARG_OPERAND, /* after "--", so that a value is never read as an option */
	ARG_ROLE,    /* an operand; the server's role when absent */
	ARG_PAYLOAD, /* a JSON object, on the command's stdin as --payload - */
};

typedef struct tool_arg {
	const char *key;
	enum arg_kind kind;
	const char *option;
	int required;
	/* Its JSON Schema: "@" and a path under AMP_SCHEMA_BASE (an amp
	 * schema, its "$ref"s inlined), else JSON text; of one item for
	 * ARG_LIST. */
	const char *schema;
	const char *description;
	const char *fallback; /* the value given when absent */
} tool_arg;

/* Which identity words a tool's command gets. */
#define AS_ROLE  1 /* --from <role> */
#define AS_AGENT 2 /* --agent <name>, when the server has one */
#define READ_ONLY 4
#define IDEMPOTENT 8
#define WAITS 16 /* exit 5 is "nothing came": a result, not an error */

#define MAX_ARGS 10

typedef struct tool {
	const char *name, *title, *description;
	const char *words[2]; /* the command and its fixed operand */
	unsigned flags;
	tool_arg args[MAX_ARGS];
} tool;

#define TASK_OPERAND { "task", ARG_OPERAND, NULL, 1, "@common.schema.json#/definitions/task_id", "The task id (T-YYYY-NNN).", NULL }
#define TASK_OPTION(req) { "task", ARG_OPTION, "--task", req, "@common.schema.json#/definitions/task_id", "The task id (T-YYYY-NNN).", NULL }
#define KEY_ARG { "idempotency_key", ARG_OPTION, "--idempotency-key", 0, "{\"type\":\"string\",\"minLength\":1,\"maxLength\":256}", "A retry with the same key writes nothing new and returns the first write's msg_id.", NULL }
#define SEND_TOOL(type, what) \
	{ "send_" type, "Send a " type, "Writes one AMP/1.0 " type " message (" what ") from this agent's role, " \
	  "validated and checked by amp's rules as `amp send " type "` does; returns its msg_id.", \
	  { "send", type }, AS_ROLE | AS_AGENT, { \
		TASK_OPTION(1), \
		{ "payload", ARG_PAYLOAD, NULL, 1, "@" type ".schema.json", "The message payload: amp's " type " schema (amp schema " type ").", NULL }, \
		{ "to", ARG_OPTION, "--to", 0, "@common.schema.json#/definitions/addressee_role", "The addressee role (default: the type's).", NULL }, \
		{ "context_refs", ARG_LIST, "--context-ref", 0, "@common.schema.json#/definitions/msg_id", "Messages this one answers or builds on.", NULL }, \
		{ "ack_timeout", ARG_OPTION, "--ack-timeout", 0, "{\"type\":\"integer\",\"minimum\":1,\"maximum\":604800}", "Seconds the addressee has to ACK.", NULL }, \
		{ "no_ack", ARG_FLAG, "--no-ack", 0, "{\"type\":\"boolean\"}", "The message needs no ACK.", NULL }, \
		KEY_ARG } }

static const tool tools[] = {
	{ "inbox", "Inbox", "The messages addressed to a role (default: this agent's) that are not acknowledged yet, oldest first, with their ACK deadlines (amp inbox).",
	  { "inbox", NULL }, READ_ONLY | IDEMPOTENT, {
		{ "role", ARG_ROLE, NULL, 0, "@common.schema.json#/definitions/addressee_role", "Whose inbox (default: this agent's role).", NULL },
		TASK_OPTION(0),
		{ "all", ARG_FLAG, "--all", 0, "{\"type\":\"boolean\"}", "Acknowledged messages too.", NULL } } },
	{ "show", "Show a message", "One message by its msg_id, with the records it refers to and those that answer it when context is true (amp show).",
	  { "show", NULL }, READ_ONLY | IDEMPOTENT, {
		{ "msg_id", ARG_OPERAND, NULL, 1, "@common.schema.json#/definitions/msg_id", "The message id.", NULL },
		{ "context", ARG_FLAG, "--context", 0, "{\"type\":\"boolean\"}", "Also the messages it refers to and that refer to it.", NULL } } },
	SEND_TOOL("task_dispatch", "the Coordinator gives a task to the Executor"),
	SEND_TOOL("task_result", "the Executor reports a subtask"),
	SEND_TOOL("review_request", "the Coordinator asks the Reviewer"),
	SEND_TOOL("review_verdict", "the Reviewer decides"),
	SEND_TOOL("escalation", "any role reports a problem"),
	{ "ack", "Acknowledge", "Acknowledges a message addressed to this agent's role (amp ack); acknowledging twice writes nothing new.",
	  { "ack", NULL }, AS_ROLE | AS_AGENT | IDEMPOTENT, {
		{ "msg_id", ARG_OPERAND, NULL, 1, "@common.schema.json#/definitions/msg_id", "The message to acknowledge.", NULL } } },
	{ "verdict", "Review verdict", "The Reviewer's verdict on the task's open review request, its references filled in by amp (amp verdict).",
	  { "verdict", NULL }, AS_ROLE | AS_AGENT, {
		TASK_OPERAND,
		{ "decision", ARG_OPTION, "--decision", 1, "@review_verdict.schema.json#/properties/decision", "The decision.", NULL },
		{ "confidence", ARG_OPTION, "--confidence", 1, "@review_verdict.schema.json#/properties/confidence", "0..1.", NULL },
		{ "payload", ARG_PAYLOAD, NULL, 0, "{\"type\":\"object\"}", "criteria_results, issues, direct_fixes, architecture_notes, as in amp's review_verdict schema.", NULL },
		{ "architecture_notes", ARG_OPTION, "--architecture-notes", 0, "@common.schema.json#/definitions/text", "Notes on the architecture.", NULL },
		{ "context_ref", ARG_OPTION, "--context-ref", 0, "@common.schema.json#/definitions/msg_id", "The review request answered (default: the open one).", NULL },
		KEY_ARG } },
	{ "escalate", "Escalate", "Writes an escalation for the task and, for a critical one, suspends it (amp escalate).",
	  { "escalate", NULL }, AS_ROLE | AS_AGENT, {
		TASK_OPERAND,
		{ "type", ARG_OPTION, "--type", 1, "@escalation.schema.json#/properties/escalation_type", "What went wrong.", NULL },
		{ "severity", ARG_OPTION, "--severity", 1, "@escalation.schema.json#/properties/severity", "How bad.", NULL },
		{ "description", ARG_OPTION, "--description", 1, "@escalation.schema.json#/properties/description", "What happened.", NULL },
		{ "affected", ARG_LIST, "--affected", 0, "@common.schema.json#/definitions/msg_id", "The messages concerned.", NULL },
		{ "suggest", ARG_LIST, "--suggest", 0, "@common.schema.json#/definitions/non_empty_string", "Suggested actions.", NULL },
		{ "no_suspend", ARG_FLAG, "--no-suspend", 0, "{\"type\":\"boolean\"}", "A critical escalation that does not suspend the task.", NULL } } },
	{ "claim", "Claim a task", "Takes (or renews) the lease of a named executor instance on a task or one subtask (amp claim); fails with code \"claimed\" when another instance holds it.",
	  { "claim", NULL }, AS_ROLE | AS_AGENT, {
		TASK_OPERAND,
		{ "subtask", ARG_OPTION, "--subtask", 0, "@common.schema.json#/definitions/non_empty_string", "One subtask only.", NULL },
		{ "ttl", ARG_OPTION, "--ttl", 0, "{\"type\":\"integer\",\"minimum\":1,\"maximum\":2592000}", "Seconds the lease lasts after the holder's last write.", NULL } } },
	{ "release", "Release a claim", "Ends the lease of a claim on the task (amp release).",
	  { "release", NULL }, AS_ROLE | AS_AGENT, {
		TASK_OPERAND,
		{ "subtask", ARG_OPTION, "--subtask", 0, "@common.schema.json#/definitions/non_empty_string", "The subtask claimed.", NULL },
		{ "reason", ARG_OPTION, "--reason", 0, "@common.schema.json#/definitions/non_empty_string", "Why.", NULL } } },
	{ "heartbeat", "Heartbeat", "Says this agent is alive on the task (amp heartbeat).",
	  { "heartbeat", NULL }, AS_ROLE | AS_AGENT, {
		TASK_OPERAND,
		{ "note", ARG_OPTION, "--note", 0, "@common.schema.json#/definitions/non_empty_string", "What it is doing.", NULL } } },
	{ "wait", "Wait for a message", "Waits until a message addressed to the role (default: this agent's) is not yet acknowledged, up to timeout seconds (amp wait); {\"timed_out\": true} when none came.",
	  { "wait", NULL }, READ_ONLY | WAITS, {
		{ "role", ARG_ROLE, NULL, 0, "@common.schema.json#/definitions/addressee_role", "Whose messages (default: this agent's role).", NULL },
		TASK_OPTION(0),
		{ "timeout", ARG_OPTION, "--timeout", 0, "{\"type\":\"integer\",\"minimum\":1,\"maximum\":600,\"default\":30}", "Seconds to wait, 1..600 (default 30).", "30" } } },
	{ "status", "Task status", "The state of one task (its subtasks, claims and messages), or of every task (amp status).",
	  { "status", NULL }, READ_ONLY | IDEMPOTENT, {
		{ "task", ARG_OPERAND, NULL, 0, "@common.schema.json#/definitions/task_id", "The task (default: every open task).", NULL },
		{ "all", ARG_FLAG, "--all", 0, "{\"type\":\"boolean\"}", "Every task, closed ones too.", NULL } } },
	{ "log", "Search the log", "The records of the SSOT, newest first, filtered (amp log).",
	  { "log", NULL }, READ_ONLY | IDEMPOTENT, {
		TASK_OPTION(0),
		{ "type", ARG_OPTION, "--type", 0, "{\"type\":\"string\",\"minLength\":1,\"maxLength\":64}", "A message type or a record kind.", NULL },
		{ "from", ARG_OPTION, "--from", 0, "@common.schema.json#/definitions/sender_role", "The writer's role.", NULL },
		{ "to", ARG_OPTION, "--to", 0, "@common.schema.json#/definitions/addressee_role", "The addressee's role.", NULL },
		{ "since", ARG_OPTION, "--since", 0, "{\"type\":\"string\",\"minLength\":1,\"maxLength\":64}", "Records at or after this time (ISO 8601, or as amp log --since takes).", NULL },
		{ "until", ARG_OPTION, "--until", 0, "{\"type\":\"string\",\"minLength\":1,\"maxLength\":64}", "Records at or before this time.", NULL },
		{ "grep", ARG_OPTION, "--grep", 0, "{\"type\":\"string\",\"minLength\":1,\"maxLength\":1024}", "Records whose text holds this string.", NULL },
		{ "limit", ARG_OPTION, "-n", 0, "{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"default\":100}", "At most this many records (default 100).", "100" } } },
};

#define NTOOLS (sizeof(tools) / sizeof(tools[0]))

struct amp_mcp {
	const amp_mcp_config *cfg;
	json_t *tool_list;      /* the answer to tools/list */
	amp_schema_set *checks; /* the tools' input schemas, to check arguments */
	json_t *schemas[NTOOLS]; /* what the arguments are checked against */
	int initialized;
	amp_mcp_input *input;   /* amp_mcp_serve's: read while a tool runs */
	json_t *current;        /* the id of the request being answered */
	int cancelled;          /* the client cancelled it: no answer */
};

/* ---- the tools' schemas ------------------------------------------------ */

/* The schema of `spec` (tool_arg.schema), new; NULL with err set. */
static json_t *arg_schema(amp_schema_set *set, const char *spec, amp_error *err)
{
	char uri[AMP_PATH_MAX];
	json_t *out = NULL;
	json_error_t jerr;

	if (spec[0] != '@') {
		if (!(out = amp_json_loadb(spec, strlen(spec), 0, &jerr, NULL)))
			amp_error_set(err, AMP_EIO, "", "amp mcp: bad built-in schema %s", spec);
		return out;
	}
	snprintf(uri, sizeof(uri), "%s%s", AMP_SCHEMA_BASE, spec + 1);
	if (amp_template_resolve(set, uri, &out, err) < 0)
		return NULL;
	return out;
}

static json_t *input_schema(amp_schema_set *set, const tool *t, amp_error *err)
{
	json_t *schema, *props = json_object(), *required = json_array(), *s;
	const tool_arg *a;

	schema = json_pack("{s:s,s:s,s:o,s:b}", "$schema", "http://json-schema.org/draft-07/schema#",
			   "type", "object", "properties", props, "additionalProperties", 0);
	for (a = t->args; a < t->args + MAX_ARGS && a->key; a++) {
		if (!(s = arg_schema(set, a->schema, err)))
			goto fail;
		if (a->kind == ARG_LIST)
			s = json_pack("{s:s,s:i,s:o}", "type", "array", "maxItems", 100, "items", s);
		/* A description beside an amp schema says what the tool makes
		 * of it; the payload keeps the schema's own, word for word. */
		if (a->kind != ARG_PAYLOAD || a->schema[0] != '@')
			json_object_set_new(s, "description", json_string(a->description));
		json_object_set_new(props, a->key, s);
		if (a->required)
			json_array_append_new(required, json_string(a->key));
	}
	if (json_array_size(required))
		json_object_set(schema, "required", required);
	json_decref(required);
	return schema;
fail:
	json_decref(required);
	json_decref(schema);
	return NULL;
}

int amp_mcp_new(amp_mcp **out, const amp_mcp_config *cfg, amp_schema_set *set,
		amp_error *err)
{
	amp_mcp *s = calloc(1, sizeof(*s));
	json_t *list = json_array(), *schema, *entry;
	char uri[64];
	size_t i;
	int status = AMP_OK;

	*out = NULL;
	if (!s || !list || !(s->checks = amp_schema_set_new())) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	s->cfg = cfg;
	for (i = 0; i < NTOOLS; i++) {
		const tool *t = &tools[i];

		if (!(schema = input_schema(set, t, err))) {
			status = err->status ? err->status : AMP_EIO;
			goto cleanup;
		}
		/* The arguments are checked here, but a payload by amp itself:
		 * a payload its rules refuse (a dispatch to main) is then
		 * refused, logged and escalated as the CLI does it. */
		s->schemas[i] = json_deep_copy(schema);
		if (json_object_get(json_object_get(schema, "properties"), "payload"))
			json_object_set_new(json_object_get(s->schemas[i], "properties"), "payload",
					    json_pack("{s:s}", "type", "object"));
		snprintf(uri, sizeof(uri), "urn:amp-mcp:tool:%s", t->name);
		status = amp_schema_set_add(s->checks, s->schemas[i], uri, err);
		entry = json_pack("{s:s,s:s,s:s,s:o,s:{s:s,s:b,s:b,s:b,s:b}}",
				  "name", t->name, "title", t->title, "description", t->description,
				  "inputSchema", schema,
				  "annotations", "title", t->title,
				  "readOnlyHint", !!(t->flags & READ_ONLY),
				  "destructiveHint", 0,
				  "idempotentHint", !!(t->flags & IDEMPOTENT),
				  "openWorldHint", 0);
		json_array_append_new(list, entry);
		if (status < 0)
			goto cleanup;
	}
	s->tool_list = json_pack("{s:o}", "tools", list);
	list = NULL;
	*out = s;
	s = NULL;
cleanup:
	json_decref(list);
	amp_mcp_free(s);
	return status;
}

void amp_mcp_free(amp_mcp *s)
{
	if (!s)
		return;
	size_t i;

	json_decref(s->tool_list);
	for (i = 0; i < NTOOLS; i++)
		json_decref(s->schemas[i]);
	amp_schema_set_free(s->checks);
	free(s);
}

/* ---- JSON-RPC ---------------------------------------------------------- */

static json_t *rpc_error(json_t *id, int code, const char *message, json_t *data)
{
	json_t *e = json_pack("{s:i,s:s}", "code", code, "message", amp_json_text(message));

	if (data)
		json_object_set_new(e, "data", data);
	return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", e);
}

static json_t *rpc_result(json_t *id, json_t *result)
{
	return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

/* ---- running amp ------------------------------------------------------- */

/* The exit codes of amp (README "Exit codes"), by name. */
static const char *exit_name(int code)
{
	static const char *const names[] = { "ok", "invalid", "usage", "refused",
					     "io", "timeout", "claimed" };

	return code >= 0 && code <= 6 ? names[code] : "failed";
}

/* amp's error object of one "amp <cmd>: error: [<path>: ]<reason>" line:
 * the path is the JSON pointer that starts the text, when one does. */
static json_t *error_object(const char *text, int code)
{
	const char *sep = text[0] == '/' ? strstr(text, ": ") : NULL;
	json_t *o = json_pack("{s:s,s:i}", "code", exit_name(code), "exit", code);

	if (sep) {
		json_object_set_new(o, "path", json_stringn(text, (size_t)(sep - text)));
		text = sep + 2;
	} else {
		json_object_set_new(o, "path", json_string(""));
	}
	json_object_set_new(o, "message", json_string(amp_json_text(text)));
	return o;
}

/* What the command printed on stdout, as JSON: one value, else JSON lines
 * (as an array), else NULL. */
static json_t *parse_output(const char *out, size_t len)
{
	json_t *v = NULL, *lines;
	const char *p = out, *end = out + len, *nl;
	amp_error err;

	if (amp_json_parse(out, len, &v, &err) == AMP_OK)
		return v;
	lines = json_array();
	for (; p < end; p = nl + 1) {
		if (!(nl = memchr(p, '\n', (size_t)(end - p))))
			nl = end;
		if (nl == p)
			continue;
		if (amp_json_parse(p, (size_t)(nl - p), &v, &err) < 0) {
			json_decref(lines);
			return NULL;
		}
		json_array_append_new(lines, v);
	}
	return lines;
}

/* The tool result of a command that ran: its output, or amp's errors from
 * its stderr (`errtext`) when it failed. */
static json_t *tool_result(const tool *t, int code, const char *out, size_t outlen,
			   const char *errtext)
{
	json_t *value = parse_output(out, outlen), *structured, *errors = json_array(), *r;
	const char *line = errtext, *nl, *mark;
	char *text;

	/* The command's warnings (and, on failure, its errors): one line
	 * each, "amp <cmd>: error: ..." or "amp <cmd>: warning: ...". */
	for (; *line; line = *nl ? nl + 1 : nl) {
		char buf[AMP_MSG_MAX + AMP_PATH_MAX + 64];
		size_t n;

		nl = strchr(line, '\n');
		if (!nl)
			nl = line + strlen(line);
		n = (size_t)(nl - line) < sizeof(buf) - 1 ? (size_t)(nl - line) : sizeof(buf) - 1;
		memcpy(buf, line, n);
		buf[n] = '\0';
		if ((mark = strstr(buf, ": error: ")) && code != 0)
			json_array_append_new(errors, error_object(mark + 9, code));
	}
	if (code != 0 && !((t->flags & WAITS) && code == 5)) {
		if (!json_array_size(errors)) {
			/* No line said why: the exit code still does. */
			json_array_append_new(errors, error_object(errtext[0] ? errtext : "amp failed", code));
		}
		structured = json_pack("{s:O}", "error", json_array_get(errors, 0));
		if (json_array_size(errors) > 1)
			json_object_set(structured, "errors", errors);
		if (outlen)
			json_object_set_new(structured, "output",
					    value ? value : json_string(amp_json_text(out)));
		else
			json_decref(value);
		value = NULL;
	} else if (code == 5) {
		structured = json_pack("{s:b}", "timed_out", 1);
	} else if (json_is_object(value)) {
		structured = value;
		value = NULL;
	} else {
		structured = json_pack("{s:o}", "items", value ? value : json_array());
		value = NULL;
	}
	json_decref(value);
	json_decref(errors);
	text = amp_json_dumps(structured, JSON_COMPACT);
	r = json_pack("{s:[{s:s,s:s}],s:o,s:b}", "content", "type", "text", "text",
		      text ? text : "{}", "structuredContent", structured,
		      "isError", code != 0 && !((t->flags & WAITS) && code == 5));
	free(text);
	return r;
}

/* A tool error made here, before amp ran (its arguments): amp's error
 * object all the same. */
static json_t *tool_error(int code, const char *path, const char *message)
{
	json_t *e = json_pack("{s:s,s:i,s:s,s:s}", "code", exit_name(code), "exit", code,
			      "path", amp_json_text(path), "message", amp_json_text(message));
	json_t *structured = json_pack("{s:o}", "error", e);
	char *text = amp_json_dumps(structured, JSON_COMPACT);
	json_t *r = json_pack("{s:[{s:s,s:s}],s:o,s:b}", "content", "type", "text", "text",
			      text ? text : "{}", "structuredContent", structured, "isError", 1);

	free(text);
	return r;
}

/* While a read-only tool runs: what the client sends is read, and a
 * notifications/cancelled of the request ends the tool (amp_run_watch). */
static int on_input(void *ctx)
{
	amp_mcp *s = ctx;

	if (amp_mcp_input_more(s->input) < 0)
		return -1;
	if (amp_mcp_input_cancels(s->input, s->current)) {
		s->cancelled = 1;
		return 1;
	}
	return 0;
}

/* Runs `argv` with `in` on its stdin; *out, *errtext new (the caller
 * frees).  A read-only tool (`cancellable`) is ended when the client
 * cancels its request (MCP: notifications/cancelled); a write always runs
 * to its end, so that none is cut half-way. */
static int run_amp(amp_mcp *s, int cancellable, const char *const *argv, const char *in,
		   size_t inlen, char **out, size_t *outlen, char **errtext, int *code,
		   amp_error *err)
{
	FILE *f = tmpfile();
	long size;
	int status, watch = cancellable && s->input && s->current ? s->input->fd : -1;

	*errtext = NULL;
	if (!f)
		return amp_error_set(err, AMP_EIO, "", "cannot make a temporary file: %s",
				     strerror(errno));
	/* The cancellation may be there already, read with the request. */
	if (watch >= 0 && amp_mcp_input_cancels(s->input, s->current)) {
		s->cancelled = 1;
		watch = -1;
	}
	if (s->cancelled) {
		fclose(f);
		*code = 128 + SIGTERM;
		return (*out = strdup("")) && (*errtext = strdup("")) ? AMP_OK :
			amp_error_set(err, AMP_EIO, "", "out of memory");
	}
	status = amp_run_watch(argv, in, inlen, out, outlen, fileno(f), watch, on_input, s, code, err);
	if (status == AMP_OK) {
		size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
		/* amp's stderr is a few lines; more is cut, not read whole. */
		if (size < 0)
			size = 0;
		if (size > 65536)
			size = 65536;
		if (!(*errtext = calloc(1, (size_t)size + 1)) || fseek(f, 0, SEEK_SET) != 0) {
			status = amp_error_set(err, AMP_EIO, "", "cannot read amp's errors");
		} else {
			size_t got = fread(*errtext, 1, (size_t)size, f);

			(*errtext)[got] = '\0';
		}
	}
	fclose(f);
	if (status < 0) {
		free(*out);
		*out = NULL;
		free(*errtext);
		*errtext = NULL;
	}
	return status;
}

/* ---- tools/call -------------------------------------------------------- */

#define ARGV_MAX 256

typedef struct words {
	const char *v[ARGV_MAX + 1];
	char *owned[ARGV_MAX];
	size_t n, nowned;
} words;

static int add(words *w, const char *s)
{
	if (w->n >= ARGV_MAX)
		return -1;
	w->v[w->n++] = s;
	w->v[w->n] = NULL;
	return 0;
}

/* A JSON value as one word: strings as they are (never with a NUL: a
 * command line cannot carry one), integers and numbers in decimal. */
static int add_value(words *w, const json_t *v)
{
	char buf[64], *copy;

	if (json_is_string(v)) {
		if (strlen(json_string_value(v)) != json_string_length(v))
			return -2;
		return add(w, json_string_value(v));
	}
	if (json_is_integer(v))
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, sizeof(buf), "%.17g", json_real_value(v));
	else
		return -2;
	if (!(copy = strdup(buf)) || w->nowned >= ARGV_MAX) {
		free(copy);
		return -1;
	}
	w->owned[w->nowned++] = copy;
	return add(w, copy);
}

static json_t *call_tool(amp_mcp *s, const tool *t, size_t index, json_t *args)
{
	const amp_mcp_config *cfg = s->cfg;
	amp_errlist errors = { 0 };
	amp_error err;
	words w = { .n = 0 };
	const char *operands[MAX_ARGS];
	size_t nops = 0, i, k, outlen = 0, inlen = 0;
	char *out = NULL, *errtext = NULL, *in = NULL, path[AMP_PATH_MAX];
	json_t *result = NULL, *v;
	int code = -1, bad = 0;

	/* The arguments are checked against the schema tools/list gave (its
	 * payload aside): a JSON document that does not conform, exit 1, as
	 * amp's own check of a message says it. */
	if (amp_schema_validate(s->checks, s->schemas[index], NULL, args, &errors) < 0) {
		result = tool_error(errors.count && errors.items[0].status == AMP_EIO ? 4 : 1,
				    errors.count ? errors.items[0].path : "",
				    errors.count ? errors.items[0].message : "invalid arguments");
		goto cleanup;
	}
	add(&w, cfg->program);
	for (i = 0; i < 2 && t->words[i]; i++)
		add(&w, t->words[i]);
	add(&w, "--json");
	if (cfg->repo) {
		add(&w, "--repo");
		add(&w, cfg->repo);
	}
	if (t->flags & AS_ROLE) {
		add(&w, "--from");
		add(&w, cfg->role);
	}
	if ((t->flags & AS_AGENT) && cfg->agent) {
		add(&w, "--agent");
		add(&w, cfg->agent);
	}
	for (k = 0; k < MAX_ARGS && t->args[k].key; k++) {
		const tool_arg *a = &t->args[k];

		v = json_object_get(args, a->key);
		snprintf(path, sizeof(path), "/%s", a->key);
		switch (a->kind) {
		case ARG_ROLE:
			operands[nops++] = v ? json_string_value(v) : cfg->role;
			break;
		case ARG_OPERAND:
			if (v)
				operands[nops++] = json_string_value(v);
			break;
		case ARG_FLAG:
			if (json_is_true(v))
				bad |= add(&w, a->option);
			break;
		case ARG_OPTION:
			if (v) {
				bad |= add(&w, a->option);
				bad |= add_value(&w, v);
			} else if (a->fallback) {
				bad |= add(&w, a->option);
				bad |= add(&w, a->fallback);
			}
			break;
		case ARG_LIST:
			for (i = 0; i < json_array_size(v); i++) {
				bad |= add(&w, a->option);
				bad |= add_value(&w, json_array_get(v, i));
			}
			break;
		case ARG_PAYLOAD:
			if (v) {
				bad |= add(&w, "--payload");
				bad |= add(&w, "-");
				if (!(in = amp_json_dumps(v, JSON_COMPACT))) {
					result = tool_error(4, path, "out of memory");
					goto cleanup;
				}
				inlen = strlen(in);
			}
			break;
		}
		if (bad) {
			result = tool_error(bad == -1 ? 2 : 1, path,
					    bad == -1 ? "too many arguments" : "a string with a NUL byte cannot be a command-line argument");
			goto cleanup;
		}
	}
	/* Operands after "--": a task id "-h" is an operand amp refuses,
	 * never an option. */
	if (nops) {
		bad |= add(&w, "--");
		for (i = 0; i < nops; i++)
			bad |= add(&w, operands[i]);
	}
	if (bad) {
		result = tool_error(2, "", "too many arguments");
		goto cleanup;
	}
	if (run_amp(s, !!(t->flags & READ_ONLY), w.v, in, inlen, &out, &outlen, &errtext, &code,
		    &err) < 0) {
		result = tool_error(4, err.path, err.message);
		goto cleanup;
	}
	result = tool_result(t, code, out, outlen, errtext);
cleanup:
	for (i = 0; i < w.nowned; i++)
		free(w.owned[i]);
	amp_errlist_free(&errors);
	free(in);
	free(out);
	free(errtext);
	return result;
}

static json_t *tools_call(amp_mcp *s, json_t *id, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments"), *result;
	size_t i;

	if (!name)
		return rpc_error(id, RPC_INVALID_PARAMS, "params.name: a tool name is required", NULL);
	if (args && !json_is_object(args))
		return rpc_error(id, RPC_INVALID_PARAMS, "params.arguments: must be an object", NULL);
	for (i = 0; i < NTOOLS; i++)
		if (!strcmp(tools[i].name, name))
			break;
	if (i == NTOOLS)
		return rpc_error(id, RPC_INVALID_PARAMS, "unknown tool",
				 json_pack("{s:s}", "name", amp_json_text(name)));
	args = args ? json_incref(args) : json_object();
	result = call_tool(s, &tools[i], i, args);
	json_decref(args);
	if (!result)
		return rpc_error(id, RPC_INTERNAL_ERROR, "out of memory", NULL);
	return rpc_result(id, result);
}

/* ---- resources --------------------------------------------------------- */

#define TASK_URI "amp://task/"
#define MESSAGE_URI "amp://message/"

/* Runs a read-only tool for a resource; its structured result, or NULL
 * with *error the JSON-RPC error's data. */
static json_t *read_via(amp_mcp *s, const char *name, json_t *args, json_t **error)
{
	size_t i;
	json_t *r = NULL, *sc;

	*error = NULL;
	for (i = 0; i < NTOOLS; i++)
		if (!strcmp(tools[i].name, name))
			r = call_tool(s, &tools[i], i, args);
	json_decref(args);
	if (!r)
		return NULL;
	sc = json_incref(json_object_get(r, "structuredContent"));
	if (json_is_true(json_object_get(r, "isError"))) {
		*error = sc;
		sc = NULL;
	}
	json_decref(r);
	return sc;
}

static json_t *resources_list(amp_mcp *s, json_t *id)
{
	json_t *error, *status = read_via(s, "status", json_object(), &error), *list = json_array();
	json_t *items = json_object_get(status, "tasks"), *task;
	size_t i;

	if (!status)
		return json_decref(list), rpc_error(id, RPC_INTERNAL_ERROR, "amp status failed", error);
	json_array_foreach(items, i, task) {
		const char *tid = json_string_value(json_object_get(task, "task_id"));
		const char *state = json_string_value(json_object_get(task, "state"));
		char uri[128];

		if (!tid)
			continue;
		snprintf(uri, sizeof(uri), TASK_URI "%s", tid);
		json_array_append_new(list, json_pack("{s:s,s:s,s:s,s:s}", "uri", uri, "name", tid,
						      "description", state ? state : "",
						      "mimeType", "application/json"));
	}
	json_decref(status);
	return rpc_result(id, json_pack("{s:o}", "resources", list));
}

static json_t *resources_templates(json_t *id)
{
	return rpc_result(id, json_pack("{s:[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s}]}", "resourceTemplates",
					"uriTemplate", TASK_URI "{task_id}", "name", "task",
					"description", "A task's status (amp status T --json).",
					"mimeType", "application/json",
					"uriTemplate", MESSAGE_URI "{msg_id}", "name", "message",
					"description", "A message by its id (amp show ID --json).",
					"mimeType", "application/json"));
}

static json_t *resources_read(amp_mcp *s, json_t *id, json_t *params)
{
	const char *uri = json_string_value(json_object_get(params, "uri"));
	json_t *value, *error = NULL;
	char *text;

	if (!uri)
		return rpc_error(id, RPC_INVALID_PARAMS, "params.uri: a resource URI is required", NULL);
	if (!strncmp(uri, TASK_URI, strlen(TASK_URI)))
		value = read_via(s, "status", json_pack("{s:s}", "task", uri + strlen(TASK_URI)), &error);
	else if (!strncmp(uri, MESSAGE_URI, strlen(MESSAGE_URI)))
		value = read_via(s, "show", json_pack("{s:s}", "msg_id", uri + strlen(MESSAGE_URI)), &error);
	else
		return rpc_error(id, MCP_RESOURCE_NOT_FOUND, "Resource not found",
				 json_pack("{s:s}", "uri", amp_json_text(uri)));
	if (!value) {
		if (error)
			json_object_set_new(error, "uri", json_string(amp_json_text(uri)));
		return rpc_error(id, MCP_RESOURCE_NOT_FOUND, "Resource not found", error);
	}
	text = amp_json_dumps(value, JSON_COMPACT);
	json_decref(value);
	value = json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType",
			  "application/json", "text", text ? text : "null");
	free(text);
	return rpc_result(id, value);
}

/* ---- the session ------------------------------------------------------- */

/* MCP lifecycle: the client asks for a revision; the server answers with
 * it when it speaks it, "otherwise, the server MUST respond with another
 * protocol version it supports ... the latest". */
static json_t *initialize(amp_mcp *s, json_t *id, json_t *params)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	const char *answer = AMP_MCP_PROTOCOL_LATEST;

	if (!asked)
		return rpc_error(id, RPC_INVALID_PARAMS, "params.protocolVersion: a string is required", NULL);
	if (!strcmp(asked, AMP_MCP_PROTOCOL_PREVIOUS))
		answer = AMP_MCP_PROTOCOL_PREVIOUS;
	s->initialized = 1;
	return rpc_result(id, json_pack(
		"{s:s,s:{s:{s:b},s:{s:b,s:b}},s:{s:s,s:s,s:s},s:s}",
		"protocolVersion", answer,
		"capabilities", "tools", "listChanged", 0,
		"resources", "subscribe", 0, "listChanged", 0,
		"serverInfo", "name", "amp", "title", "amp (AMP/1.0 messages in git)",
		"version", AMP_VERSION,
		"instructions",
		"amp: AMP/1.0 messages between AI agents, in a git repository (the SSOT). "
		"This server speaks for one agent (one role). Read your inbox, ack what is "
		"addressed to you, send messages with the send_* tools (payloads follow amp's "
		"schemas), wait for the next message. A failed call is a tool error carrying "
		"amp's error object {code, exit, path, message}."));
}

json_t *amp_mcp_handle(amp_mcp *s, const char *line, size_t len)
{
	json_t *req = NULL, *id, *params, *resp = NULL;
	const char *method;
	amp_error err;

	if (amp_json_parse(line, len, &req, &err) < 0)
		return rpc_error(NULL, RPC_PARSE_ERROR, "Parse error",
				 json_pack("{s:s}", "reason", amp_json_text(err.message)));
	if (!json_is_object(req)) {
		resp = rpc_error(NULL, RPC_INVALID_REQUEST,
				 json_is_array(req) ? "Invalid Request: batches are not supported"
						    : "Invalid Request: not an object", NULL);
		goto cleanup;
	}
	id = json_object_get(req, "id");
	method = json_string_value(json_object_get(req, "method"));
	params = json_object_get(req, "params");
	/* A response to us (we send no requests): nothing to answer. */
	if (!json_object_get(req, "method") && id &&
	    (json_object_get(req, "result") || json_object_get(req, "error")))
		goto cleanup;
	if (id && !json_is_string(id) && !json_is_integer(id)) {
		/* MCP: "the ID MUST NOT be null"; JSON-RPC: a string or a number. */
		resp = rpc_error(NULL, RPC_INVALID_REQUEST, "Invalid Request: id must be a string or an integer", NULL);
		goto cleanup;
	}
	if (!json_is_string(json_object_get(req, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(req, "jsonrpc")), "2.0") || !method) {
		resp = rpc_error(id, RPC_INVALID_REQUEST,
				 !method ? "Invalid Request: method must be a string"
					 : "Invalid Request: jsonrpc must be \"2.0\"", NULL);
		goto cleanup;
	}
	if (!id) /* a notification (initialized, cancelled, ...): no answer */
		goto cleanup;
	if (params && !json_is_object(params)) {
		resp = rpc_error(id, RPC_INVALID_PARAMS, "params must be an object", NULL);
		goto cleanup;
	}
	s->current = id;
	s->cancelled = 0;
	if (!strcmp(method, "initialize"))
		resp = initialize(s, id, params);
	else if (!strcmp(method, "ping"))
		resp = rpc_result(id, json_object());
	else if (!strcmp(method, "tools/list"))
		resp = rpc_result(id, json_deep_copy(s->tool_list));
	else if (!strcmp(method, "tools/call"))
		resp = tools_call(s, id, params);
	else if (!strcmp(method, "resources/list"))
		resp = resources_list(s, id);
	else if (!strcmp(method, "resources/templates/list"))
		resp = resources_templates(id);
	else if (!strcmp(method, "resources/read"))
		resp = resources_read(s, id, params);
	else
		resp = rpc_error(id, RPC_METHOD_NOT_FOUND, "Method not found",
				 json_pack("{s:s}", "method", amp_json_text(method)));
	/* MCP: a request the client cancelled gets no response. */
	if (s->cancelled) {
		json_decref(resp);
		resp = NULL;
	}
	s->current = NULL;
cleanup:
	json_decref(req);
	return resp;
}

int amp_mcp_serve(amp_mcp *s, FILE *in, FILE *out, amp_error *err)
{
	amp_mcp_input input = { .fd = fileno(in),
				.max = s->cfg->line_max ? s->cfg->line_max : AMP_MCP_LINE_MAX };
	const char *line;
	char *text;
	json_t *resp;
	size_t len;
	int got, too_long, status = AMP_OK;

	s->input = &input;
	while ((got = amp_mcp_input_next(&input, &line, &len, &too_long)) != 0) {
		if (got < 0) {
			resp = rpc_error(NULL, RPC_PARSE_ERROR, "Parse error: out of memory", NULL);
		} else if (too_long) {
			char why[96];

			snprintf(why, sizeof(why), "Parse error: the line is longer than %zu bytes", input.max);
			resp = rpc_error(NULL, RPC_PARSE_ERROR, why, NULL);
		} else {
			/* A blank line (or a lone CR) is no message. */
			if (!len)
				continue;
			resp = amp_mcp_handle(s, line, len);
		}
		if (!resp) {
			if (got < 0)
				break;
			continue;
		}
		text = amp_json_dumps(resp, JSON_COMPACT);
		json_decref(resp);
		if (!text || fprintf(out, "%s\n", text) < 0 || fflush(out) != 0) {
			free(text);
			status = amp_error_set(err, AMP_EIO, "", "cannot write to stdout: %s", strerror(errno));
			break;
		}
		free(text);
		if (got < 0)
			break;
	}
	s->input = NULL;
	amp_mcp_input_free(&input);
	return status;
}
