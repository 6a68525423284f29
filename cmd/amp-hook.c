/*
 * amp hook: the git hooks that guard a shared SSOT.  `pre-receive` runs on
 * the server (the hub) and `pre-push` on a client; both refuse an update of
 * an amp ref (refs/amp/...) that does not append valid records (lib/hook.h).  `install`
 * writes the hook script.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hook.h"
#include "util.h"

static const char usage[] =
	"usage: amp hook pre-receive\n"
	"   or: amp hook pre-push <remote> <url>\n"
	"   or: amp hook install [--server] [--repo <dir>]\n";

#define LINE_MAX_BYTES 4096

/* Prints what refused the update of ref. */
static void print_refusal(const char *ref, const amp_errlist *errors, size_t base)
{
	size_t i;

	for (i = base; i < errors->count; i++) {
		const amp_error *e = &errors->items[i];

		fprintf(stderr, "amp hook: %s %s: ", e->status == AMP_EIO ? "cannot check" : "refused",
			amp_term(ref));
		if (e->path[0])
			fprintf(stderr, "%s: ", amp_term(e->path));
		fprintf(stderr, "%s\n", amp_term(e->message));
	}
}

/*
 * Reads the ref updates git gives the hook on stdin, one a line: "<old>
 * <new> <ref>" (pre-receive) or "<local ref> <local sha> <remote ref>
 * <remote sha>" (pre-push), and checks each.  Every update is checked, so
 * the pusher sees every refusal at once.
 */
static int check_updates(int push)
{
	amp_store *st = NULL;
	amp_schema_set *set = NULL;
	amp_errlist errors = { 0 };
	amp_error err;
	char line[LINE_MAX_BYTES], a[LINE_MAX_BYTES], b[LINE_MAX_BYTES], c[LINE_MAX_BYTES],
		d[LINE_MAX_BYTES];
	int code, worst = AMP_OK;

	if ((code = amp_cli_open_store("hook", NULL, &st)))
		return code;
	if (amp_hook_use_quarantine(st, &err) < 0) {
		code = amp_cli_fail("hook", &err);
		goto cleanup;
	}
	if ((code = amp_cli_load_schemas("hook", &set)))
		goto cleanup;
	while (fgets(line, sizeof(line), stdin)) {
		const char *ref, *old, *new;
		size_t base = errors.count;
		int status, n;

		if (!strchr(line, '\n') && !feof(stdin)) {
			fprintf(stderr, "amp hook: error: a line of input longer than %d bytes\n",
				LINE_MAX_BYTES - 1);
			code = AMP_EXIT_USAGE;
			goto cleanup;
		}
		n = sscanf(line, "%4095s %4095s %4095s %4095s", a, b, c, d);
		if (n != (push ? 4 : 3)) {
			fprintf(stderr, "amp hook: error: not a line of git's %s input: %s",
				push ? "pre-push" : "pre-receive", amp_term(line));
			code = AMP_EXIT_USAGE;
			goto cleanup;
		}
		/* pre-push: what lands is the remote ref, moving from the
		 * remote's sha to ours. */
		ref = c;
		old = push ? d : a;
		new = b;
		status = amp_hook_check_update(st, set, ref, old, new, &errors);
		if (status < 0) {
			print_refusal(ref, &errors, base);
			if (worst == AMP_OK || status == AMP_EIO)
				worst = status;
		}
	}
	code = worst == AMP_OK ? 0 : worst == AMP_ERULE ? 1 : amp_exit_code(worst);
cleanup:
	amp_errlist_free(&errors);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}

static int install(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *name = "pre-push";
	char dir[PATH_MAX], program[PATH_MAX + 16], path[AMP_PATH_MAX];
	amp_store *st = NULL;
	amp_error err;
	int c, code, chained;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': name = "pre-receive"; break;
		case 'r': repo = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default:
			return amp_cli_usage_error("hook", usage, "unknown option or missing value: '%s'",
						   argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("hook", argc, argv, "h", opts)))
		return code;
	if (optind < argc)
		return amp_cli_usage_error("hook", usage, "unexpected argument: '%s'", argv[optind]);
	/* The hook runs this very program, by its absolute path, so it works
	 * from the build tree and installed alike, whatever PATH git has. */
	if (amp_exe_dir(dir, sizeof(dir)) < 0) {
		fprintf(stderr, "amp hook: error: cannot find the running program\n");
		return AMP_EXIT_IO;
	}
	snprintf(program, sizeof(program), "%s/amp-hook", dir);
	if ((code = amp_cli_open_store("hook", repo, &st)))
		return code;
	if (amp_hook_install(st, name, program, path, sizeof(path), &chained, &err) < 0)
		code = amp_cli_fail("hook", &err);
	else
		printf("installed %s%s\n", amp_term(path), chained ? " (chained to the hook that was there)" : "");
	amp_store_free(st);
	return code;
}

int main(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";

	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(sub, "pre-receive")) {
		if (argc != 2)
			return amp_cli_usage_error("hook", usage, "pre-receive takes no argument");
		return check_updates(0);
	}
	if (!strcmp(sub, "pre-push")) {
		if (argc != 4)
			return amp_cli_usage_error("hook", usage, "pre-push takes <remote> <url>");
		return check_updates(1);
	}
	if (!strcmp(sub, "install"))
		return install(argc - 1, argv + 1);
	if (!*sub)
		return amp_cli_usage_error("hook", usage, "missing subcommand");
	return amp_cli_usage_error("hook", usage, "unknown subcommand: '%s'", sub);
}
