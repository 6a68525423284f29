/* amp register: a named instance declares its roles and capabilities. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "record/record.h"
#include "protocol/protocol.h"
#include "write/write.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp register [--agent <name>] --role <role>... [--capability <name>]...\n"
	"                    [--from <role>] [--sync|--no-sync] [--json] [--repo <dir>]\n";

struct register_args {
	const char *roles[AMP_ROLES_MAX], *caps[AMP_CAPABILITIES_MAX];
	size_t nroles, ncaps;
};

static int option(amp_cli_writer *w, int c)
{
	struct register_args *a = w->ctx;
	size_t i;

	if (c == 'R') {
		if (!amp_role_in(optarg, "admin coordinator executor reviewer"))
			return amp_cli_usage_error("register", usage,
						   "--role '%s' is not a role (admin, coordinator, executor, reviewer)",
						   optarg);
		for (i = 0; i < a->nroles && strcmp(a->roles[i], optarg); i++)
			;
		if (i == a->nroles)
			a->roles[a->nroles++] = optarg; /* 4 roles: it cannot overflow */
		return 0;
	}
	if (!amp_agent_valid(optarg, strlen(optarg)))
		return amp_cli_usage_error("register", usage,
					   "--capability '%s' is not a name ([A-Za-z0-9._-], 1 to 64)",
					   optarg);
	for (i = 0; i < a->ncaps && strcmp(a->caps[i], optarg); i++)
		;
	if (i < a->ncaps)
		return 0; /* declared once is what it means */
	if (a->ncaps == AMP_CAPABILITIES_MAX)
		return amp_cli_usage_error("register", usage,
					   "at most %d capabilities", AMP_CAPABILITIES_MAX);
	a->caps[a->ncaps++] = optarg;
	return 0;
}

static int check(amp_cli_writer *w)
{
	return ((struct register_args *)w->ctx)->nroles ? 0
		: amp_cli_usage_error("register", usage, "at least one --role");
}

/* Prints what was registered (--json or a line). */
static void print(amp_cli_writer *w, const struct register_args *a, const char *agent,
		  const char *path)
{
	size_t i;

	if (w->json_out) {
		json_t *out = json_pack("{s:s,s:s,s:[],s:[],s:s}", "agent", agent, "from", w->from,
					"roles", "capabilities", "record", path);

		for (i = 0; out && i < a->nroles; i++)
			json_array_append_new(json_object_get(out, "roles"), json_string(a->roles[i]));
		for (i = 0; out && i < a->ncaps; i++)
			json_array_append_new(json_object_get(out, "capabilities"), json_string(a->caps[i]));
		amp_cli_print_json(out, 0);
		json_decref(out);
	} else {
		printf("registered %s as", agent);
		for (i = 0; i < a->nroles; i++)
			printf("%s %s", i ? "," : "", a->roles[i]);
		if (a->ncaps)
			printf("; capabilities");
		for (i = 0; i < a->ncaps; i++)
			printf("%s %s", i ? "," : "", a->caps[i]);
		printf(" (%s)\n", path);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "role", required_argument, NULL, 'R' },
		{ "capability", required_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 },
	};
	struct register_args a = { .nroles = 0 };
	amp_cli_writer w = { .cmd = "register", .usage = usage, .opts = opts, .option = option,
			     .check = check, .ctx = &a };
	char agent[AMP_AGENT_MAX + 1], path[AMP_PATH_MAX];
	amp_error err;
	size_t i;
	int code, status, admin_role = 0;

	if ((code = amp_cli_write_open(&w, argc, argv)) != AMP_CLI_GO)
		return amp_cli_write_close(&w, code);
	if (!amp_store_agent(w.st))
		return amp_cli_write_close(&w, amp_cli_usage_error("register", usage,
					   "name the instance registered: --agent <name> (or AMP_AGENT, git config amp.agent)"));
	snprintf(agent, sizeof(agent), "%s", amp_store_agent(w.st));
	/* Without --from, the instance speaks as the first role it declares. */
	if (!w.from)
		w.from = a.roles[0];
	for (i = 0; i < a.nroles; i++)
		admin_role |= !strcmp(a.roles[i], "admin");
	/* The admin registering another instance writes as itself: the
	 * commit's Amp-Agent is not the instance registered. */
	if (!strcmp(w.from, "admin") && !admin_role && amp_store_set_agent(w.st, NULL, &err) < 0)
		return amp_cli_write_close(&w, amp_cli_fail("register", &err));
	status = amp_registry_write(w.st, w.set, agent, w.from, a.roles, a.nroles, a.caps, a.ncaps,
				    w.now_ms, path, sizeof(path), &w.errors);
	if (status >= 0)
		print(&w, &a, agent, path);
	return amp_cli_write_done(&w, status);
}
