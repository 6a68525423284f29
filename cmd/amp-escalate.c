/* amp escalate: report to the admin what an agent cannot resolve. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "store/store.h"
#include "write/write.h"

static const char usage[] =
	"usage: amp escalate <task_id> --type <escalation_type> --severity critical|warning|info\n"
	"                    --description <text> [--from <role>] [--agent <name>] [--affected <msg_id>]...\n"
	"                    [--suggest <text>]... [--no-suspend] [--sync|--no-sync] [--json]\n"
	"                    [--repo <dir>]\n"
	"types: hallucination_lock ack_timeout branch_violation ci_failure conflict\n"
	"       heartbeat_timeout permission_denied unknown\n";

struct escalate_args {
	amp_escalation e;
	json_t *affected, *suggested;
};

static int option(amp_cli_writer *w, int c)
{
	struct escalate_args *a = w->ctx;

	switch (c) {
	case 't': a->e.escalation_type = optarg; break;
	case 's': a->e.severity = optarg; break;
	case 'd': a->e.description = optarg; break;
	case 'a': json_array_append_new(a->affected, json_string(optarg)); break;
	case 'g': json_array_append_new(a->suggested, json_string(optarg)); break;
	default: a->e.auto_suspended = 0; break;
	}
	return 0;
}

static int check(amp_cli_writer *w)
{
	const amp_escalation *e = &((struct escalate_args *)w->ctx)->e;

	if (!e->escalation_type || !e->severity || !e->description)
		return amp_cli_usage_error("escalate", usage, "--type, --severity and --description are required");
	if (strcmp(e->severity, "critical") && strcmp(e->severity, "warning") && strcmp(e->severity, "info"))
		return amp_cli_usage_error("escalate", usage, "--severity: critical, warning or info, not '%s'", e->severity);
	return 0;
}

static int check_ids(amp_cli_writer *w)
{
	json_t *ref;
	size_t i;
	int code;

	json_array_foreach(((struct escalate_args *)w->ctx)->affected, i, ref)
		if ((code = amp_cli_check_id("escalate", w->set, "--affected",
					     json_string_value(ref), "msg_id")))
			return code;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "type", required_argument, NULL, 't' },
		{ "severity", required_argument, NULL, 's' },
		{ "description", required_argument, NULL, 'd' },
		{ "affected", required_argument, NULL, 'a' },
		{ "suggest", required_argument, NULL, 'g' },
		{ "no-suspend", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	struct escalate_args a = { .e = { .auto_suspended = -1 }, .affected = json_array(),
				   .suggested = json_array() };
	amp_cli_writer w = { .cmd = "escalate", .usage = usage, .opts = opts, .option = option,
			     .usage_one = "one task id expected", .operand_name = "<task_id>",
			     .operand_def = "task_id", .role_required = 1, .check = check,
			     .check_ids = check_ids, .ctx = &a };
	amp_send_result res;
	int code, status;

	amp_reccache_arena(); /* one message, then exit */
	if ((code = amp_cli_write_open(&w, argc, argv)) != AMP_CLI_GO) {
		code = amp_cli_write_close(&w, code);
		goto cleanup;
	}
	a.e.task_id = w.arg;
	a.e.from = w.from;
	a.e.affected_msgs = a.affected;
	a.e.suggested_actions = a.suggested;
	status = amp_send_escalation(w.st, w.set, &a.e, NULL, &res, &w.errors);
	if (status >= 0)
		amp_cli_write_print(&w, json_pack("{s:s}", "msg_id", res.msg_id), "%s", res.msg_id);
	code = amp_cli_write_done(&w, status);
cleanup:
	json_decref(a.affected);
	json_decref(a.suggested);
	return code;
}
