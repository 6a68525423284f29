/* amp register: a named instance declares its roles and capabilities. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "record/record.h"
#include "protocol/protocol.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp register [--agent <name>] --role <role>... [--capability <name>]...\n"
	"                    [--from <role>] [--sync|--no-sync] [--json] [--repo <dir>]\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "role", required_argument, NULL, 'R' },
		{ "capability", required_argument, NULL, 'C' },
		{ "from", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		AMP_CLI_AGENT_OPTION,
		AMP_CLI_SYNC_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *from = NULL, *roles[AMP_ROLES_MAX], *caps[AMP_CAPABILITIES_MAX];
	char agent[AMP_AGENT_MAX + 1], path[AMP_PATH_MAX];
	amp_errlist errors = { 0 };
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	amp_error err;
	size_t nroles = 0, ncaps = 0, i;
	int64_t now;
	int c, json_out = 0, code = 0, sync = -1, admin_role = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'R':
			if (!amp_role_in(optarg, "admin coordinator executor reviewer"))
				return amp_cli_usage_error("register", usage,
							   "--role '%s' is not a role (admin, coordinator, executor, reviewer)",
							   optarg);
			for (i = 0; i < nroles && strcmp(roles[i], optarg); i++)
				;
			if (i == nroles)
				roles[nroles++] = optarg; /* 4 roles: it cannot overflow */
			break;
		case 'C':
			if (!amp_agent_valid(optarg, strlen(optarg)))
				return amp_cli_usage_error("register", usage,
							   "--capability '%s' is not a name ([A-Za-z0-9._-], 1 to 64)",
							   optarg);
			for (i = 0; i < ncaps && strcmp(caps[i], optarg); i++)
				;
			if (i < ncaps)
				break; /* declared once is what it means */
			if (ncaps == AMP_CAPABILITIES_MAX)
				return amp_cli_usage_error("register", usage,
							   "at most %d capabilities", AMP_CAPABILITIES_MAX);
			caps[ncaps++] = optarg;
			break;
		case 'f': from = optarg; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		AMP_CLI_AGENT_CASE;
		AMP_CLI_SYNC_CASES(sync);
		case 'h': fputs(usage, stdout); return 0;
		default:
			return amp_cli_usage_error("register", usage, "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("register", argc, argv, "h", opts)))
		return code;
	if (optind != argc)
		return amp_cli_usage_error("register", usage, "no operands expected");
	if (!nroles)
		return amp_cli_usage_error("register", usage, "at least one --role");
	if ((code = amp_cli_load_schemas("register", &set)) ||
	    (code = amp_cli_open_ssot("register", repo, &st)) ||
	    (code = amp_cli_role("register", st, set, from, 0, &from)))
		goto cleanup;
	if (!amp_store_agent(st)) {
		code = amp_cli_usage_error("register", usage,
					   "name the instance registered: --agent <name> (or AMP_AGENT, git config amp.agent)");
		goto cleanup;
	}
	snprintf(agent, sizeof(agent), "%s", amp_store_agent(st));
	/* Without --from, the instance speaks as the first role it declares. */
	if (!from)
		from = roles[0];
	for (i = 0; i < nroles; i++)
		admin_role |= !strcmp(roles[i], "admin");
	/* The admin registering another instance writes as itself: the
	 * commit's Amp-Agent is not the instance registered. */
	if (!strcmp(from, "admin") && !admin_role && amp_store_set_agent(st, NULL, &err) < 0) {
		code = amp_cli_fail("register", &err);
		goto cleanup;
	}
	if (amp_clock_now_ms(&now, &err) < 0) {
		code = amp_cli_fail("register", &err);
		goto cleanup;
	}
	if ((c = amp_registry_write(st, set, agent, from, roles, nroles, caps, ncaps, now, path,
				    sizeof(path), &errors)) < 0) {
		code = amp_cli_print_errors("register", &errors, c);
		goto cleanup;
	}
	if (json_out) {
		json_t *out = json_pack("{s:s,s:s,s:[],s:[],s:s}", "agent", agent, "from", from,
					"roles", "capabilities", "record", path);

		for (i = 0; out && i < nroles; i++)
			json_array_append_new(json_object_get(out, "roles"), json_string(roles[i]));
		for (i = 0; out && i < ncaps; i++)
			json_array_append_new(json_object_get(out, "capabilities"), json_string(caps[i]));
		amp_cli_print_json(out, 0);
		json_decref(out);
	} else {
		printf("registered %s as", agent);
		for (i = 0; i < nroles; i++)
			printf("%s %s", i ? "," : "", roles[i]);
		if (ncaps)
			printf("; capabilities");
		for (i = 0; i < ncaps; i++)
			printf("%s %s", i ? "," : "", caps[i]);
		printf(" (%s)\n", path);
	}
	code = amp_cli_sync_after_write("register", st, set, sync);
cleanup:
	amp_errlist_free(&errors);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
