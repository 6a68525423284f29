/* amp release: the holder gives a claimed task back (or the coordinator or
 * the admin takes it back). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "protocol/protocol.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp release <task_id> [--subtask <id>] [--reason <text>] [--agent <name>]\n"
	"                   [--from executor|coordinator|admin] [--sync|--no-sync] [--json]\n"
	"                   [--repo <dir>]\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "subtask", required_argument, NULL, 's' },
		{ "reason", required_argument, NULL, 'R' },
		{ "from", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		AMP_CLI_AGENT_OPTION,
		AMP_CLI_SYNC_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *from = NULL, *subtask = NULL, *reason = NULL, *task;
	amp_coord_result res;
	amp_errlist errors = { 0 };
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	amp_error err;
	int64_t now;
	int c, json_out = 0, code = 0, sync = -1, status;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': subtask = optarg; break;
		case 'R': reason = optarg; break;
		case 'f': from = optarg; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		AMP_CLI_AGENT_CASE;
		AMP_CLI_SYNC_CASES(sync);
		case 'h': fputs(usage, stdout); return 0;
		default:
			return amp_cli_usage_error("release", usage, "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("release", argc, argv, "h", opts)))
		return code;
	if (optind != argc - 1)
		return amp_cli_usage_error("release", usage, "one task id expected");
	task = argv[optind];
	if ((subtask && !*subtask) || (reason && !*reason))
		return amp_cli_usage_error("release", usage, "--%s must not be empty",
					   subtask && !*subtask ? "subtask" : "reason");
	if ((code = amp_cli_load_schemas("release", &set)) ||
	    (code = amp_cli_check_id("release", set, "<task_id>", task, "task_id")) ||
	    (code = amp_cli_open_ssot("release", repo, &st)) ||
	    (code = amp_cli_role("release", st, set, from, 0, &from)))
		goto cleanup;
	if ((status = amp_clock_now_ms(&now, &err)) < 0) {
		code = amp_cli_fail("release", &err);
		goto cleanup;
	}
	status = amp_coord_release(st, set, task, subtask, from ? from : "executor",
				   amp_store_agent(st), reason, now, &res, &errors);
	if (status < 0) {
		code = amp_cli_print_errors("release", &errors, status);
		goto cleanup;
	}
	if (json_out) {
		json_t *out = json_pack("{s:s,s:s?,s:s,s:s,s:s,s:s}", "task_id", task,
					"subtask_id", subtask, "release", res.name,
					"releases", res.claim, "agent", res.agent,
					"from", from ? from : "executor");

		amp_cli_print_json(out, 0);
		json_decref(out);
	} else {
		printf("released %s: the lease of %s (%s) ended; the task is claimable again\n",
		       task, res.agent, res.claim);
	}
	code = amp_cli_sync_after_write("release", st, set, sync);
cleanup:
	amp_errlist_free(&errors);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
