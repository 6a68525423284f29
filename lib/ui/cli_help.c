/*
 * cli_help.c - `amp <cmd> -h`: the usage, then each option of the
 * command's getopt_long table with one line (issue 34, "help like git");
 * an unknown option gets the most similar ones (base/similar.h).
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "base/errout.h"
#include "base/similar.h"
#include "base/util.h"

/* What an option does, in one line: "cmd:name" first, then "name". */
static const struct {
	const char *key, *arg, *text;
} options[] = {
	{ "ack-timeout", "<duration>", "how long the addressee has to ACK the message" },
	{ "affected", "<task_id>", "a task the escalation affects (repeatable)" },
	{ "agent", "<name>", "the named instance writing (else $AMP_AGENT, git config amp.agent)" },
	{ "all", NULL, "every task" },
	{ "architecture-notes", "<text>", "the reviewer's notes on the architecture" },
	{ "auto", NULL, "only when enough loose objects and packs have piled up" },
	{ "bind", "<addr>", "the address the server listens on" },
	{ "capability", "<name>", "the capability a task needs or an agent has" },
	{ "color", "[=<when>]", "colour: always, never or auto (a terminal)" },
	{ "confidence", "<0..1>", "the reviewer's confidence in the verdict" },
	{ "context", NULL, "also show the messages the message refers to" },
	{ "context-ref", "<ref>", "a ref to the work the message is about (repeatable)" },
	{ "dashboard", "<dir>", "write the dashboard into this directory" },
	{ "deadline", "<time>", "the task's deadline (ISO 8601)" },
	{ "decision", "<decision>", "approved, rejected or needs_changes" },
	{ "description", "<text>", "what the message says, for people" },
	{ "envelope", "<file>", "the whole message, from a file ('-' for stdin)" },
	{ "exec", "<command>", "run this command for each new message" },
	{ "exec-for", "<role>", "run --exec only for messages to this role" },
	{ "from", "<role>", "the sending role (else $AMP_ROLE, git config amp.role)" },
	{ "full", NULL, "check the whole history, not only what is new" },
	{ "grep", "<text>", "only the records holding this text" },
	{ "help", NULL, "print this help" },
	{ "idempotency-key", "<key>", "write once for this key, even when run again" },
	{ "interval", "<duration>", "the time between two passes" },
	{ "json", NULL, "print JSON (schemas/output/; errors too)" },
	{ "limit", "<n>", "at most this many" },
	{ "max-iterations", "<n>", "the review rounds before the task is locked" },
	{ "migrate", NULL, "move the SSOT to layout 2 in one new commit" },
	{ "no-ack", NULL, "the message needs no ACK" },
	{ "no-color", NULL, "no colour" },
	{ "no-exec", NULL, "do not run the --exec commands" },
	{ "no-pager", NULL, "do not page the output" },
	{ "no-suspend", NULL, "do not suspend the task" },
	{ "no-sync", NULL, "do not sync after the write (git config amp.autoSync)" },
	{ "note", "<text>", "a note for the record" },
	{ "percent", "<0..100>", "how much of the work is done" },
	{ "on", "<task_id>", "the task this one waits for" },
	{ "once", NULL, "one pass, then exit" },
	{ "out", "<dir>", "the directory to write the site into" },
	{ "payload", "<file>", "the payload, from a file ('-' for stdin)" },
	{ "port", "<port>", "the port the server listens on" },
	{ "priority", "<n>", "the task's priority" },
	{ "proofs", NULL, "also say which proof of its author each record carries" },
	{ "quiet", NULL, "print nothing but errors" },
	{ "raw", NULL, "print as stored, no formatting" },
	{ "reason", "<text>", "why, for the record" },
	{ "repo", "<dir>", "the git repository of the SSOT (else the current one)" },
	{ "request-timeout", "<duration>", "the longest a request may take" },
	{ "role", "<role>", "a role the instance takes (repeatable)" },
	{ "serve", NULL, "serve the dashboard over HTTP" },
	{ "server", NULL, "the hooks of a server (hub) repository" },
	{ "severity", "<severity>", "the escalation's severity" },
	{ "since", "<time>", "only what is newer" },
	{ "soft", NULL, "a soft dependency: warn, do not wait" },
	{ "subtask", "<id>", "the subtask, not the whole task" },
	{ "suggest", "<text>", "a suggested fix" },
	{ "sync", NULL, "sync after the write" },
	{ "signing-key", "<file>", "the SSH key that signs every write (amp.signingKey)" },
	{ "task", "<task_id>", "the task" },
	{ "template", NULL, "print a payload to fill in, then send" },
	{ "timeout", "<duration>", "give up after this long (exit 5)" },
	{ "to", "<role>", "the addressee: a role, or one instance as NAME@ROLE" },
	{ "ttl", "<duration>", "how long the claim lasts without a heartbeat" },
	{ "type", "<type>", "the message or escalation type" },
	{ "claim:wait", "<0..3600 sec>", "wait this long for a busy task to be free" },
	{ "ask:question", "<text>", "the clarification question (data)" },
	{ "ask:ack-timeout", "<seconds>", "how long the coordinator has to answer (default 3600)" },
	{ "answer:question", "<question-ms>", "the question record answered (amp ask printed it)" },
	{ "answer:answer", "<text>", "the answer (data)" },
	{ "answer:ack-timeout", "<seconds>", "how long the asker has to acknowledge the answer (default 3600)" },
	{ "ask:ack", "<answer-ms>", "acknowledge this answer (amp answer printed it) instead of asking" },
	{ "until", "<time>", "only what is older" },
	{ "utc", NULL, "times in UTC rather than local time" },
	{ "wide", NULL, "every column in full, however wide the terminal" },
	{ "work", NULL, "the hooks of a work repository" },
};

