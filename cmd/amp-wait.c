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

#include "ui/ui.h"
#include "base/human.h"
#include "base/clock.h"
#include "read/read.h"
#include "sync/sync.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp wait <role> [--task <task_id>] [--timeout <1..86400 sec>] [--sync|--no-sync]\n"
	"                [--json] " AMP_HUMAN_TIME_USAGE " [--repo <dir>]\n";

#define SYNC_INTERVAL_DEFAULT 5
#define SYNC_INTERVAL_MAX     3600

/* git config amp.syncInterval: seconds between two polls of the remote
 * by `amp wait --sync`, 1..3600 (default 5). */
static int sync_interval(amp_store *st, long long *out)
{
	amp_error err;
	char buf[64];

	*out = SYNC_INTERVAL_DEFAULT;
	if (!amp_store_config(st, "amp.syncInterval", buf, sizeof(buf)))
		return 0;
	if (amp_parse_int("git config amp.syncInterval", buf, 1, SYNC_INTERVAL_MAX, out, &err) < 0)
		return amp_cli_fail("wait", &err);
	return 0;
}

/* One poll of the remote: fetch, join, push.  A remote that cannot be
 * reached is a warning: the wait goes on, on what is here. */
static void poll_remote(amp_store *st, amp_schema_set *set)
{
	amp_sync_result res;
	amp_error err;
	char remote[256];

	if (amp_sync_remote(st, NULL, remote, sizeof(remote), &err) < 0 ||
	    amp_sync(st, set, remote, &res, &err) < 0)
		fprintf(stderr, "amp wait: warning: sync: %s\n", amp_term(err.message));
}

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
		AMP_CLI_SYNC_OPTIONS,
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		AMP_HUMAN_TIME_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *task = NULL, *role;
	amp_store *st = NULL;
	amp_inbox in = { 0 };
	amp_error err;
	amp_human h = { 0 };
	struct sigaction sa;
	sigset_t block, waitmask;
	amp_schema_set *set = NULL;
	long long timeout = -1, interval = 0;
	int64_t start_ms = 0, now_ms, left_ms;
	int c, status, json_out = 0, code = 0, sync = -1;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't': task = optarg; break;
		case 'T':
			if ((code = amp_cli_int("wait", "--timeout", optarg, 1, 86400, &timeout)))
				return code;
			break;
		case 'j': json_out = 1; break;
		AMP_CLI_SYNC_CASES(sync);
		case 'r': repo = optarg; break;
		case 'h': return amp_cli_help("wait", usage, opts);
		default:
			if ((code = amp_human_option(&h, c, optarg, &err)) > 0)
				break;
			if (code < 0)
				return amp_cli_usage_error("wait", usage, "%s", err.message);
			return amp_cli_bad_option("wait", usage, opts, argv[optind - 1]);
		}
	}
	if ((code = amp_cli_inbox_open("wait", usage, argc, argv, opts, task, repo, &role, &st)))
		goto cleanup;
	if (sync < 0 && amp_store_config_bool(st, "amp.autoSync", 0, &sync, &err) < 0) {
		code = amp_cli_fail("wait", &err);
		goto cleanup;
	}
	if (sync && ((code = sync_interval(st, &interval)) ||
		     (code = amp_cli_load_schemas("wait", &set))))
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
	/* --sync: poll the remote every amp.syncInterval seconds, waiting on
	 * the local ref in between (a local writer still wakes the wait at
	 * once); the timeout is measured from the start, on the monotonic
	 * clock. */
	if (sync)
		start_ms = amp_monotonic_ms();
	for (;;) {
		if (sync)
			poll_remote(st, set);
		left_ms = timeout >= 0 ? timeout * 1000 : -1;
		if (sync) {
			now_ms = amp_monotonic_ms();
			if (timeout >= 0 && (left_ms -= now_ms - start_ms) < 0)
				left_ms = 0;
			if (left_ms < 0 || left_ms > interval * 1000)
				left_ms = interval * 1000;
		}
		status = amp_inbox_wait(st, role, task, left_ms, &waitmask, &stop, &in, &err);
		if (!sync || status != AMP_INBOX_TIMEOUT ||
		    (timeout >= 0 && amp_monotonic_ms() - start_ms >= timeout * 1000))
			break;
	}
	if (status == AMP_INBOX_STOPPED) {
		amp_store_free(st);
		signal(stop, SIG_DFL);
		sigprocmask(SIG_UNBLOCK, &block, NULL);
		raise(stop);
		return 128 + stop; /* not reached */
	}
	if (status == AMP_INBOX_TIMEOUT) {
		char d[AMP_DURATION_BUFSZ];

		fprintf(stderr, "amp wait: nothing for %s after %s\n", amp_term(role),
			amp_duration_format(timeout, d));
		code = AMP_EXIT_TIMEOUT;
		goto cleanup;
	}
	if (status < 0) {
		code = amp_cli_fail("wait", &err);
		goto cleanup;
	}
	code = amp_cli_inbox_print("wait", st, &in, role, json_out, &h, 0);
cleanup:
	amp_inbox_free(&in);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
