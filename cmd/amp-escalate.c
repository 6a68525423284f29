/* amp escalate: report to the admin what an agent cannot resolve. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "store/store.h"
#include "write/write.h"

static const char usage[] =
	"usage: amp escalate <task_id> --type <escalation_type> --severity critical|warning|info\n"
	"                    --description <text> [--from <role>] [--agent <name>] [--affected <msg_id>]...\n"
	"                    [--suggest <text>]... [--no-suspend] [--sync|--no-sync] [--json]\n"
	"                    [--repo <dir>]\n"
	"types: hallucination_lock ack_timeout branch_violation ci_failure conflict\n"
	"       heartbeat_timeout permission_denied unknown\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "type", required_argument, NULL, 't' },
		{ "severity", required_argument, NULL, 's' },
		{ "description", required_argument, NULL, 'd' },
		{ "from", required_argument, NULL, 'f' },
		{ "affected", required_argument, NULL, 'a' },
		{ "suggest", required_argument, NULL, 'g' },
		{ "no-suspend", no_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		AMP_CLI_AGENT_OPTION,
		AMP_CLI_SYNC_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	amp_escalation e = { 0 };
	amp_send_result res;
	amp_errlist errors = { 0 };
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	amp_error err;
	json_t *affected = json_array(), *suggested = json_array(), *ref;
	const char *repo = NULL, *from = NULL;
	int sync = -1;
	int c, json_out = 0, code = 0, status;
	size_t i;

	e.auto_suspended = -1;
	amp_reccache_arena(); /* one message, then exit */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't': e.escalation_type = optarg; break;
		case 's': e.severity = optarg; break;
		case 'd': e.description = optarg; break;
		case 'f': from = optarg; break;
		case 'a': json_array_append_new(affected, json_string(optarg)); break;
		case 'g': json_array_append_new(suggested, json_string(optarg)); break;
		case 'n': e.auto_suspended = 0; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		AMP_CLI_AGENT_CASE;
		AMP_CLI_SYNC_CASES(sync);
		case 'h': fputs(usage, stdout); goto cleanup;
		default:
			code = amp_cli_usage_error("escalate", usage, "unknown option or missing value: '%s'", argv[optind - 1]);
			goto cleanup;
		}
	}
	if ((code = amp_cli_check_args("escalate", argc, argv, "h", opts)))
		goto cleanup;
	if (optind != argc - 1) {
		code = amp_cli_usage_error("escalate", usage, "one task id expected");
		goto cleanup;
	}
	if (!e.escalation_type || !e.severity || !e.description) {
		code = amp_cli_usage_error("escalate", usage, "--type, --severity and --description are required");
		goto cleanup;
	}
	if (strcmp(e.severity, "critical") && strcmp(e.severity, "warning") && strcmp(e.severity, "info")) {
		code = amp_cli_usage_error("escalate", usage, "--severity: critical, warning or info, not '%s'", e.severity);
		goto cleanup;
	}
	if ((code = amp_cli_load_schemas("escalate", &set)) ||
	    (code = amp_cli_check_id("escalate", set, "<task_id>", argv[optind], "task_id")))
		goto cleanup;
	json_array_foreach(affected, i, ref)
		if ((code = amp_cli_check_id("escalate", set, "--affected",
					     json_string_value(ref), "msg_id")))
			goto cleanup;
	if ((code = amp_cli_open_ssot("escalate", repo, &st)) ||
	    (code = amp_cli_role("escalate", st, set, from, 1, &from)))
		goto cleanup;
	if ((status = amp_clock_now_ms(&e.now_ms, &err)) < 0) {
		code = amp_cli_fail("escalate", &err);
		goto cleanup;
	}
	e.task_id = argv[optind];
	e.from = from;
	e.affected_msgs = affected;
	e.suggested_actions = suggested;
	status = amp_send_escalation(st, set, &e, NULL, &res, &errors);
	if (status < 0) {
		code = amp_cli_print_errors("escalate", &errors, status);
		goto cleanup;
	}
	if (json_out) {
		json_t *out = json_pack("{s:s}", "msg_id", res.msg_id);

		amp_cli_print_json(out, 0);
		json_decref(out);
	} else {
		puts(res.msg_id);
	}
	code = amp_cli_sync_after_write("escalate", st, set, sync);
cleanup:
	amp_errlist_free(&errors);
	json_decref(affected);
	json_decref(suggested);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