static const char *describe(const char *cmd, const char *name, const char **arg)
{
	char key[128];
	size_t i;
	int pass;

	/* "cmd:name" first (pass 0), wherever it stands, then "name" */
	snprintf(key, sizeof(key), "%s:%s", cmd, name);
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < sizeof(options) / sizeof(options[0]); i++)
			if (!strcmp(options[i].key, pass ? name : key)) {
				*arg = options[i].arg;
				return options[i].text;
			}
	*arg = NULL;
	return "";
}

/* True when `usage` names the option --name: a table may hold options a
 * command refuses (heartbeat's --reason, in the control commands' shared
 * table), and the help says what the usage says. */
static int in_usage(const char *usage, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	if (!strcmp(name, "help"))
		return 1;
	for (p = usage; (p = strstr(p, "--")); p += 2)
		if (!strncmp(p + 2, name, n) &&
		    !(p[2 + n] == '-' || (p[2 + n] >= 'a' && p[2 + n] <= 'z')))
			return 1;
	return 0;
}

int amp_cli_help(const char *cmd, const char *usage, const struct option *opts)
{
	const struct option *o;
	const char *arg;
	char left[96];

	fputs(usage, stdout);
	fputs("\noptions:\n", stdout);
	/* Tab-indented: completions/ read the usage lines, which start
	 * with spaces, and not these. */
	for (o = opts; o->name; o++) {
		const char *text = describe(cmd, o->name, &arg);

		if (!in_usage(usage, o->name))
			continue;
		if (o->has_arg == no_argument || !arg)
			snprintf(left, sizeof(left), "--%s", o->name);
		else
			snprintf(left, sizeof(left), "--%s%s%s", o->name,
				 arg[0] == '[' ? "" : " ", arg);
		printf("\t%-24s %s\n", left, text);
	}
	return AMP_EXIT_OK;
}

int amp_cli_bad_option(const char *cmd, const char *usage, const struct option *opts,
		       const char *arg)
{
	const char *names[128], *word = arg;
	size_t best[4], n = 0, found, i;
	char name[64];

	amp_cli_usage_error(cmd, usage, "unknown option or missing value: '%s'", arg);
	if (strncmp(word, "--", 2))
		return AMP_EXIT_USAGE;
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(word + 2, "="), word + 2);
	for (; opts[n].name && n < 128; n++)
		names[n] = opts[n].name;
	for (i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return AMP_EXIT_USAGE; /* known: its value is missing */
	if ((found = amp_similar(name, names, n, best, 4))) {
		fprintf(stderr, "\nThe most similar option%s\n", found == 1 ? " is" : "s are");
		for (i = 0; i < found; i++)
			fprintf(stderr, "\t--%s\n", names[best[i]]);
	}
	return AMP_EXIT_USAGE;
}
