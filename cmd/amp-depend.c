/* amp depend: a dispatch of a task waits for another task's approval. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "protocol/protocol.h"
#include "write/write.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp depend <task_id> --on <task_id> [--soft] [--from coordinator|admin]\n"
	"                  [--agent <name>] [--sync|--no-sync] [--json] [--repo <dir>]\n"
	"A dispatch of the task is refused (--soft: warned) until the other is approved.\n";

struct depend_args {
	const char *on;
	int soft;
};

static int option(amp_cli_writer *w, int c)
{
	struct depend_args *a = w->ctx;

	if (c == 'o')
		a->on = optarg;
	else
		a->soft = 1;
	return 0;
}

static int check(amp_cli_writer *w)
{
	return ((struct depend_args *)w->ctx)->on ? 0
		: amp_cli_usage_error("depend", usage, "--on is required");
}

static int check_ids(amp_cli_writer *w)
{
	return amp_cli_check_id("depend", w->set, "--on", ((struct depend_args *)w->ctx)->on,
				"task_id");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "on", required_argument, NULL, 'o' },
		{ "soft", no_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct depend_args a = { NULL, 0 };
	amp_cli_writer w = { .cmd = "depend", .usage = usage, .opts = opts, .option = option,
			     .usage_one = "one task id expected", .operand_name = "<task_id>",
			     .operand_def = "task_id", .role_required = 1, .check = check,
			     .check_ids = check_ids, .ctx = &a };
	amp_coord_result res;
	int code, status;

	if ((code = amp_cli_write_open(&w, argc, argv)) != AMP_CLI_GO)
		return amp_cli_write_close(&w, code);
	status = amp_coord_depend(w.st, w.set, w.arg, a.on, a.soft, w.from, w.now_ms, &res,
				  &w.errors);
	if (status >= 0)
		amp_cli_write_print(&w, json_pack("{s:s,s:s,s:b,s:s,s:s}", "task_id", w.arg,
						  "on", a.on, "soft", a.soft, "control", res.name,
						  "from", w.from),
				    "%s waits for %s%s (%s)", w.arg, a.on,
				    a.soft ? " (soft: a dispatch before is warned)" : "", res.name);
	return amp_cli_write_done(&w, status);
}
