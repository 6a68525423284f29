/* amp verdict: the reviewer's review_verdict on a task. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "store/store.h"
#include "base/util.h"
#include "write/write.h"

static const char usage[] =
	"usage: amp verdict <task_id> --decision approved|approved_with_fix|rejected --confidence <0..1>\n"
	"                   [--payload <file>|-] [--architecture-notes <text>] [--context-ref <msg_id>]\n"
	"                   [--from <role>] [--agent <name>] [--idempotency-key <key>] [--sync|--no-sync] [--json]\n"
	"                   [--repo <dir>]\n"
	"The payload file holds criteria_results, issues, direct_fixes, architecture_notes.\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "decision", required_argument, NULL, 'd' },
		{ "confidence", required_argument, NULL, 'c' },
		{ "payload", required_argument, NULL, 'p' },
		{ "architecture-notes", required_argument, NULL, 'a' },
		{ "context-ref", required_argument, NULL, 'x' },
		{ "from", required_argument, NULL, 'f' },
		{ "idempotency-key", required_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		AMP_CLI_AGENT_OPTION,
		AMP_CLI_SYNC_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	amp_verdict_fields f = { 0 };
	amp_send_result res;
	amp_errlist errors = { 0 };
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	amp_error err;
	const char *repo = NULL, *payload_file = NULL, *from = NULL;
	json_t *payload = NULL;
	int sync = -1;
	int c, json_out = 0, code = 0, status;

	f.confidence = -1;
	amp_reccache_arena(); /* one message, then exit */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': f.decision = optarg; break;
		case 'c':
			if ((code = amp_cli_real("verdict", "--confidence", optarg, 0, 1,
						 &f.confidence)))
				return code;
			break;
		case 'p': payload_file = optarg; break;
		case 'a': f.architecture_notes = optarg; break;
		case 'x': f.context_ref = optarg; break;
		case 'f': from = optarg; break;
		case 'k': f.idempotency_key = optarg; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		AMP_CLI_AGENT_CASE;
		AMP_CLI_SYNC_CASES(sync);
		case 'h': fputs(usage, stdout); return 0;
		default:
			return amp_cli_usage_error("verdict", usage, "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("verdict", argc, argv, "h", opts)) ||
	    (code = amp_cli_idempotency_key("verdict", &f.idempotency_key)))
		return code;
	if (optind != argc - 1)
		return amp_cli_usage_error("verdict", usage, "one task id expected");
	if (!f.decision || (strcmp(f.decision, "approved") && strcmp(f.decision, "approved_with_fix") &&
			    strcmp(f.decision, "rejected")))
		return amp_cli_usage_error("verdict", usage, "--decision approved, approved_with_fix or rejected is required");
	if (f.confidence < 0)
		return amp_cli_usage_error("verdict", usage, "--confidence is required");
	if ((code = amp_cli_load_schemas("verdict", &set)) ||
	    (code = amp_cli_check_id("verdict", set, "<task_id>", argv[optind], "task_id")) ||
	    (f.context_ref &&
	     (code = amp_cli_check_id("verdict", set, "--context-ref", f.context_ref, "msg_id"))) ||
	    (code = amp_cli_open_ssot("verdict", repo, &st)) ||
	    (code = amp_cli_role("verdict", st, set, from, 0, &f.from)))
		goto cleanup;
	if (payload_file &&
	    (status = amp_send_read_json(st, "verdict", payload_file, "/payload",
					 &payload, NULL, NULL, &errors)) < 0) {
		code = amp_cli_print_errors("verdict", &errors, status);
		goto cleanup;
	}
	if ((status = amp_clock_now_ms(&f.now_ms, &err)) < 0) {
		code = amp_cli_fail("verdict", &err);
		goto cleanup;
	}
	f.task_id = argv[optind];
	f.payload = payload;
	status = amp_verdict_send(st, set, &f, &res, &errors);
	if (status < 0) {
		code = amp_cli_print_errors("verdict", &errors, status);
		amp_cli_report_escalation("verdict", &res);
		/* a refusal that escalated: the escalation goes too */
		if (res.escalation_id[0])
			amp_cli_sync_after_write("verdict", st, set, sync);
		goto cleanup;
	}
	if (json_out) {
		json_t *out = json_pack("{s:s,s:b}", "msg_id", res.msg_id, "duplicate", res.duplicate);

		json_object_set_new(out, "escalation", res.escalation_id[0] ?
				    json_string(res.escalation_id) : json_null());
		amp_cli_print_json(out, 0);
		json_decref(out);
	} else {
		puts(res.msg_id);
	}
	amp_cli_report_escalation("verdict", &res);
	code = amp_cli_sync_after_write("verdict", st, set, sync);
cleanup:
	amp_errlist_free(&errors);
	json_decref(payload);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
