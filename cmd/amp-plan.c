/* amp plan: a task's priority, deadline, lock threshold and capability. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "protocol/protocol.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp plan <task_id> [--priority P0|P1|P2|P3] [--deadline <time>]\n"
	"                [--max-iterations <1..1000>] [--capability <name>]\n"
	"                [--from coordinator|admin] [--agent <name>] [--sync|--no-sync] [--json]\n"
	"                [--repo <dir>]\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "priority", required_argument, NULL, 'p' },
		{ "deadline", required_argument, NULL, 'd' },
		{ "max-iterations", required_argument, NULL, 'm' },
		{ "capability", required_argument, NULL, 'c' },
		{ "from", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		AMP_CLI_AGENT_OPTION,
		AMP_CLI_SYNC_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *from = NULL, *prio = NULL, *deadline = NULL, *iter = NULL;
	const char *capability = NULL, *task;
	amp_coord_result res;
	amp_errlist errors = { 0 };
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	amp_error err;
	long long max_iter = 0;
	int64_t now, due = -1;
	int c, json_out = 0, code = 0, sync = -1, priority = -1, status;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': prio = optarg; break;
		case 'd': deadline = optarg; break;
		case 'm': iter = optarg; break;
		case 'c': capability = optarg; break;
		case 'f': from = optarg; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		AMP_CLI_AGENT_CASE;
		AMP_CLI_SYNC_CASES(sync);
		case 'h': fputs(usage, stdout); return 0;
		default:
			return amp_cli_usage_error("plan", usage, "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("plan", argc, argv, "h", opts)))
		return code;
	if (optind != argc - 1)
		return amp_cli_usage_error("plan", usage, "one task id expected");
	task = argv[optind];
	if (!prio && !deadline && !iter && !capability)
		return amp_cli_usage_error("plan", usage, "nothing to plan: --priority, --deadline, --max-iterations or --capability");
	if (prio) {
		if (prio[0] != 'P' || prio[1] < '0' || prio[1] > '3' || prio[2])
			return amp_cli_usage_error("plan", usage, "--priority: '%s' is not P0, P1, P2 or P3", prio);
		priority = prio[1] - '0';
	}
	if (deadline && amp_time_parse(deadline, &due) < 0)
		return amp_cli_usage_error("plan", usage, "--deadline: '%s' is not an ISO 8601 time with offset (2026-02-26T14:32:07+00:00)",
					   deadline);
	if (capability && !amp_agent_valid(capability, strlen(capability)))
		return amp_cli_usage_error("plan", usage, "--capability: '%s' is not a name (1 to %d of A-Z a-z 0-9 . _ -)",
					   capability, AMP_AGENT_MAX);
	if ((iter && (code = amp_cli_int("plan", "--max-iterations", iter, 1,
					 AMP_POLICY_LOCK_THRESHOLD_MAX, &max_iter))) ||
	    (code = amp_cli_load_schemas("plan", &set)) ||
	    (code = amp_cli_check_id("plan", set, "<task_id>", task, "task_id")) ||
	    (code = amp_cli_open_ssot("plan", repo, &st)) ||
	    (code = amp_cli_role("plan", st, set, from, 1, &from)))
		goto cleanup;
	if ((status = amp_clock_now_ms(&now, &err)) < 0) {
		code = amp_cli_fail("plan", &err);
		goto cleanup;
	}
	status = amp_coord_plan_write(st, set, task, priority, due, (int)max_iter, capability, from,
				      now, &res, &errors);
	if (status < 0) {
		code = amp_cli_print_errors("plan", &errors, status);
		goto cleanup;
	}
	if (json_out) {
		json_t *out = json_pack("{s:s,s:s,s:s}", "task_id", task, "control", res.name,
					"from", from);

		amp_cli_print_json(out, 0);
		json_decref(out);
	} else {
		printf("planned %s (%s)\n", task, res.name);
	}
	code = amp_cli_sync_after_write("plan", st, set, sync);
cleanup:
	amp_errlist_free(&errors);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
