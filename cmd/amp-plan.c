/* amp plan: a task's priority, deadline, lock threshold and capability. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "protocol/protocol.h"
#include "write/write.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp plan <task_id> [--priority P0|P1|P2|P3] [--deadline <time>]\n"
	"                [--max-iterations <1..1000>] [--capability <name>]\n"
	"                [--from coordinator|admin] [--agent <name>] [--sync|--no-sync] [--json]\n"
	"                [--repo <dir>]\n";

struct plan_args {
	const char *prio, *deadline, *iter, *capability;
	int priority;
	int64_t due;
	long long max_iter;
};

static int option(amp_cli_writer *w, int c)
{
	struct plan_args *a = w->ctx;

	switch (c) {
	case 'p': a->prio = optarg; break;
	case 'd': a->deadline = optarg; break;
	case 'm': a->iter = optarg; break;
	default: a->capability = optarg; break;
	}
	return 0;
}

static int check(amp_cli_writer *w)
{
	struct plan_args *a = w->ctx;

	if (!a->prio && !a->deadline && !a->iter && !a->capability)
		return amp_cli_usage_error("plan", usage, "nothing to plan: --priority, --deadline, --max-iterations or --capability");
	if (a->prio) {
		if (a->prio[0] != 'P' || a->prio[1] < '0' || a->prio[1] > '3' || a->prio[2])
			return amp_cli_usage_error("plan", usage, "--priority: '%s' is not P0, P1, P2 or P3", a->prio);
		a->priority = a->prio[1] - '0';
	}
	if (a->deadline && amp_time_parse(a->deadline, &a->due) < 0)
		return amp_cli_usage_error("plan", usage, "--deadline: '%s' is not an ISO 8601 time with offset (2026-02-26T14:32:07+00:00)",
					   a->deadline);
	if (a->capability && !amp_agent_valid(a->capability, strlen(a->capability)))
		return amp_cli_usage_error("plan", usage, "--capability: '%s' is not a name (1 to %d of A-Z a-z 0-9 . _ -)",
					   a->capability, AMP_AGENT_MAX);
	if (a->iter)
		return amp_cli_int("plan", "--max-iterations", a->iter, 1,
				   AMP_POLICY_LOCK_THRESHOLD_MAX, &a->max_iter);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "priority", required_argument, NULL, 'p' },
		{ "deadline", required_argument, NULL, 'd' },
		{ "max-iterations", required_argument, NULL, 'm' },
		{ "capability", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	struct plan_args a = { NULL, NULL, NULL, NULL, -1, -1, 0 };
	amp_cli_writer w = { .cmd = "plan", .usage = usage, .opts = opts, .option = option,
			     .usage_one = "one task id expected", .operand_name = "<task_id>",
			     .operand_def = "task_id", .role_required = 1, .check = check,
			     .ctx = &a };
	amp_coord_result res;
	int code, status;

	if ((code = amp_cli_write_open(&w, argc, argv)) != AMP_CLI_GO)
		return amp_cli_write_close(&w, code);
	status = amp_coord_plan_write(w.st, w.set, w.arg, a.priority, a.due, (int)a.max_iter,
				      a.capability, w.from, w.now_ms, &res, &w.errors);
	if (status >= 0)
		amp_cli_write_print(&w, json_pack("{s:s,s:s,s:s}", "task_id", w.arg,
						  "control", res.name, "from", w.from),
				    "planned %s (%s)", w.arg, res.name);
	return amp_cli_write_done(&w, status);
}
