/* amp claim: a named executor instance takes a task (or a subtask) on a
 * lease; of instances racing, exactly one wins. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "store/store.h"
#include "base/clock.h"
#include "protocol/protocol.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp claim <task_id> [--subtask <id>] [--agent <name>] [--ttl <1..2592000 sec>]\n"
	"                 [--from executor] [--sync|--no-sync] [--json] [--repo <dir>]\n"
	"Exit 6 when another instance holds it: its name is printed.\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "subtask", required_argument, NULL, 's' },
		{ "ttl", required_argument, NULL, 't' },
		{ "from", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		AMP_CLI_AGENT_OPTION,
		AMP_CLI_SYNC_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *from = NULL, *subtask = NULL, *ttl_s = NULL, *task;
	amp_coord_result res;
	amp_errlist errors = { 0 };
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	amp_error err;
	char until[AMP_TIME_BUFSZ];
	long long ttl;
	int64_t now;
	int c, json_out = 0, code = 0, sync = -1, status;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': subtask = optarg; break;
		case 't': ttl_s = optarg; break;
		case 'f': from = optarg; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		AMP_CLI_AGENT_CASE;
		AMP_CLI_SYNC_CASES(sync);
		case 'h': fputs(usage, stdout); return 0;
		default:
			return amp_cli_usage_error("claim", usage, "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("claim", argc, argv, "h", opts)))
		return code;
	if (optind != argc - 1)
		return amp_cli_usage_error("claim", usage, "one task id expected");
	task = argv[optind];
	if (subtask && !*subtask)
		return amp_cli_usage_error("claim", usage, "--subtask must not be empty");
	if ((code = amp_cli_load_schemas("claim", &set)) ||
	    (code = amp_cli_check_id("claim", set, "<task_id>", task, "task_id")) ||
	    (code = amp_cli_open_ssot("claim", repo, &st)) ||
	    (code = amp_cli_role("claim", st, set, from, 0, &from)))
		goto cleanup;
	/* The lease defaults to the heartbeat timeout: silence that long is
	 * what amp watch escalates anyway. */
	ttl = amp_store_policy(st)->heartbeat_ms / 1000;
	if (ttl_s && (code = amp_cli_int("claim", "--ttl", ttl_s, 1, AMP_CLAIM_TTL_MAX, &ttl)))
		goto cleanup;
	/* Signed, the key's principal names the instance ("alice@executor"),
	 * as it does for every other write; a claim needs the name before
	 * the commit, to decide who holds the task. */
	if (!amp_store_agent(st)) {
		char principal[256], *at;

		if (amp_signing_may_write(amp_store_signing(st), from ? from : "executor", NULL,
					  principal, sizeof(principal), &err) == AMP_OK &&
		    (at = strchr(principal, '@')) && at > principal) {
			*at = '\0';
			if (amp_store_set_agent(st, principal, &err) < 0) {
				code = amp_cli_fail("claim", &err);
				goto cleanup;
			}
		}
	}
	if (!amp_store_agent(st)) {
		code = amp_cli_usage_error("claim", usage,
					   "a claim names its instance: --agent <name> (or AMP_AGENT, git config amp.agent)");
		goto cleanup;
	}
	if ((status = amp_clock_now_ms(&now, &err)) < 0) {
		code = amp_cli_fail("claim", &err);
		goto cleanup;
	}
	status = amp_coord_claim(st, set, task, subtask, from ? from : "executor",
				 amp_store_agent(st), ttl, now, &res, &errors);
	if (json_out && (status == AMP_OK || status == AMP_ECLAIMED)) {
		json_t *out = json_pack("{s:s,s:s?,s:b,s:s,s:s?,s:s,s:b}", "task_id", task,
					"subtask_id", subtask, "claimed", status == AMP_OK,
					"agent", amp_store_agent(st),
					"claim", status == AMP_OK ? res.name : NULL,
					"expires", amp_time_format(res.expires_ms, until),
					"renewed", res.renewed);

		json_object_set_new(out, "holder", json_string(status == AMP_OK ?
				    amp_store_agent(st) : res.holder));
		amp_cli_print_json(out, 0);
		json_decref(out);
	}
	if (status < 0) {
		code = amp_cli_print_errors("claim", &errors, status);
		goto cleanup;
	}
	if (!json_out)
		printf("%s %s%s%s as %s until %s (%s)\n", res.renewed ? "renewed the claim of" : "claimed",
		       task, subtask ? " subtask " : "", subtask ? amp_term(subtask) : "",
		       amp_store_agent(st), amp_time_format(res.expires_ms, until), res.name);
	code = amp_cli_sync_after_write("claim", st, set, sync);
cleanup:
	amp_errlist_free(&errors);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
