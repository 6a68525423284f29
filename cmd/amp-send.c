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
	"usage: amp send <type> --task <id> --payload <file>|- [--from <role>] [--to <role>|<agent>@<role>]\n"
	"                [--context-ref <msg_id>]... [--ack-timeout <1..604800 sec>] [--no-ack]\n"
	"                [--idempotency-key <key>] [--agent <name>] [--sync|--no-sync] [--json]\n"
	"                [--repo <dir>]\n"
	"   or: amp send --envelope <file>|- [--idempotency-key <key>] [--sync|--no-sync] [--json]\n"
	"                [--repo <dir>]\n"
	"   or: amp send <type> --template [--task <id>] [--repo <dir>]\n"
	"types: task_dispatch task_result review_request review_verdict escalation\n"
	"--template prints an example payload for <type>, made from its schema: its\n"
	"placeholders start with example- (the repo is /example-repo); filled in, amp\n"
	"send takes it. With --task, what the SSOT knows is filled in: references,\n"
	"snapshot, the dispatch's repo, its first subtask, one entry per criterion.\n"
	"Pass it to --payload. Each field's meaning, type and bounds: amp schema <type>.\n";

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
	/* Without a task, the work repository is a placeholder like the
	 * others ("example-..."): "/" (the shortest path the schema takes)
	 * is no repository, and amp send refused it. */
	if (!task && !(facts = json_pack("{s:[], s:{s:s}}", "msg_ids", "values",
					 "repo", "/example-repo"))) {
		amp_error_set(&err, AMP_EIO, "", "out of memory");
		code = amp_cli_fail("send", &err);
		goto cleanup;
	}
	if ((task && amp_template_facts(st, task, &facts, &err) < 0) ||
	    amp_template_build(set, uri, facts, &payload, &err) < 0) {
		code = amp_cli_fail("send", &err);
		goto cleanup;
	}
	amp_cli_print_document(payload, 1);
cleanup:
	json_decref(payload);
	json_decref(facts);
	amp_store_free(st);
	amp_schema_set_free(set);
	return code;
}

/* What the command line says. */
struct send_args {
	const char *task, *from, *to, *payload_file, *envelope_file, *repo, *type;
	json_t *context; /* --context-ref, in order */
	long long ack_timeout;
	int no_ack, template, json_out, sync;
	amp_send_opts sopts;
};

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

/* Reads the options into a.  -1 to go on, else the exit code (0 after
 * --help). */
static int parse_options(int argc, char **argv, struct send_args *a)
{
	int c, code;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't': a->task = optarg; break;
		case 'f': a->from = optarg; break;
		case 'o': {
			/* --to alice@executor: one instance of the role (an
			 * address record beside the message). */
			char *at = strchr(optarg, '@');

			a->to = optarg;
			if (at) {
				*at = '\0';
				a->sopts.to_agent = optarg;
				a->to = at + 1;
				if (!amp_agent_valid(optarg, strlen(optarg)))
					return amp_cli_usage_error("send", usage, "--to %s@%s: not an agent name %s",
								   amp_term(optarg), amp_term(a->to),
								   amp_agent_problem(optarg, strlen(optarg)));
			}
			break;
		}
		case 'p': a->payload_file = optarg; break;
		case 'c': json_array_append_new(a->context, json_string(optarg)); break;
		case 'a':
			if ((code = amp_cli_int("send", "--ack-timeout", optarg, 1,
						AMP_ACK_TIMEOUT_MAX, &a->ack_timeout)))
				return code;
			break;
		case 'n': a->no_ack = 1; break;
		case 'e': a->envelope_file = optarg; break;
		case 'k': a->sopts.idempotency_key = optarg; break;
		case 'j': a->json_out = 1; break;
		case 'r': a->repo = optarg; break;
		AMP_CLI_AGENT_CASE;
		AMP_CLI_SYNC_CASES(a->sync);
		case 'T': a->template = 1; break;
		case 'h': return amp_cli_help("send", usage, opts);
		default:
			return amp_cli_bad_option("send", usage, opts, argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("send", argc, argv, "h", opts)) ||
	    (code = amp_cli_idempotency_key("send", &a->sopts.idempotency_key)))
		return code;
	return -1;
}

/* The combinations of options the command refuses (usage, exit 2): 0 or
 * the exit code. */
static int check_usage(int argc, char **argv, struct send_args *a)
{
	if (a->envelope_file) {
		if (optind < argc || a->task || a->from || a->to || a->payload_file ||
		    json_array_size(a->context) || a->ack_timeout >= 0 || a->no_ack)
			return amp_cli_usage_error("send", usage, "--envelope takes a complete message and no other message option");
		return 0;
	}
	if (optind != argc - 1)
		return amp_cli_usage_error("send", usage, optind < argc ? "one message type expected" : "missing message type");
	a->type = argv[optind];
	if (!amp_type_lookup(a->type))
		return amp_cli_usage_error("send", usage, "unknown message type '%s'", a->type);
	if (!a->task)
		return amp_cli_usage_error("send", usage, "--task is required");
	/* Every AMP/1.0 payload has required members: without one the
	 * user would get an error for each of them. */
	if (!a->payload_file)
		return amp_cli_usage_error("send", usage, "--payload is required (the %s payload: a JSON file, or - for stdin)", a->type);
	if (a->no_ack && a->ack_timeout >= 0)
		return amp_cli_usage_error("send", usage, "--no-ack and --ack-timeout exclude each other");
	return 0;
}

/* Each value against its schema definition first: one error about what
 * the user typed, not several about the message built from it.  0 or the
 * exit code. */
