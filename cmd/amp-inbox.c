/* amp inbox: what waits for a role, as of the tip it read. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "clock.h"
#include "inbox.h"
#include "util.h"

static const char usage[] =
	"usage: amp inbox <role> [--task <task_id>] [--all] [--json] [--repo <dir>]\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "task", required_argument, NULL, 't' },
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *task = NULL, *role;
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	amp_inbox in = { 0 };
	amp_error err;
	char *text = NULL;
	int64_t now;
	int c, all = 0, json_out = 0, code = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't': task = optarg; break;
		case 'a': all = 1; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default:
			return amp_cli_usage_error("inbox", usage, "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("inbox", argc, argv, "h", opts)))
		return code;
	if (argc - optind != 1)
		return amp_cli_usage_error("inbox", usage, "one role expected");
	role = argv[optind];
	if ((code = amp_cli_load_schemas("inbox", &set)) ||
	    (code = amp_cli_check_id("inbox", set, "<role>", role, "addressee_role")) ||
	    (task && (code = amp_cli_check_id("inbox", NULL, "--task", task, "task_id"))) ||
	    (code = amp_cli_open_store("inbox", repo, &st)))
		goto cleanup;
	if (amp_clock_now_ms(&now, &err) < 0 || amp_inbox_read(st, role, task, all, &in, &err) < 0) {
		code = amp_cli_fail("inbox", &err);
		goto cleanup;
	}
	if (!(text = amp_inbox_render(&in, role, amp_store_messages_ref(st), now, json_out,
				      amp_use_color(stdout)))) {
		amp_error_set(&err, AMP_EIO, "", "out of memory");
		code = amp_cli_fail("inbox", &err);
		goto cleanup;
	}
	fputs(text, stdout);
cleanup:
	free(text);
	amp_inbox_free(&in);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
