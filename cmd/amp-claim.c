/* amp claim: a named executor instance takes a task (or a subtask) on a
 * lease; of instances racing, exactly one wins. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ui/ui.h"
#include "store/store.h"
#include "base/clock.h"
#include "base/human.h"
#include "protocol/protocol.h"
#include "write/write.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp claim <task_id> [--subtask <id>] [--agent <name>] [--ttl <1..2592000 sec>]\n"
	"                 [--wait <0..3600 sec>] [--from executor] [--sync|--no-sync] [--json]\n"
	"                 [--repo <dir>]\n"
	"Exit 6 when another instance holds it (after --wait seconds): its name is printed.\n";

struct claim_args {
	const char *subtask, *ttl, *wait;
};

/* The longest --wait: an hour.  A claim that waits longer is a queue,
 * which amp ready and amp inbox --wait serve better. */
#define CLAIM_WAIT_MAX 3600

static int option(amp_cli_writer *w, int c)
{
	struct claim_args *a = w->ctx;

	if (c == 's')
		a->subtask = optarg;
	else if (c == 'W')
		a->wait = optarg;
	else
		a->ttl = optarg;
	return 0;
}

static int check(amp_cli_writer *w)
{
	struct claim_args *a = w->ctx;

	if (a->subtask && !*a->subtask)
		return amp_cli_usage_error("claim", usage, "--subtask must not be empty");
	return 0;
}

/* Signed, the key's principal names the instance ("alice@executor"), as
 * it does for every other write; a claim needs the name before the
 * commit, to decide who holds the task.  0 or the exit code. */
static int name_instance(amp_cli_writer *w)
{
	char principal[256], *at;
	amp_error err;

	if (!amp_store_agent(w->st) &&
	    amp_signing_may_write(amp_store_signing(w->st), w->from ? w->from : "executor", NULL,
				  principal, sizeof(principal), &err) == AMP_OK &&
	    (at = strchr(principal, '@')) && at > principal) {
		*at = '\0';
		if (amp_store_set_agent(w->st, principal, &err) < 0)
			return amp_cli_fail("claim", &err);
	}
	if (!amp_store_agent(w->st))
		return amp_cli_usage_error("claim", usage,
					   "a claim names its instance: --agent <name> (or AMP_AGENT, git config amp.agent)");
	return 0;
}

/*
 * amp claim --wait: the claim again, until it wins or `wait_s` seconds of
 * real time (the monotonic clock: AMP_NOW does not shorten it) have
 * passed, since what it waits for is another process's release or a lease
 * running out.  Between attempts it sleeps, 50 ms at first and doubling to
 * a second: each attempt re-reads the tip, nothing more.  "Now" is read
 * again each time (AMP_NOW, when set, stays fixed).  Returns the last
 * attempt's status.
 */
static int claim_waiting(amp_cli_writer *w, const struct claim_args *a, long long wait_s,
			 long long ttl, amp_coord_result *res)
{
	int64_t end = amp_monotonic_ms() + wait_s * 1000, pause_ms = 50, left;
	amp_error err;
	int status;

	for (;;) {
		status = amp_coord_claim(w->st, w->set, w->arg, a->subtask, w->from ? w->from : "executor",
					 amp_store_agent(w->st), ttl, w->now_ms, res, &w->errors);
		if (status != AMP_ECLAIMED || (left = end - amp_monotonic_ms()) <= 0)
			return status;
		if (pause_ms > left)
			pause_ms = left;
		{
			struct timespec ts = { pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		}
		pause_ms = pause_ms * 2 > 1000 ? 1000 : pause_ms * 2;
		if (amp_clock_now_ms(&w->now_ms, &err) < 0)
			return amp_errlist_add(&w->errors, err.status, err.path, "%s", err.message);
		/* Only the last attempt's reason is printed. */
		amp_errlist_truncate(&w->errors, 0);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "subtask", required_argument, NULL, 's' },
		{ "ttl", required_argument, NULL, 't' },
		{ "wait", required_argument, NULL, 'W' },
		{ NULL, 0, NULL, 0 },
	};
	struct claim_args a = { NULL, NULL, NULL };
	amp_cli_writer w = { .cmd = "claim", .usage = usage, .opts = opts, .option = option,
			     .usage_one = "one task id expected", .operand_name = "<task_id>",
			     .operand_def = "task_id", .check = check, .ctx = &a };
	amp_coord_result res;
	char until[AMP_TIME_BUFSZ];
	long long ttl, wait_s = 0;
	int code, status;

	if ((code = amp_cli_write_open(&w, argc, argv)) != AMP_CLI_GO)
		return amp_cli_write_close(&w, code);
	/* The lease defaults to the heartbeat timeout: silence that long is
	 * what amp watch escalates anyway. */
	ttl = amp_store_policy(w.st)->heartbeat_ms / 1000;
	if ((a.ttl && (code = amp_cli_int("claim", "--ttl", a.ttl, 1, AMP_CLAIM_TTL_MAX, &ttl))) ||
	    (a.wait && (code = amp_cli_int("claim", "--wait", a.wait, 0, CLAIM_WAIT_MAX, &wait_s))) ||
	    (code = name_instance(&w)))
		return amp_cli_write_close(&w, code);
	status = claim_waiting(&w, &a, wait_s, ttl, &res);
	if (w.json_out && (status == AMP_OK || status == AMP_ECLAIMED)) {
		json_t *out = json_pack("{s:s,s:s?,s:b,s:s,s:s?,s:s,s:b}", "task_id", w.arg,
					"subtask_id", a.subtask, "claimed", status == AMP_OK,
					"agent", amp_store_agent(w.st),
					"claim", status == AMP_OK ? res.name : NULL,
					"expires", amp_time_format(res.expires_ms, until),
					"renewed", res.renewed);

		json_object_set_new(out, "holder", json_string(status == AMP_OK ?
				    amp_store_agent(w.st) : res.holder));
		amp_cli_print_json(out, 0);
		json_decref(out);
	}
	if (status >= 0 && !w.json_out) {
		/* The time as every human output shows it (human.h). */
		amp_human h = { 0 };
		char when[AMP_HUMAN_TIME_BUFSZ];

		amp_human_start(&h, NULL, 0, 0);
		fprintf(amp_human_out(&h), "%s %s%s%s as %s, expires %s (%s)\n",
			res.renewed ? "renewed the claim of" : "claimed", w.arg, a.subtask ? " subtask " : "",
			a.subtask ? amp_term(a.subtask) : "", amp_store_agent(w.st),
			amp_human_when_ms(&h, res.expires_ms, when), res.name);
		amp_human_out_end(&h);
	}
	return amp_cli_write_done(&w, status);
}
