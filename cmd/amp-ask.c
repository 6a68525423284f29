/* amp ask: the executor asks the coordinator a clarification question about
 * a task (SPEC-022 feedback), as a control record with an answer deadline. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "store/store.h"
#include "write/write.h"
#include "base/util.h"
#include "record/record.h"

static const char usage[] =
	"usage: amp ask <task_id> --question <text> [--subtask <id>] [--ack-timeout <seconds>]\n"
	"       amp ask <task_id> --ack <answer-ms>\n"
	"               [--agent <name>] [--from executor] [--sync|--no-sync] [--json] [--repo <dir>]\n";

struct ask_args {
	const char *question, *subtask, *timeout, *ack;
	long long seconds;
};

static int check(amp_cli_writer *w)
{
	struct ask_args *a = w->ctx;

	if (a->ack)
		return !*a->ack || a->question || a->subtask || a->timeout ?
		       amp_cli_usage_error("ask", usage, "--ack takes an answer record and goes alone") : 0;
	if (!a->question || !*a->question)
		return amp_cli_usage_error("ask", usage, "--question is required and not empty");
	if (a->subtask && !*a->subtask)
		return amp_cli_usage_error("ask", usage, "--subtask must not be empty");
	a->seconds = AMP_QUESTION_TIMEOUT_DEFAULT;
	return a->timeout ? amp_cli_int("ask", "--ack-timeout", a->timeout, 1, AMP_ACK_TIMEOUT_MAX,
					&a->seconds) : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "question", required_argument, NULL, 'q' },
		{ "subtask", required_argument, NULL, 's' },
		{ "ack-timeout", required_argument, NULL, 'a' },
		{ "ack", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	struct ask_args a = { NULL, NULL, NULL, NULL, 0 };
	const char **values[] = { &a.question, &a.subtask, &a.timeout, &a.ack };
	amp_cli_writer w = { .cmd = "ask", .usage = usage, .opts = opts, .values = values,
			     AMP_CLI_TASK_OPERAND, .check = check, .ctx = &a, .role = "executor",
			     .role_why = "a clarification question comes from the executor" };
	amp_coord_result res;
	int code, status;

	if ((code = amp_cli_write_open(&w, argc, argv)) != AMP_CLI_GO)
		return amp_cli_write_close(&w, code);
	if (a.ack) {
		/* the asker acknowledges the answer (protocol/question.h) */
		status = amp_coord_ack_answer(w.st, w.set, w.arg, a.ack, amp_store_agent(w.st),
					      w.now_ms, &res, &w.errors);
		if (status >= 0)
			amp_cli_write_print(&w, json_pack("{s:s,s:s,s:s?,s:s}", "task_id", w.arg,
							  "acks", a.ack, "agent", amp_store_agent(w.st),
							  "record", res.name),
					    "%s", res.name);
		return amp_cli_write_done(&w, status);
	}
	status = amp_coord_ask(w.st, w.set, w.arg, a.subtask, amp_store_agent(w.st), a.question,
			       a.seconds, w.now_ms, &res, &w.errors);
	if (status >= 0)
		amp_cli_write_print(&w, json_pack("{s:s,s:s?,s:s?,s:s,s:I}", "task_id", w.arg,
						  "subtask_id", a.subtask, "agent", amp_store_agent(w.st),
						  "record", res.name, "ack_timeout_sec", (json_int_t)a.seconds),
				    "%s", res.name);
	return amp_cli_write_done(&w, status);
}
