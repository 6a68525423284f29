/* amp ready: the tasks whose dependencies are all approved and that
 * nobody holds. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "base/human.h"
#include "protocol/protocol.h"
#include "record/record.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp ready [--capability <name>] [--agent <name>] [--json] " AMP_HUMAN_TIME_USAGE "\n"
	"                 [--repo <dir>]\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "capability", required_argument, NULL, 'c' },
		{ "agent", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		AMP_HUMAN_TIME_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *capability = NULL, *agent = NULL, *why;
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	git_tree *tip = NULL;
	json_t *out = NULL, *t, *declared = NULL, *can = NULL;
	amp_error err;
	amp_human h = { 0 };
	char since[AMP_HUMAN_TIME_BUFSZ], due[AMP_HUMAN_TIME_BUFSZ];
	int64_t now;
	size_t i;
	int c, json_out = 0, code = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': capability = optarg; break;
		case 'a': agent = optarg; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		case 'h': return amp_cli_help("ready", usage, opts);
		default:
			if ((code = amp_human_option(&h, c, optarg, &err)) > 0)
				break;
			if (code < 0)
				return amp_cli_usage_error("ready", usage, "%s", err.message);
			return amp_cli_bad_option("ready", usage, opts, argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("ready", argc, argv, "h", opts)))
		return code;
	if (optind != argc)
		return amp_cli_usage_error("ready", usage, "no operand expected");
	if (agent && (why = amp_agent_problem(agent, strlen(agent))))
		return amp_cli_usage_error("ready", usage, "--agent '%s' is not an agent name%s%s", agent,
					   why[0] == '(' ? " " : ": ", why);
	if ((code = amp_cli_load_schemas("ready", &set)) ||
	    (code = amp_cli_open_store("ready", repo, &st)))
		goto cleanup;
	if (amp_clock_now_ms(&now, &err) < 0 ||
	    amp_store_tip(st, amp_store_messages_ref(st), NULL, &tip, &err) < 0 ||
	    (agent && amp_registry_read(st, set, tip, &declared, &err) < 0)) {
		code = amp_cli_fail("ready", &err);
		goto cleanup;
	}
	/* What the agent declared it can do; nothing when it never did. */
	if (agent) {
		can = json_object_get(json_object_get(declared, agent), "capabilities");
		can = can ? json_incref(can) : json_array();
	}
	if (amp_coord_ready(st, tip, now, capability, can, &out, &err) < 0) {
		code = amp_cli_fail("ready", &err);
		goto cleanup;
	}
	if (json_out) {
		amp_cli_print_result("ready", "tasks", out, 0);
		goto cleanup;
	}
	amp_human_start(&h, amp_store_repo(st), 0, 0);
	json_array_foreach(out, i, t)
		fprintf(amp_human_out(&h), "%s  %s  %-17s since %s%s%s\n", amp_term(amp_json_str(t, "task_id")),
			amp_json_str(t, "priority"), amp_json_str(t, "state"),
			amp_human_when(&h, amp_json_str(t, "since"), since),
			amp_json_str(t, "deadline") ? "  due " : "",
			amp_json_str(t, "deadline") ? amp_human_when(&h, amp_json_str(t, "deadline"), due) : "");
	amp_human_out_end(&h);
cleanup:
	json_decref(can);
	json_decref(declared);
	amp_schema_set_free(set);
	json_decref(out);
	git_tree_free(tip);
	code = amp_cli_report_skipped("ready", st, code);
	amp_store_free(st);
	return code;
}
