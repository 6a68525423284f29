/* amp dashboard: the SSOT as a static web site, and a server for it. */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp dashboard --out <dir> [--json] [--repo <dir>]\n"
	"   or: amp dashboard --serve [--out <dir>] [--port <0..65535>] [--bind <addr>]\n"
	"                           [--request-timeout <1..3600>] [--repo <dir>]\n";

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void ready(const char *url, void *ctx)
{
	(void)ctx;
	printf("serving %s\n", url);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "serve", no_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "request-timeout", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *out = NULL, *bind_addr = "127.0.0.1";
	char dir[PATH_MAX];
	amp_store *st = NULL;
	json_t *report = NULL;
	struct sigaction sa;
	long long port = 8080, deadline = 5;
	int c, serve = 0, json_out = 0, serve_opt = 0, code = 0;
	int64_t now;
	amp_error err;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 's': serve = 1; break;
		case 'p':
			if ((code = amp_cli_int("dashboard", "--port", optarg, 0, 65535, &port)))
				return code;
			serve_opt = 1;
			break;
		case 'b': bind_addr = optarg; serve_opt = 1; break;
		case 't':
			if ((code = amp_cli_int("dashboard", "--request-timeout", optarg, 1, 3600, &deadline)))
				return code;
			serve_opt = 1;
			break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		case 'h': return amp_cli_help("dashboard", usage, opts);
		default:
			return amp_cli_bad_option("dashboard", usage, opts, argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("dashboard", argc, argv, "h", opts)))
		return code;
	if (optind != argc)
		return amp_cli_usage_error("dashboard", usage, "no arguments expected");
	if (!serve && !out)
		return amp_cli_usage_error("dashboard", usage, "--out <dir> or --serve is required");
	if (!serve && serve_opt)
		return amp_cli_usage_error("dashboard", usage, "--port, --bind and --request-timeout go with --serve");
	if (serve && json_out)
		return amp_cli_usage_error("dashboard", usage, "--json goes with --out alone");
	if (out && !*out)
		return amp_cli_usage_error("dashboard", usage, "--out: the directory is empty");
	if ((code = amp_cli_open_store("dashboard", repo, &st)))
		goto cleanup;
	/* --serve without --out: the site lives with amp's other derived
	 * files, in <git dir>/amp/dashboard. */
	snprintf(dir, sizeof(dir), "%s", out ? out : "");
	if (!out)
		snprintf(dir, sizeof(dir), "%s/dashboard", amp_store_state_dir(st));
	if (amp_clock_now_ms(&now, &err) < 0 || amp_dashboard_write(st, dir, now, &report, &err) < 0) {
		code = amp_cli_fail("dashboard", &err);
		goto cleanup;
	}
	if (!serve) {
		if (json_out)
			amp_cli_print_json(report, 1);
		else
			printf("%s/index.html (%zu page(s) written, %lld task page(s) unchanged)\n",
			       amp_term(dir), json_array_size(json_object_get(report, "written")),
			       (long long)json_integer_value(json_object_get(report, "unchanged")));
		goto cleanup;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* a client that leaves is no reason to stop */
	if (amp_dashboard_serve(st, dir, bind_addr, (int)port, (int)deadline, &stop, ready, NULL, &err) < 0)
		code = amp_cli_fail("dashboard", &err);
cleanup:
	json_decref(report);
	code = amp_cli_report_skipped("dashboard", st, code);
	amp_store_free(st);
	return code;
}
