/* amp answer: the coordinator (or the admin) answers an executor's
 * clarification question (amp ask), once, as a control record. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "store/store.h"
#include "write/write.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp answer <task_id> --question <question-ms> --answer <text> [--ack-timeout <seconds>]\n"
	"                  [--agent <name>] [--from coordinator|admin] [--sync|--no-sync] [--json] [--repo <dir>]\n";

struct answer_args {
	const char *question, *answer, *timeout;
	long long seconds;
};

static int check(amp_cli_writer *w)
{
	struct answer_args *a = w->ctx;

	if (!a->question || !*a->question)
		return amp_cli_usage_error("answer", usage, "--question (the question record, question-<ms>) is required");
	if (!a->answer || !*a->answer)
		return amp_cli_usage_error("answer", usage, "--answer is required and not empty");
	/* the asker acknowledges the answer within this (amp ask --ack) */
	a->seconds = AMP_QUESTION_TIMEOUT_DEFAULT;
	return a->timeout ? amp_cli_int("answer", "--ack-timeout", a->timeout, 1, AMP_ACK_TIMEOUT_MAX,
					&a->seconds) : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "question", required_argument, NULL, 'q' },
		{ "answer", required_argument, NULL, 'A' },
		{ "ack-timeout", required_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	struct answer_args a = { NULL, NULL, NULL, 0 };
	const char **values[] = { &a.question, &a.answer, &a.timeout };
	amp_cli_writer w = { .cmd = "answer", .usage = usage, .opts = opts, .values = values,
			     AMP_CLI_TASK_OPERAND, .check = check, .ctx = &a };
	amp_coord_result res;
	int code, status;

	if ((code = amp_cli_write_open(&w, argc, argv)) != AMP_CLI_GO)
		return amp_cli_write_close(&w, code);
	status = amp_coord_answer(w.st, w.set, w.arg, a.question, w.from ? w.from : "coordinator",
				  amp_store_agent(w.st), a.answer, a.seconds, w.now_ms, &res, &w.errors);
	if (status >= 0)
		amp_cli_write_print(&w, json_pack("{s:s,s:s,s:s?,s:s,s:I}", "task_id", w.arg,
						  "answers", a.question, "agent", amp_store_agent(w.st),
						  "record", res.name, "ack_timeout_sec", (json_int_t)a.seconds),
				    "%s", res.name);
	return amp_cli_write_done(&w, status);
}
