/* amp ack: acknowledge a message addressed to you. */
#include <getopt.h>
#include <stdio.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "store/store.h"
#include "write/write.h"

static const char usage[] = "usage: amp ack <msg_id> [--from <role>] [--agent <name>] [--sync|--no-sync] [--json] [--repo <dir>]\n";

int main(int argc, char **argv)
{
	amp_cli_writer w = { .cmd = "ack", .usage = usage, .usage_one = "one msg_id expected",
			     .operand_name = "<msg_id>", .operand_def = "msg_id",
			     .role_required = 1 };
	amp_send_result res;
	int code, status;

	amp_reccache_arena(); /* one message, then exit */
	if ((code = amp_cli_write_open(&w, argc, argv)) != AMP_CLI_GO)
		return amp_cli_write_close(&w, code);
	status = amp_send_ack(w.st, w.set, w.arg, w.from, w.now_ms, &res, &w.errors);
	if (status < 0)
		return amp_cli_write_refused(&w, status, &res);
	amp_cli_write_print(&w, amp_cli_sent_json("ack_for", &res), "%s %s",
			    res.duplicate ? "already acked" : "acked", res.msg_id);
	amp_cli_report_escalation("ack", &res);
	return amp_cli_write_done(&w, status);
}
