/* amp inbox: what waits for a role, as of the tip it read. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "base/human.h"
#include "base/util.h"
#include "record/record.h"
#include "read/read.h"

static const char usage[] =
	"usage: amp inbox <role> [--agent <name>] [--task <task_id>] [--all] [--json]\n"
	"                 " AMP_HUMAN_USAGE " [--repo <dir>]\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "task", required_argument, NULL, 't' },
		{ "all", no_argument, NULL, 'a' },
		{ "agent", required_argument, NULL, 'G' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		AMP_HUMAN_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *task = NULL, *role, *agent = NULL;
	amp_store *st = NULL;
	amp_inbox in = { 0 };
	amp_error err;
	amp_human h = { 0 };
	int c, all = 0, json_out = 0, code = 0;
	int64_t now;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't': task = optarg; break;
		case 'a': all = 1; break;
		case 'G': agent = optarg; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		case 'h': return amp_cli_help("inbox", usage, opts);
		default:
			if ((code = amp_human_option(&h, c, optarg, &err)) > 0)
				break;
			if (code < 0)
				return amp_cli_usage_error("inbox", usage, "%s", err.message);
			return amp_cli_bad_option("inbox", usage, opts, argv[optind - 1]);
		}
	}
	if (agent && !amp_agent_valid(agent, strlen(agent)))
		return amp_cli_usage_error("inbox", usage, "--agent %s: not an agent name %s",
					   amp_term(agent), amp_agent_problem(agent, strlen(agent)));
	if ((code = amp_cli_inbox_open("inbox", usage, argc, argv, opts, task, repo, &role, &st)))
		goto cleanup;
	/* --agent: the instance's view of the role's messages
	 * (inbox_agent.h), as of AMP_NOW. */
	if (amp_inbox_read(st, role, task, all, &in, &err) < 0 ||
	    amp_clock_now_ms(&now, &err) < 0 ||
	    (agent && amp_inbox_for_agent(st, agent, now, &in, &err) < 0) ||
	    amp_inbox_team(st, role, agent, task, now, &in, &err) < 0) {
		code = amp_cli_fail("inbox", &err);
		goto cleanup;
	}
	code = amp_cli_inbox_print("inbox", st, &in, role, json_out, &h, 1);
cleanup:
	amp_inbox_free(&in);
	code = amp_cli_report_skipped("inbox", st, code);
	amp_store_free(st);
	return code;
}
