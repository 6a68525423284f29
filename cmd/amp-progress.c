/* amp progress: the executor instance that holds a task reports how far it
 * is (SPEC-022 task_progress: a percent and a note), as a control record. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "store/store.h"
#include "write/write.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp progress <task_id> --percent <0..100> [--note <text>] [--subtask <id>]\n"
	"                    [--agent <name>] [--from executor] [--sync|--no-sync] [--json] [--repo <dir>]\n";

struct progress_args {
	const char *percent, *note, *subtask;
	long long value;
};

static int check(amp_cli_writer *w)
{
	struct progress_args *a = w->ctx;

	if (!a->percent)
		return amp_cli_usage_error("progress", usage, "--percent is required");
	if (a->subtask && !*a->subtask)
		return amp_cli_usage_error("progress", usage, "--subtask must not be empty");
	return amp_cli_int("progress", "--percent", a->percent, 0, 100, &a->value);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "percent", required_argument, NULL, 'p' },
		{ "note", required_argument, NULL, 'n' },
		{ "subtask", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct progress_args a = { NULL, NULL, NULL, 0 };
	const char **values[] = { &a.percent, &a.note, &a.subtask };
	amp_cli_writer w = { .cmd = "progress", .usage = usage, .opts = opts, .values = values,
			     AMP_CLI_TASK_OPERAND, .check = check, .ctx = &a, .role = "executor",
			     .role_why = "progress is reported by the executor that holds the task" };
	amp_coord_result res;
	int code, status;

	if ((code = amp_cli_write_open(&w, argc, argv)) != AMP_CLI_GO)
		return amp_cli_write_close(&w, code);
	status = amp_coord_progress(w.st, w.set, w.arg, a.subtask, amp_store_agent(w.st),
				    (int)a.value, a.note, w.now_ms, &res, &w.errors);
	if (status >= 0)
		amp_cli_write_print(&w, json_pack("{s:s,s:s?,s:s,s:I,s:s}", "task_id", w.arg,
						  "subtask_id", a.subtask, "agent", amp_store_agent(w.st),
						  "percent", (json_int_t)a.value, "record", res.name),
				    "progress of %s%s%s by %s: %lld%% (%s)", w.arg,
				    a.subtask ? " subtask " : "", a.subtask ? amp_term(a.subtask) : "",
				    amp_store_agent(w.st), a.value, res.name);
	return amp_cli_write_done(&w, status);
}
