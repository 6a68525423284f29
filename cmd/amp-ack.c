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
	static const struct option opts[] = {
		{ "from", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		AMP_CLI_AGENT_OPTION,
		AMP_CLI_SYNC_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *from = NULL, *repo = NULL;
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	amp_errlist errors = { 0 };
	amp_send_result res;
	amp_error err;
	int64_t now;
	int sync = -1;
	int c, json_out = 0, code = 0, status;

	amp_reccache_arena(); /* one message, then exit */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': from = optarg; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		AMP_CLI_AGENT_CASE;
		AMP_CLI_SYNC_CASES(sync);
		case 'h': fputs(usage, stdout); return 0;
		default:
			return amp_cli_usage_error("ack", usage, "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("ack", argc, argv, "h", opts)))
		return code;
	if (optind != argc - 1)
		return amp_cli_usage_error("ack", usage, "one msg_id expected");
	if ((code = amp_cli_load_schemas("ack", &set)) ||
	    (code = amp_cli_check_id("ack", set, "<msg_id>", argv[optind], "msg_id")) ||
	    (code = amp_cli_open_ssot("ack", repo, &st)) ||
	    (code = amp_cli_role("ack", st, set, from, 1, &from)))
		goto cleanup;
	if ((status = amp_clock_now_ms(&now, &err)) < 0) {
		code = amp_cli_fail("ack", &err);
		goto cleanup;
	}
	status = amp_send_ack(st, set, argv[optind], from, now, &res, &errors);
	if (status < 0) {
		code = amp_cli_print_errors("ack", &errors, status);
		amp_cli_report_escalation("ack", &res);
		/* a refusal that escalated: the escalation goes too */
		if (res.escalation_id[0])
			amp_cli_sync_after_write("ack", st, set, sync);
		goto cleanup;
	}
	if (json_out) {
		json_t *out = json_pack("{s:s,s:b}", "ack_for", res.msg_id,
					"duplicate", res.duplicate);

		json_object_set_new(out, "escalation", res.escalation_id[0] ?
				    json_string(res.escalation_id) : json_null());
		amp_cli_print_json(out, 0);
		json_decref(out);
	} else
		printf("%s %s\n", res.duplicate ? "already acked" : "acked", res.msg_id);
	amp_cli_report_escalation("ack", &res);
	code = amp_cli_sync_after_write("ack", st, set, sync);
cleanup:
	amp_errlist_free(&errors);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