static int check_values(amp_schema_set *set, const struct send_args *a)
{
	json_t *ref;
	size_t i;
	int code = 0;

	if (!a->envelope_file &&
	    ((code = amp_cli_check_id("send", set, "--task", a->task, "task_id")) ||
	     (a->from && (code = amp_cli_check_id("send", set, "--from", a->from, "sender_role"))) ||
	     (a->to && (code = amp_cli_check_id("send", set, "--to", a->to, "addressee_role")))))
		return code;
	json_array_foreach(a->context, i, ref)
		if ((code = amp_cli_check_id("send", set, "--context-ref",
					     json_string_value(ref), "msg_id")))
			return code;
	return 0;
}

/* The message of the options (not --envelope) into *msg, its payload read
 * into *payload (the caller frees both).  0 or the exit code, printed. */
static int build_message(amp_store *st, amp_schema_set *set, struct send_args *a,
			 json_t **payload, json_t **msg, amp_errlist *errors)
{
	amp_message_fields f = { 0 };
	amp_error err;
	int code, status;

	if ((code = amp_cli_role("send", st, set, a->from, 1, &a->from)))
		return code;
	if (!a->to)
		a->to = amp_type_lookup(a->type)->default_to;
	if (a->payload_file &&
	    (status = amp_send_read_json(st, "send", a->payload_file, "/payload",
					 payload, NULL, NULL, errors)) < 0)
		return amp_cli_print_errors("send", errors, status);
	f.type = a->type;
	f.task_id = a->task;
	f.from = a->from;
	f.to = a->to;
	f.payload = *payload;
	f.context_ref = a->context;
	/* Asking for a timeout is asking for an ACK (escalations: "ACK Optional"). */
	f.requires_ack = a->no_ack ? 0 : a->ack_timeout >= 0 ? 1 : -1;
	f.ack_timeout_sec = (int)a->ack_timeout;
	if (amp_clock_now_ms(&f.now_ms, &err) < 0 || amp_message_build(msg, &f, &err) < 0)
		return amp_cli_fail("send", &err);
	a->sopts.assign_msg_id = 1;
	return 0;
}

/* After amp_send_message returned `status`: the errors, or the result;
 * then the sync.  Returns the exit code. */
static int report(amp_store *st, amp_schema_set *set, const struct send_args *a,
		  const json_t *msg, int status, const amp_send_result *res,
		  const amp_errlist *errors)
{
	int code;

	if (status < 0) {
		code = amp_cli_print_errors("send", errors, status);
		amp_cli_report_escalation("send", res);
		/* a refusal that escalated: the escalation goes too */
		if (res->escalation_id[0])
			amp_cli_sync_after_write("send", st, set, a->sync);
		return code;
	}
	if (a->json_out) {
		json_t *out = json_pack("{s:s,s:b}", "msg_id", res->msg_id,
					"duplicate", res->duplicate);

		json_object_set_new(out, "escalation", res->escalation_id[0] ?
				    json_string(res->escalation_id) : json_null());
		amp_cli_print_json(out, 0);
		json_decref(out);
	} else {
		puts(amp_term(res->msg_id));
	}
	amp_cli_report_escalation("send", res);
	amp_cli_warn_soft_waits("send", st, msg);
	if (res->duplicate)
		fprintf(stderr, "amp send: %s was already in the SSOT (nothing written)\n", amp_term(res->msg_id));
	return amp_cli_sync_after_write("send", st, set, a->sync);
}

int main(int argc, char **argv)
{
	struct send_args a = { .context = json_array(), .ack_timeout = -1, .sync = -1,
			       .sopts = { "send", NULL, NULL, 0, 0, NULL, 0, NULL } };
	amp_send_result res;
	amp_errlist errors = { 0 };
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	json_t *payload = NULL, *msg = NULL;
	char *raw = NULL;
	size_t raw_len = 0;
	int code = 0, status;

	amp_reccache_arena(); /* one message, then exit */
	if ((code = parse_options(argc, argv, &a)) >= 0)
		goto cleanup;
	code = 0;
	if (a.template) {
		code = print_template(argc, argv, a.task, a.repo,
				      a.envelope_file || a.from || a.to || a.payload_file ||
				      json_array_size(a.context) || a.ack_timeout >= 0 ||
				      a.no_ack || a.sopts.idempotency_key || a.json_out || a.sync >= 0);
		goto cleanup;
	}
	if ((code = check_usage(argc, argv, &a)) ||
	    (code = amp_cli_load_schemas("send", &set)) ||
	    (code = check_values(set, &a)) ||
	    (code = amp_cli_open_ssot("send", a.repo, &st)))
		goto cleanup;
	if (a.envelope_file) {
		a.sopts.source = a.envelope_file;
		if ((status = amp_send_read_json(st, "send", a.envelope_file, "", &msg,
						 &raw, &raw_len, &errors)) < 0) {
			code = amp_cli_print_errors("send", &errors, status);
			goto cleanup;
		}
		a.sopts.raw = raw;
		a.sopts.raw_len = raw_len;
	} else {
		a.sopts.source = "built";
		if ((code = build_message(st, set, &a, &payload, &msg, &errors)))
			goto cleanup;
	}
	status = amp_send_message(st, set, msg, &a.sopts, &res, &errors);
	code = report(st, set, &a, msg, status, &res, &errors);
cleanup:
	/* For benchmarks and tests: how often the compare-and-swap had to
	 * start over, how many records were parsed from git or came from a
	 * record cache. */
	amp_cli_trace("send", st);
	amp_errlist_free(&errors);
	json_decref(a.context);
	json_decref(payload);
	json_decref(msg);
	free(raw);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
