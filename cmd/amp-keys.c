/* amp keys: the keys that may speak as each role (git config
 * amp.allowedSigners, in git's allowed-signers format; lib/store/sign.h). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "store/store.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp keys add <role> [--agent <name>] <pubkey>|<file> [--repo <dir>]\n"
	"   or: amp keys list [--repo <dir>]\n"
	"Principals are <role> or <agent>@<role>; the file is git config amp.allowedSigners.\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "agent", required_argument, NULL, 'a' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *agent = NULL;
	const amp_signing *s;
	amp_store *st = NULL;
	amp_error err;
	char fp[128];
	int c, code = 0, status;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'a': agent = optarg; break;
		case 'r': repo = optarg; break;
		case 'h': return amp_cli_help("keys", usage, opts);
		default:
			return amp_cli_bad_option("keys", usage, opts, argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("keys", argc, argv, "h", opts)))
		return code;
	if (optind >= argc)
		return amp_cli_usage_error("keys", usage, "add or list expected");
	if (!strcmp(argv[optind], "list")) {
		FILE *f;
		char line[16384];

		if (argc - optind != 1 || agent)
			return amp_cli_usage_error("keys", usage, "list takes no arguments");
		if ((code = amp_cli_open_store("keys", repo, &st)))
			return code;
		s = amp_store_signing(st);
		if (!s->allowed[0] || !(f = fopen(s->allowed, "r"))) {
			amp_error_set(&err, AMP_EIO, "", "git config amp.allowedSigners: %s",
				      s->allowed[0] ? "cannot read the file" : "not set");
			code = amp_cli_fail("keys", &err);
			goto cleanup;
		}
		while (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = '\0';
			printf("%s\n", amp_term(line));
		}
		fclose(f);
		goto cleanup;
	}
	if (strcmp(argv[optind], "add"))
		return amp_cli_usage_error("keys", usage, "unknown subcommand '%s'", argv[optind]);
	if (argc - optind != 3)
		return amp_cli_usage_error("keys", usage, "add takes a role and a key");
	if ((code = amp_cli_open_store("keys", repo, &st)))
		return code;
	s = amp_store_signing(st);
	status = amp_signing_add_key(s, argv[optind + 1], agent, argv[optind + 2], fp, sizeof(fp),
				     &err);
	if (status < 0) {
		code = err.status == AMP_EUSAGE ? amp_cli_usage_error("keys", usage, "%s%s%s",
								      err.path, err.path[0] ? ": " : "",
								      err.message)
						: amp_cli_fail("keys", &err);
		goto cleanup;
	}
	printf("%s %s%s%s %s in %s\n", status == AMP_NOOP ? "already allowed:" : "allowed:",
	       agent ? amp_term(agent) : "", agent ? "@" : "", argv[optind + 1], fp,
	       amp_term(s->allowed));
cleanup:
	amp_store_free(st);
	return code;
}
