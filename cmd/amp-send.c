/* amp send: build (or take), validate and commit one message to the SSOT. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "record/record.h"
#include "store/store.h"
#include "write/write.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp send <type> --task <id> --payload <file>|- [--from <role>] [--to <role>]\n"
	"                [--context-ref <msg_id>]... [--ack-timeout <1..604800 sec>] [--no-ack]\n"
	"                [--idempotency-key <key>] [--agent <name>] [--sync|--no-sync] [--json]\n"
	"                [--repo <dir>]\n"
	"   or: amp send --envelope <file>|- [--idempotency-key <key>] [--sync|--no-sync] [--json]\n"
	"                [--repo <dir>]\n"
	"   or: amp send <type> --template [--task <id>] [--repo <dir>]\n"
	"types: task_dispatch task_result review_request review_verdict escalation\n"
	"--template prints an example payload for <type>, made from its schema, that\n"
	"amp send takes as it is; with --task its references, snapshot and repo are\n"
	"the task's in the SSOT. Fill it in and pass it to --payload. Each field's\n"
	"meaning, type and bounds: amp schema <type>.\n";

/* --template: the example payload of argv[optind], with the facts of
 * `task` when given; `other` says another message option was given. */
static int print_template(int argc, char **argv, const char *task,
			  const char *repo, int other)
{
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	json_t *facts = NULL, *payload = NULL;
	amp_error err;
	char uri[AMP_PATH_MAX];
	int code;

	if (other || optind != argc - 1)
		return amp_cli_usage_error("send", usage, "--template takes a message type and only --task and --repo");
	if (!amp_type_lookup(argv[optind]) ||
	    amp_template_schema_uri(argv[optind], uri, sizeof(uri)) < 0)
		return amp_cli_usage_error("send", usage, "unknown message type '%s'", argv[optind]);
	if ((code = amp_cli_load_schemas("send", &set)) ||
	    (task && ((code = amp_cli_check_id("send", set, "--task", task, "task_id")) ||
		      (code = amp_cli_open_ssot("send", repo, &st)))))
		goto cleanup;
	if ((task && amp_template_facts(st, task, &facts, &err) < 0) ||
	    amp_template_build(set, uri, facts, &payload, &err) < 0) {
		code = amp_cli_fail("send", &err);
		goto cleanup;
	}
	amp_cli_print_json(payload, 1);
cleanup:
	json_decref(payload);
	json_decref(facts);
	amp_store_free(st);
	amp_schema_set_free(set);
	return code;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "task", required_argument, NULL, 't' },
		{ "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 'o' },
		{ "payload", required_argument, NULL, 'p' },
		{ "context-ref", required_argument, NULL, 'c' },
		{ "ack-timeout", required_argument, NULL, 'a' },
		{ "no-ack", no_argument, NULL, 'n' },
		{ "envelope", required_argument, NULL, 'e' },
		{ "idempotency-key", required_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		AMP_CLI_AGENT_OPTION,
		AMP_CLI_SYNC_OPTIONS,
		{ "template", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *task = NULL, *from = NULL, *to = NULL, *payload_file = NULL;
	const char *envelope_file = NULL, *repo = NULL, *type = NULL, *source;
	amp_message_fields f = { 0 };
	amp_send_opts sopts = { "send", NULL, NULL, 0, 0, NULL };
	amp_send_result res;
	amp_errlist errors = { 0 };
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	amp_error err;
	json_t *context = json_array(), *payload = NULL, *msg = NULL, *ref;
	char *raw = NULL;
	size_t raw_len = 0, i;
	int sync = -1;
	int c, json_out = 0, no_ack = 0, template = 0, code = 0, status;
	long long ack_timeout = -1;

	amp_reccache_arena(); /* one message, then exit */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't': task = optarg; break;
		case 'f': from = optarg; break;
		case 'o': to = optarg; break;
		case 'p': payload_file = optarg; break;
		case 'c': json_array_append_new(context, json_string(optarg)); break;
		case 'a':
			if ((code = amp_cli_int("send", "--ack-timeout", optarg, 1,
						AMP_ACK_TIMEOUT_MAX, &ack_timeout)))
				goto cleanup;
			break;
		case 'n': no_ack = 1; break;
		case 'e': envelope_file = optarg; break;
		case 'k': sopts.idempotency_key = optarg; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		AMP_CLI_AGENT_CASE;
		AMP_CLI_SYNC_CASES(sync);
		case 'T': template = 1; break;
		case 'h': fputs(usage, stdout); goto cleanup;
		default:
			code = amp_cli_usage_error("send", usage, "unknown option or missing value: '%s'", argv[optind - 1]);
			goto cleanup;
		}
	}
	if ((code = amp_cli_check_args("send", argc, argv, "h", opts)) ||
	    (code = amp_cli_idempotency_key("send", &sopts.idempotency_key)))
		goto cleanup;
	if (template) {
		code = print_template(argc, argv, task, repo,
				      envelope_file || from || to || payload_file ||
				      json_array_size(context) || ack_timeout >= 0 ||
				      no_ack || sopts.idempotency_key || json_out || sync >= 0);
		goto cleanup;
	}
	if (envelope_file) {
		if (optind < argc || task || from || to || payload_file ||
		    json_array_size(context) || ack_timeout >= 0 || no_ack) {
			code = amp_cli_usage_error("send", usage, "--envelope takes a complete message and no other message option");
			goto cleanup;
		}
	} else {
		if (optind != argc - 1) {
			code = amp_cli_usage_error("send", usage, optind < argc ? "one message type expected" : "missing message type");
			goto cleanup;
		}
		type = argv[optind];
		if (!amp_type_lookup(type)) {
			code = amp_cli_usage_error("send", usage, "unknown message type '%s'", type);
			goto cleanup;
		}
		if (!task) {
			code = amp_cli_usage_error("send", usage, "--task is required");
			goto cleanup;
		}
		/* Every AMP/1.0 payload has required members: without one the
		 * user would get an error for each of them. */
		if (!payload_file) {
			code = amp_cli_usage_error("send", usage, "--payload is required (the %s payload: a JSON file, or - for stdin)", type);
			goto cleanup;
		}
		if (no_ack && ack_timeout >= 0) {
			code = amp_cli_usage_error("send", usage, "--no-ack and --ack-timeout exclude each other");
			goto cleanup;
		}
	}
	if ((code = amp_cli_load_schemas("send", &set)))
		goto cleanup;
	/* Each value against its schema definition first: one error about
	 * what the user typed, not several about the message built from it. */
	if (!envelope_file &&
	    ((code = amp_cli_check_id("send", set, "--task", task, "task_id")) ||
	     (from && (code = amp_cli_check_id("send", set, "--from", from, "sender_role"))) ||
	     (to && (code = amp_cli_check_id("send", set, "--to", to, "addressee_role")))))
		goto cleanup;
	json_array_foreach(context, i, ref)
		if ((code = amp_cli_check_id("send", set, "--context-ref",
					     json_string_value(ref), "msg_id")))
			goto cleanup;
	if ((code = amp_cli_open_ssot("send", repo, &st)))
		goto cleanup;

	if (envelope_file) {
		source = envelope_file;
		if ((status = amp_send_read_json(st, "send", envelope_file, "", &msg,
						 &raw, &raw_len, &errors)) < 0) {
			code = amp_cli_print_errors("send", &errors, status);
			goto cleanup;
		}
		sopts.raw = raw;
		sopts.raw_len = raw_len;
	} else {
		source = "built";
		if ((code = amp_cli_role("send", st, set, from, 1, &from)))
			goto cleanup;
		if (!to)
			to = amp_type_lookup(type)->default_to;
		if (payload_file &&
		    (status = amp_send_read_json(st, "send", payload_file, "/payload",
						 &payload, NULL, NULL, &errors)) < 0) {
			code = amp_cli_print_errors("send", &errors, status);
			goto cleanup;
		}
		f.type = type;
		f.task_id = task;
		f.from = from;
		f.to = to;
		f.payload = payload;
		f.context_ref = context;
		/* Asking for a timeout is asking for an ACK (escalations: "ACK Optional"). */
		f.requires_ack = no_ack ? 0 : ack_timeout >= 0 ? 1 : -1;
		f.ack_timeout_sec = (int)ack_timeout;
		if ((status = amp_clock_now_ms(&f.now_ms, &err)) < 0 ||
		    (status = amp_message_build(&msg, &f, &err)) < 0) {
			code = amp_cli_fail("send", &err);
			goto cleanup;
		}
		sopts.assign_msg_id = 1;
	}
	sopts.source = source;
	status = amp_send_message(st, set, msg, &sopts, &res, &errors);
	if (status < 0) {
		code = amp_cli_print_errors("send", &errors, status);
		amp_cli_report_escalation("send", &res);
		/* a refusal that escalated: the escalation goes too */
		if (res.escalation_id[0])
			amp_cli_sync_after_write("send", st, set, sync);
		goto cleanup;
	}
	if (json_out) {
		json_t *out = json_pack("{s:s,s:b}", "msg_id", res.msg_id,
					"duplicate", res.duplicate);

		json_object_set_new(out, "escalation", res.escalation_id[0] ?
				    json_string(res.escalation_id) : json_null());
		amp_cli_print_json(out, 0);
		json_decref(out);
	} else {
		puts(amp_term(res.msg_id));
	}
	amp_cli_report_escalation("send", &res);
	amp_cli_warn_soft_waits("send", st, msg);
	if (res.duplicate)
		fprintf(stderr, "amp send: %s was already in the SSOT (nothing written)\n", amp_term(res.msg_id));
	code = amp_cli_sync_after_write("send", st, set, sync);
cleanup:
	/* For benchmarks and tests: how often the compare-and-swap had to
	 * start over, how many records were parsed from git or came from a
	 * record cache. */
	if (st && getenv("AMP_TRACE")) {
		unsigned long parsed, cached;

		amp_store_record_counts(st, &parsed, &cached);
		fprintf(stderr, "amp send: trace: retries=%lu records_parsed=%lu records_cached=%lu\n",
			amp_store_retries(st), parsed, cached);
	}
	amp_errlist_free(&errors);
	json_decref(context);
	json_decref(payload);
	json_decref(msg);
	free(raw);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
