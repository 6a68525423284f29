/* amp release: the holder gives a claimed task back (or the coordinator or
 * the admin takes it back). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "protocol/protocol.h"
#include "write/write.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp release <task_id> [--subtask <id>] [--reason <text>] [--agent <name>]\n"
	"                   [--from executor|coordinator|admin] [--sync|--no-sync] [--json]\n"
	"                   [--repo <dir>]\n";

struct release_args {
	const char *subtask, *reason;
};

static int option(amp_cli_writer *w, int c)
{
	struct release_args *a = w->ctx;

	if (c == 's')
		a->subtask = optarg;
	else
		a->reason = optarg;
	return 0;
}

static int check(amp_cli_writer *w)
{
	struct release_args *a = w->ctx;

	if ((a->subtask && !*a->subtask) || (a->reason && !*a->reason))
		return amp_cli_usage_error("release", usage, "--%s must not be empty",
					   a->subtask && !*a->subtask ? "subtask" : "reason");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "subtask", required_argument, NULL, 's' },
		{ "reason", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	struct release_args a = { NULL, NULL };
	amp_cli_writer w = { .cmd = "release", .usage = usage, .opts = opts, .option = option,
			     .usage_one = "one task id expected", .operand_name = "<task_id>",
			     .operand_def = "task_id", .check = check, .ctx = &a };
	amp_coord_result res;
	const char *from;
	int code, status;

	if ((code = amp_cli_write_open(&w, argc, argv)) != AMP_CLI_GO)
		return amp_cli_write_close(&w, code);
	from = w.from ? w.from : "executor";
	status = amp_coord_release(w.st, w.set, w.arg, a.subtask, from, amp_store_agent(w.st),
				   a.reason, w.now_ms, &res, &w.errors);
	if (status >= 0)
		amp_cli_write_print(&w, json_pack("{s:s,s:s?,s:s,s:s,s:s,s:s}", "task_id", w.arg,
						  "subtask_id", a.subtask, "release", res.name,
						  "releases", res.claim, "agent", res.agent,
						  "from", from),
				    "released %s: the lease of %s (%s) ended; the task is claimable again",
				    w.arg, res.agent, res.claim);
	return amp_cli_write_done(&w, status);
}
