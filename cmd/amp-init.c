/* amp init: prepare the SSOT in a git repository (idempotent). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "base/human.h"
#include "base/util.h"

static const char usage[] = "usage: amp init [--repo <dir>]\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL;
	amp_store *st = NULL;
	amp_error err;
	amp_human h = { 0 };
	int c, created = 0, code;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r': repo = optarg; break;
		case 'h': return amp_cli_help("init", usage, opts);
		default:
			return amp_cli_usage_error("init", usage, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("init", argc, argv, "h", opts)))
		return code;
	if (optind < argc)
		return amp_cli_usage_error("init", usage, "unexpected argument '%s'", argv[optind]);
	if ((code = amp_cli_open_store("init", repo, &st)))
		return code;
	if (amp_store_init(st, &created, &err) < 0) {
		code = amp_cli_fail("init", &err);
		goto cleanup;
	}
	/* Two short lines rather than one of 100 columns (issue 34: human
	 * output fits 80 columns). */
	amp_human_start(&h, amp_store_repo(st), 0, 0);
	fprintf(amp_human_out(&h), "%s AMP/1.0 store in %s\nmessages on %s, errors on %s\n",
	       created & 1 ? "Initialized" : "Already initialized",
	       amp_term(git_repository_commondir(amp_store_repo(st))),
	       amp_store_messages_ref(st), amp_store_errors_ref(st));
	if (created & 2)
		fprintf(amp_human_out(&h), "Strict mode on: trust starts at the admin's signed commit on each ref;\n"
		       "what is below it the admin vouches for, everything above must be signed\n");
cleanup:
	amp_human_out_end(&h);
	amp_store_free(st);
	return code;
}
