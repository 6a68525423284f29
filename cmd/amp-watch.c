/* amp watch: apply the rules AMP/1.0 wants to hold by themselves. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "util.h"
#include "watch.h"

static const char usage[] =
	"usage: amp watch [--once | --interval <1..86400 sec>] [--full] [--json] [--repo <dir>]\n";

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void print_action(const amp_watch_action *a, void *ctx)
{
	if (*(int *)ctx) {
		json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "action", a->action,
				      "escalation_type", a->escalation_type,
				      "severity", a->severity, "task_id", a->task_id,
				      "cause", a->cause, "msg_id", a->msg_id);

		amp_cli_print_json(o, 0);
		json_decref(o);
	} else {
		printf("%s %s %s %s (%s)\n", a->action, a->escalation_type,
		       amp_term(a->task_id), a->cause[0] ? amp_term(a->cause) : "-",
		       amp_term(a->msg_id));
	}
	fflush(stdout);
}

/* One pass; returns its exit code. */
static int pass(amp_store *st, amp_schema_set **set, int full, int *json_out)
{
	amp_watch_opts o;
	amp_watch_stats stats;
	amp_errlist errors = { 0 };
	amp_error err;
	int status, code = 0;

	if ((status = amp_watch_opts_load(st, &o, &err)) < 0)
		return amp_cli_fail("watch", &err);
	o.full = full;
	status = amp_watch_pass(st, set, &o, print_action, json_out, &stats, &errors);
	if (status < 0)
		code = amp_cli_print_errors("watch", &errors, status);
	amp_errlist_free(&errors);
	return code;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "once", no_argument, NULL, 'o' },
		{ "interval", required_argument, NULL, 'i' },
		{ "full", no_argument, NULL, 'F' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL;
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	struct sigaction sa;
	long long interval = -1;
	int c, once = 0, full = 0, json_out = 0, code = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': once = 1; break;
		case 'i':
			if ((code = amp_cli_int("watch", "--interval", optarg, 1, 86400,
						&interval)))
				return code;
			break;
		case 'F': full = 1; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default:
			return amp_cli_usage_error("watch", usage, "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("watch", argc, argv, "h", opts)))
		return code;
	if (optind != argc)
		return amp_cli_usage_error("watch", usage, "no arguments expected");
	if (once && interval > 0)
		return amp_cli_usage_error("watch", usage, "--once and --interval exclude each other");
	if (!once && interval <= 0)
		interval = 60;
	if ((code = amp_cli_open_store("watch", repo, &st)))
		goto cleanup;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (;;) {
		struct timespec ts = { 0, 0 };
		long long left;

		code = pass(st, &set, full, &json_out);
		full = 0;
		if (once || stop || code == AMP_EXIT_USAGE)
			break;
		/* Sleep in short steps so a signal ends the loop promptly. */
		for (left = interval * 10; left > 0 && !stop; left--) {
			ts.tv_nsec = 100000000L;
			nanosleep(&ts, NULL);
		}
		if (stop) {
			code = 0;
			break;
		}
	}
cleanup:
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
