/* amp depend: a dispatch of a task waits for another task's approval. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "protocol/protocol.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp depend <task_id> --on <task_id> [--soft] [--from coordinator|admin]\n"
	"                  [--agent <name>] [--sync|--no-sync] [--json] [--repo <dir>]\n"
	"A dispatch of the task is refused (--soft: warned) until the other is approved.\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "on", required_argument, NULL, 'o' },
		{ "soft", no_argument, NULL, 's' },
		{ "from", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		AMP_CLI_AGENT_OPTION,
		AMP_CLI_SYNC_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *from = NULL, *on = NULL, *task;
	amp_coord_result res;
	amp_errlist errors = { 0 };
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	amp_error err;
	int64_t now;
	int c, json_out = 0, code = 0, sync = -1, soft = 0, status;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': on = optarg; break;
		case 's': soft = 1; break;
		case 'f': from = optarg; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		AMP_CLI_AGENT_CASE;
		AMP_CLI_SYNC_CASES(sync);
		case 'h': fputs(usage, stdout); return 0;
		default:
			return amp_cli_usage_error("depend", usage, "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("depend", argc, argv, "h", opts)))
		return code;
	if (optind != argc - 1)
		return amp_cli_usage_error("depend", usage, "one task id expected");
	if (!on)
		return amp_cli_usage_error("depend", usage, "--on is required");
	task = argv[optind];
	if ((code = amp_cli_load_schemas("depend", &set)) ||
	    (code = amp_cli_check_id("depend", set, "<task_id>", task, "task_id")) ||
	    (code = amp_cli_check_id("depend", set, "--on", on, "task_id")) ||
	    (code = amp_cli_open_ssot("depend", repo, &st)) ||
	    (code = amp_cli_role("depend", st, set, from, 1, &from)))
		goto cleanup;
	if ((status = amp_clock_now_ms(&now, &err)) < 0) {
		code = amp_cli_fail("depend", &err);
		goto cleanup;
	}
	status = amp_coord_depend(st, set, task, on, soft, from, now, &res, &errors);
	if (status < 0) {
		code = amp_cli_print_errors("depend", &errors, status);
		goto cleanup;
	}
	if (json_out) {
		json_t *out = json_pack("{s:s,s:s,s:b,s:s,s:s}", "task_id", task, "on", on,
					"soft", soft, "control", res.name, "from", from);

		amp_cli_print_json(out, 0);
		json_decref(out);
	} else {
		printf("%s waits for %s%s (%s)\n", task, on, soft ? " (soft: a dispatch before is warned)" : "",
		       res.name);
	}
	code = amp_cli_sync_after_write("depend", st, set, sync);
cleanup:
	amp_errlist_free(&errors);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
