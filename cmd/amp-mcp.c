/* amp mcp: amp as a Model Context Protocol server over stdio, for one agent. */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ui/ui.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp mcp [--from <role>] [--agent <name>] [--signing-key <file>] [--repo <dir>]\n"
	"Serves the Model Context Protocol (JSON-RPC 2.0, one message a line) on\n"
	"stdin and stdout for one agent: its role is --from, else AMP_ROLE, else git\n"
	"config amp.role; its instance --agent, else AMP_AGENT, else amp.agent; its\n"
	"key --signing-key, else AMP_SIGNING_KEY, else git config amp.signingKey.\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "from", required_argument, NULL, 'f' },
		{ "repo", required_argument, NULL, 'r' },
		{ "signing-key", required_argument, NULL, 'k' },
		AMP_CLI_AGENT_OPTION,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *from = NULL, *repo = NULL, *agent = NULL, *key = NULL, *role;
	char role_buf[256], repo_buf[PATH_MAX], key_buf[PATH_MAX], dir[PATH_MAX], program[PATH_MAX + 8];
	amp_mcp_config cfg = { 0 };
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	amp_mcp *server = NULL;
	amp_error err;
	int c, code = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': from = optarg; break;
		case 'r': repo = optarg; break;
		case 'k': key = optarg; break;
		case 'G': agent = optarg; amp_cli_agent_given(optarg); break;
		case 'h': return amp_cli_help("mcp", usage, opts);
		default:
			return amp_cli_bad_option("mcp", usage, opts, argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("mcp", argc, argv, "h", opts)))
		return code;
	if (optind < argc)
		return amp_cli_usage_error("mcp", usage, "unexpected argument: '%s'", argv[optind]);
	/* The key signs every write of the tools: the commands they run, and
	 * this one's check of the identity below, find it in AMP_SIGNING_KEY
	 * (store.h), as an absolute path since they run elsewhere. */
	if (key) {
		if (!realpath(key, key_buf) || access(key_buf, R_OK) < 0)
			return amp_cli_usage_error("mcp", usage, "--signing-key %s: cannot read it", key);
		setenv("AMP_SIGNING_KEY", key_buf, 1);
	}
	/* The role's name is checked once, here, as the writing commands
	 * check it; whether the key may write as the role is each write
	 * tool's command's to check. */
	if ((code = amp_cli_open_ssot("mcp", repo, &st)) ||
	    (code = amp_cli_load_schemas("mcp", &set)) ||
	    (code = amp_cli_role("mcp", st, set, from, 1, &role)))
		goto cleanup;
	snprintf(role_buf, sizeof(role_buf), "%s", role);
	if (repo && !realpath(repo, repo_buf)) {
		amp_error_set(&err, AMP_EIO, "", "--repo %s: cannot resolve it", repo);
		code = amp_cli_fail("mcp", &err);
		goto cleanup;
	}
	/* The tools run this very program, as the hooks do (amp hook): amp
	 * is next to the running one in the build tree and when installed. */
	if (amp_exe_dir(dir, sizeof(dir)) < 0 ||
	    snprintf(program, sizeof(program), "%s/amp", dir) >= (int)sizeof(program) ||
	    access(program, X_OK) < 0) {
		amp_error_set(&err, AMP_EIO, "", "cannot find the running amp program");
		code = amp_cli_fail("mcp", &err);
		goto cleanup;
	}
	cfg.role = role_buf;
	cfg.agent = agent;
	cfg.repo = repo ? repo_buf : NULL;
	cfg.program = program;
	/* A client that goes away is the end of the session, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	if (amp_mcp_new(&server, &cfg, set, &err) < 0 ||
	    amp_mcp_serve(server, stdin, stdout, &err) < 0)
		code = amp_cli_fail("mcp", &err);
cleanup:
	amp_mcp_free(server);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
