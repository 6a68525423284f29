/*
 * amp wait: block until a message waits for a role, then print the inbox
 * as `amp inbox` does.  Exit 0 when something waits, 5 when the timeout
 * passed first; SIGINT and SIGTERM end it as they end a shell command
 * (killed by the signal: a shell reports 130 and 143), so a script's
 * `amp wait executor && work` never mistakes an interrupt for a message.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "inbox.h"
#include "util.h"

static const char usage[] =
	"usage: amp wait <role> [--task <task_id>] [--timeout <1..86400 sec>] [--json] [--repo <dir>]\n";

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = sig;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "task", required_argument, NULL, 't' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *task = NULL, *role;
	amp_store *st = NULL;
	amp_inbox in = { 0 };
	amp_error err;
	struct sigaction sa;
	sigset_t block, waitmask;
	long long timeout = -1;
	int c, status, json_out = 0, code = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't': task = optarg; break;
		case 'T':
			if ((code = amp_cli_int("wait", "--timeout", optarg, 1, 86400, &timeout)))
				return code;
			break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default:
			return amp_cli_usage_error("wait", usage, "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if ((code = amp_cli_inbox_open("wait", usage, argc, argv, opts, task, repo, &role, &st)))
		goto cleanup;
	/* The signals are taken only inside the wait (pselect), so none is
	 * lost between a check of the inbox and the sleep. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &waitmask);
	sigdelset(&waitmask, SIGINT);
	sigdelset(&waitmask, SIGTERM);
	status = amp_inbox_wait(st, role, task, timeout >= 0 ? timeout * 1000 : -1, &waitmask,
				&stop, &in, &err);
	if (status == AMP_INBOX_STOPPED) {
		amp_store_free(st);
		signal(stop, SIG_DFL);
		sigprocmask(SIG_UNBLOCK, &block, NULL);
		raise(stop);
		return 128 + stop; /* not reached */
	}
	if (status == AMP_INBOX_TIMEOUT) {
		fprintf(stderr, "amp wait: nothing for %s after %lld s\n", role, timeout);
		code = AMP_EXIT_TIMEOUT;
		goto cleanup;
	}
	if (status < 0) {
		code = amp_cli_fail("wait", &err);
		goto cleanup;
	}
	code = amp_cli_inbox_print("wait", st, &in, role, json_out);
cleanup:
	amp_inbox_free(&in);
	amp_store_free(st);
	return code;
}
