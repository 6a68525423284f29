/* amp verdict: the reviewer's review_verdict on a task. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "store/store.h"
#include "base/util.h"
#include "write/write.h"

static const char usage[] =
	"usage: amp verdict <task_id> --decision approved|approved_with_fix|rejected --confidence <0..1>\n"
	"                   [--payload <file>|-] [--architecture-notes <text>] [--context-ref <msg_id>]\n"
	"                   [--from <role>] [--agent <name>] [--idempotency-key <key>] [--sync|--no-sync] [--json]\n"
	"                   [--repo <dir>]\n"
	"The payload file holds criteria_results, issues, direct_fixes, architecture_notes.\n";

struct verdict_args {
	amp_verdict_fields f;
	const char *payload_file;
};

static int option(amp_cli_writer *w, int c)
{
	struct verdict_args *a = w->ctx;

	switch (c) {
	case 'd': a->f.decision = optarg; break;
	case 'c': return amp_cli_real("verdict", "--confidence", optarg, 0, 1, &a->f.confidence);
	case 'p': a->payload_file = optarg; break;
	case 'a': a->f.architecture_notes = optarg; break;
	case 'x': a->f.context_ref = optarg; break;
	default: a->f.idempotency_key = optarg; break;
	}
	return 0;
}

static int check(amp_cli_writer *w)
{
	const amp_verdict_fields *f = &((struct verdict_args *)w->ctx)->f;

	if (!f->decision || (strcmp(f->decision, "approved") && strcmp(f->decision, "approved_with_fix") &&
			     strcmp(f->decision, "rejected")))
		return amp_cli_usage_error("verdict", usage, "--decision approved, approved_with_fix or rejected is required");
	if (f->confidence < 0)
		return amp_cli_usage_error("verdict", usage, "--confidence is required");
	return 0;
}

static int check_ids(amp_cli_writer *w)
{
	const char *ref = ((struct verdict_args *)w->ctx)->f.context_ref;

	return ref ? amp_cli_check_id("verdict", w->set, "--context-ref", ref, "msg_id") : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "decision", required_argument, NULL, 'd' },
		{ "confidence", required_argument, NULL, 'c' },
		{ "payload", required_argument, NULL, 'p' },
		{ "architecture-notes", required_argument, NULL, 'a' },
		{ "context-ref", required_argument, NULL, 'x' },
		{ "idempotency-key", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	struct verdict_args a = { .f = { .confidence = -1 } };
	amp_cli_writer w = { .cmd = "verdict", .usage = usage, .opts = opts, .option = option,
			     .usage_one = "one task id expected", .operand_name = "<task_id>",
			     .operand_def = "task_id", .check = check, .check_ids = check_ids,
			     .idempotency_key = &a.f.idempotency_key, .ctx = &a };
	amp_send_result res;
	json_t *payload = NULL;
	int code, status;

	amp_reccache_arena(); /* one message, then exit */
	if ((code = amp_cli_write_open(&w, argc, argv)) != AMP_CLI_GO)
		return amp_cli_write_close(&w, code);
	if (a.payload_file &&
	    (status = amp_send_read_json(w.st, "verdict", a.payload_file, "/payload",
					 &payload, NULL, NULL, &w.errors)) < 0)
		return amp_cli_write_done(&w, status);
	a.f.from = w.from;
	a.f.now_ms = w.now_ms;
	a.f.task_id = w.arg;
	a.f.payload = payload;
	status = amp_verdict_send(w.st, w.set, &a.f, &res, &w.errors);
	json_decref(payload);
	if (status < 0)
		return amp_cli_write_refused(&w, status, &res);
	amp_cli_write_print(&w, amp_cli_sent_json("msg_id", &res), "%s", res.msg_id);
	amp_cli_report_escalation("verdict", &res);
	return amp_cli_write_done(&w, status);
}
