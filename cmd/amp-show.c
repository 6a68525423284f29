/* amp show: one message of the SSOT, whole, with its ACK and, on request,
 * the chain of messages it refers to. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "base/human.h"
#include "read/read.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp show <msg_id> [--context] [--json] " AMP_HUMAN_USAGE " [--repo <dir>]\n";

static amp_human h;

/* Where the human lines go: fitted to the terminal (human.h). */
#define OUT amp_human_out(&h)

/* A member for the terminal: escaped by amp_term, "-" when absent. */
static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? amp_term(s) : "-";
}

static long long num(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

/* A record's time member, in the zone and width of every listing. */
static const char *when(const json_t *o, const char *key, char buf[AMP_HUMAN_TIME_BUFSZ])
{
	/* The detail view has the room for absolute times (and says how
	 * far they are). */
	return amp_human_time(&h, json_string_value(json_object_get(o, key)), buf);
}

static const char *dur(const json_t *o, const char *key, char buf[AMP_DURATION_BUFSZ])
{
	return amp_duration_format(num(o, key), buf);
}

/* The ACK line: `a` is the message's entry in its task's status (NULL when
 * the task cannot be read, `why` saying why). */
static void print_ack(const json_t *doc, const json_t *a, const char *why)
{
	const char *state = str(a, "ack_state");
	char t[AMP_HUMAN_TIME_BUFSZ], d[AMP_DURATION_BUFSZ], late[AMP_DURATION_BUFSZ];

	fprintf(OUT, "ack         ");
	if (json_is_true(json_object_get(doc, "requires_ack")))
		fprintf(OUT, "required within %s: ", dur(doc, "ack_timeout_sec", d));
	if (!a) {
		fprintf(OUT, "unknown: %s\n", amp_term(why));
		return;
	}
	if (json_is_string(json_object_get(a, "kind"))) {
		/* set aside by amp sync: not in force, so no ACK is due */
		fprintf(OUT, "none: superseded%s%s: %s\n", json_is_string(json_object_get(a, "by")) ? " by " : "",
		             json_is_string(json_object_get(a, "by")) ? str(a, "by") : "", str(a, "reason"));
		return;
	}
	if (!strcmp(state, "acked")) {
		fprintf(OUT, "acked by %s at %s (after %s", str(a, "acked_by"), when(a, "acked_at", t),
		             dur(a, "ack_seconds", d));
		if (json_is_integer(json_object_get(a, "ack_late_seconds")))
			fprintf(OUT, ", %s%s late%s", amp_human_sgr(&h, AMP_SGR_RED),
			             dur(a, "ack_late_seconds", late), amp_human_sgr(&h, AMP_SGR_RESET));
		fprintf(OUT, ")\n");
	} else if (!strcmp(state, "pending")) {
		fprintf(OUT, "due in %s, at %s\n", dur(a, "ack_seconds", d), when(a, "ack_deadline", t));
	} else if (!strcmp(state, "overdue")) {
		fprintf(OUT, "%soverdue %s%s, due at %s\n", amp_human_sgr(&h, AMP_SGR_RED), dur(a, "ack_seconds", d),
		             amp_human_sgr(&h, AMP_SGR_RESET), when(a, "ack_deadline", t));
	} else if (!strcmp(state, "awaiting_approval")) {
		fprintf(OUT, "none before the admin's approval\n");
	} else {
		fprintf(OUT, "not required\n");
	}
}

/* One message for the terminal: its envelope, ACK, references and payload,
 * every message-derived byte through amp_term. */
static int print_message(amp_store *st, git_tree *tip, const amp_stored_msg *m,
			 int64_t now, json_t *cache, const char *agent, amp_error *out_err)
{
	const json_t *doc = m->doc, *ack, *ref;
	char *payload, t[AMP_HUMAN_TIME_BUFSZ], ago[AMP_HUMAN_REL_BUFSZ];
	int64_t sent;
	amp_error err = { 0 };
	size_t i;

	fprintf(OUT, "message     %s\n", amp_term(m->msg_id));
	if (*m->referenced_by)
		fprintf(OUT, "named by    %s\n", amp_term(m->referenced_by));
	fprintf(OUT, "type        %s\ntask        %s\nfrom        %s -> %s\nsent        %s",
	             str(doc, "type"), str(doc, "task_id"), str(doc, "from"), str(doc, "to"),
	             when(doc, "timestamp", t));
	if (amp_time_parse(amp_or_none(json_string_value(json_object_get(doc, "timestamp"))), &sent) == 0)
		fprintf(OUT, "  (%s)", amp_human_ago(sent, now, ago));
	fputc('\n', OUT);
	/* The named instance that wrote it, when its commit names one. */
	if (agent && *agent)
		fprintf(OUT, "agent       %s\n", amp_term(agent));
	ack = amp_read_ack_state(st, tip, m->msg_id, now, cache, &err);
	/* A task that could not be read for memory is no fact to show */
	if (!ack && err.status == AMP_EIO && strstr(err.message, "out of memory")) {
		*out_err = err;
		return -1;
	}
	print_ack(doc, ack, err.message);
	if (!json_array_size(json_object_get(doc, "context_ref")))
		fprintf(OUT, "context     none\n");
	json_array_foreach(json_object_get(doc, "context_ref"), i, ref)
		fprintf(OUT, "%s%s\n", i ? "            " : "context     ",
		             json_is_string(ref) ? amp_term(json_string_value(ref)) : "(not a string)");
	fprintf(OUT, "payload\n");
	payload = amp_json_dumps(json_object_get(doc, "payload") ? json_object_get(doc, "payload") : json_null(),
				 JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	if (!payload)
		return amp_error_set(out_err, AMP_EIO, "", "out of memory");
	/* JSON escapes the C0 controls, not the C1 ones nor the bidi
	 * overrides: each line goes through amp_term as a whole. */
	for (char *line = payload, *nl; line && *line; line = nl ? nl + 1 : line + strlen(line)) {
		if ((nl = strchr(line, '\n')))
			*nl = '\0';
		fprintf(OUT, "  %s\n", amp_term(line));
	}
	free(payload);
	return AMP_OK;
}

/* What stands in --json --context for a message that cannot be shown. */
static json_t *placeholder(const amp_stored_msg *m)
{
	return json_pack("{s:s,s:s,s:s,s:s}", "msg_id", amp_json_text(m->msg_id),
			 "unavailable", m->state == AMP_STORED_MISSING ? "missing" : "unreadable",
			 "reason", amp_json_text(m->reason),
			 "referenced_by", amp_json_text(m->referenced_by));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "context", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		AMP_HUMAN_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL;
	amp_store *st = NULL;
	git_tree *tip = NULL;
	amp_stored_msg msg = { 0 }, *chain = NULL;
	amp_error err;
	json_t *cache = NULL, *out = NULL;
	char task[64], agent[AMP_AGENT_MAX + 1] = "";
	size_t n = 0, i;
	int64_t now;
	int c, json_out = 0, context = 0, truncated = 0, code = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': context = 1; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		case 'h': return amp_cli_help("show", usage, opts);
		default:
			if ((code = amp_human_option(&h, c, optarg, &err)) > 0)
				break;
			if (code < 0)
				return amp_cli_usage_error("show", usage, "%s", err.message);
			return amp_cli_bad_option("show", usage, opts, argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("show", argc, argv, "h", opts)))
		return code;
	if (argc - optind != 1)
		return amp_cli_usage_error("show", usage, "one msg_id");
	if ((code = amp_cli_check_id("show", NULL, "<msg_id>", argv[optind], "msg_id")) ||
	    (code = amp_cli_open_store("show", repo, &st)))
		goto cleanup;
	amp_human_start(&h, amp_store_repo(st), json_out, 1);
	/* The logs of the tasks read for ACK states, each read once. */
	cache = json_object();
	if (amp_clock_now_ms(&now, &err) < 0 ||
	    amp_store_tip(st, amp_store_messages_ref(st), NULL, &tip, &err) < 0 ||
	    amp_read_message(st, tip, argv[optind], &msg, &err) < 0) {
		code = amp_cli_fail("show", &err);
		goto cleanup;
	}
	/* Like `amp status` of an unknown task: the operand names nothing. */
	if (msg.state == AMP_STORED_MISSING) {
		amp_error_set(&err, AMP_EUSAGE, "", "no message %s in the SSOT", msg.msg_id);
		code = amp_cli_fail("show", &err);
		goto cleanup;
	}
	/* --json is the stored bytes, whatever they are. */
	if (json_out && !context && msg.raw) {
		fwrite(msg.raw, 1, msg.len, stdout);
		goto cleanup;
	}
	if (msg.state == AMP_STORED_UNREADABLE) {
		amp_error_set(&err, AMP_EIO, "", "%s: %s", msg.path, msg.reason);
		code = amp_cli_fail("show", &err);
		goto cleanup;
	}
	if (context &&
	    amp_read_context(st, tip, &msg, AMP_CONTEXT_MAX, &chain, &n, &truncated, &err) < 0) {
		code = amp_cli_fail("show", &err);
		goto cleanup;
	}
	if (truncated)
		fprintf(stderr, "amp show: warning: %s names more than %d messages: the %d nearest are shown\n",
			amp_term(msg.msg_id), AMP_CONTEXT_MAX, AMP_CONTEXT_MAX);
	if (json_out) {
		out = json_array();
		for (i = 0; i < n; i++)
			json_array_append_new(out, chain[i].state == AMP_STORED_OK ?
					      json_incref(chain[i].doc) : placeholder(&chain[i]));
		json_array_append(out, msg.doc);
		amp_cli_print_result("show-context", "messages", out, 1);
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		if (chain[i].state == AMP_STORED_OK) {
			if (print_message(st, tip, &chain[i], now, cache, NULL, &err) < 0) {
				code = amp_cli_fail("show", &err);
				goto cleanup;
			}
		} else {
			fprintf(OUT, "message     %s\nnamed by    %s\n%-11s %s%s%s\n", amp_term(chain[i].msg_id),
			             amp_term(chain[i].referenced_by),
			             chain[i].state == AMP_STORED_MISSING ? "missing" : "unreadable",
			             amp_term(chain[i].path), *chain[i].path ? ": " : "",
			             amp_term(chain[i].reason));
		}
		fputc('\n', OUT);
	}
	/* One walk of its task's history, for the message asked only: a
	 * --context chain would walk once per message. */
	if (amp_msg_id_task(msg.msg_id, task, sizeof(task)) == 0 &&
	    amp_read_writer(st, task, AMP_ENTRY_MSG, msg.msg_id, agent, sizeof(agent), &err) < 0) {
		code = amp_cli_fail("show", &err);
		goto cleanup;
	}
	if (print_message(st, tip, &msg, now, cache, agent, &err) < 0)
		code = amp_cli_fail("show", &err);
cleanup:
	amp_human_out_end(&h);
	json_decref(out);
	json_decref(cache);
	amp_stored_msgv_free(chain, n);
	amp_stored_msg_free(&msg);
	git_tree_free(tip);
	amp_store_free(st);
	return code;
}
