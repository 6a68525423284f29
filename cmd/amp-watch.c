/* amp watch: apply the rules AMP/1.0 wants to hold by themselves. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "ui/ui.h"
#include "enforce/enforce.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp watch [--once | --interval <1..86400 sec>] [--full] [--json]\n"
	"                 [--exec <cmd> [--exec-for <role>] | --no-exec] [--sync|--no-sync]\n"
	"                 [--dashboard <dir>] [--repo <dir>]\n";

/* What the reports print with. */
struct out {
	int json;
	const char *cmd; /* the notify command, for its failures */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void print_action(const amp_watch_action *a, void *ctx)
{
	if (((struct out *)ctx)->json) {
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

static json_t *str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

/* A notification event: a JSON line with --json; a failure, a drop or a
 * start is said on stderr too (a diagnostic), a success on stdout. */
static void print_notify(const amp_notify_event *e, void *ctx)
{
	const struct out *out = ctx;
	const char *what = !strcmp(e->kind ? e->kind : "", "escalation") ? "escalation" : "message";
	char d[AMP_DURATION_BUFSZ];

	if (out->json) {
		json_t *o;

		if (!strcmp(e->action, "notify_start"))
			o = json_pack("{s:s,s:s,s:s}", "action", e->action, "tip", e->tip,
				      "reason", e->error);
		else
			o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:i}", "action", e->action,
				      "kind", e->kind, "msg_id", e->msg_id, "task_id", e->task_id,
				      "type", e->type, "escalation_type", str_or_null(e->escalation_type),
				      "severity", str_or_null(e->severity), "attempt", e->attempt);
		if (o && e->error && strcmp(e->action, "notify_start"))
			json_object_set_new(o, "error", json_string(e->error));
		if (o && !strcmp(e->action, "notify_failed"))
			json_object_set_new(o, "retry_in_sec", json_integer(e->retry_in_ms / 1000));
		amp_cli_print_json(o, 0);
		json_decref(o);
	} else if (!strcmp(e->action, "notified")) {
		printf("notified %s %s %s (%s)\n", what,
		       amp_term(e->escalation_type[0] ? e->escalation_type : e->type),
		       amp_term(e->task_id), amp_term(e->msg_id));
	}
	fflush(stdout);
	if (!strcmp(e->action, "notify_failed"))
		fprintf(stderr, "amp watch: notify: %s %s for %s %s (attempt %d, next in %s)\n",
			amp_term(out->cmd), amp_term(e->error), what, amp_term(e->msg_id),
			e->attempt, amp_duration_format(e->retry_in_ms / 1000, d));
	else if (!strcmp(e->action, "notify_dropped"))
		fprintf(stderr, "amp watch: notify: %s: dropped the notification of %s %s (task %s)\n",
			amp_term(e->error), what, amp_term(e->msg_id), amp_term(e->task_id));
	else if (!strcmp(e->action, "notify_start"))
		fprintf(stderr, "amp watch: notify: %s: notifying what arrives after %s\n",
			amp_term(e->error), e->tip);
}

/* One pass: enforcement first, then the notifications (n may be NULL);
 * returns its exit code.  A failing notify command is no failure of the
 * pass (it is reported and kept); an I/O error of the notifications is. */
static int pass(amp_store *st, amp_schema_set **set, int full, int sync,
		amp_notify_opts *n, struct out *out)
{
	amp_watch_opts o;
	amp_watch_stats stats;
	amp_notify_stats nstats;
	amp_errlist errors = { 0 };
	amp_error err;
	int status, code = 0, sync_code = 0, again;

	/* --sync: what others wrote comes first, so that a cause another
	 * clone escalated is not escalated again here.  A hub that cannot
	 * be reached fails the sync, not the pass: the local SSOT is still
	 * watched. */
	if (sync) {
		if (!*set && (code = amp_cli_load_schemas("watch", set)))
			return code;
		sync_code = amp_cli_sync_after_write("watch", st, *set, 1);
	}
	if ((status = amp_watch_opts_load(st, &o, &err)) < 0)
		return amp_cli_fail("watch", &err);
	o.full = full;
	/* Where notifying starts when it has no state yet: before what this
	 * pass writes, or its escalations would never be notified. */
	if (n) {
		git_commit *before = NULL;

		n->has_first_tip = amp_store_tip(st, amp_store_messages_ref(st), &before, NULL, &err) == 0;
		if (n->has_first_tip)
			git_oid_cpy(&n->first_tip, git_commit_id(before));
		git_commit_free(before);
	}
	status = amp_watch_pass(st, set, &o, print_action, out, &stats, &errors);
	if (status < 0)
		code = amp_cli_print_errors("watch", &errors, status);
	amp_errlist_free(&errors);
	code = amp_cli_report_skipped("watch", st, code);
	/* ... and what this pass wrote goes out at once. */
	if (sync && stats.escalated && (again = amp_cli_sync_after_write("watch", st, *set, 1)) &&
	    !sync_code)
		sync_code = again;
	if (!code)
		code = sync_code;
	if (!n || code == AMP_EXIT_USAGE)
		return code;
	if ((status = amp_clock_now_ms(&n->now_ms, &err)) < 0)
		return amp_cli_fail("watch", &err);
	status = amp_notify_pass(st, n, print_notify, out, &nstats, &errors);
	if (status < 0 && !code)
		code = amp_cli_print_errors("watch", &errors, status);
	else if (status < 0)
		amp_cli_print_errors("watch", &errors, status);
	amp_errlist_free(&errors);
	return code;
}

/* The notification settings: git config, then the options; NULL in *use
 * when notifications are off.  Returns 0 or the exit code. */
static int notify_setup(amp_store *st, amp_schema_set **set, const char *exec_cmd,
			const char *exec_for, int no_exec, amp_notify_opts *n,
			amp_notify_opts **use)
{
	amp_error err;
	int code;

	*use = NULL;
	memset(n, 0, sizeof(*n));
	if (no_exec)
		return 0;
	if (amp_notify_opts_load(st, n, &err) < 0)
		return amp_cli_fail("watch", &err);
	if (exec_cmd)
		snprintf(n->cmd, sizeof(n->cmd), "%s", exec_cmd);
	if (exec_for)
		snprintf(n->role, sizeof(n->role), "%s", exec_for);
	if (!n->cmd[0])
		return exec_for ? amp_cli_usage_error("watch", usage,
						      "--exec-for needs a command (--exec or git config amp.notify)") : 0;
	if (n->role[0] &&
	    ((code = amp_cli_load_schemas("watch", set)) ||
	     (code = amp_cli_check_id("watch", *set, exec_for ? "--exec-for" : "git config amp.notifyRole",
				      n->role, "addressee_role"))))
		return code;
	n->cancel = &stop;
	*use = n;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "once", no_argument, NULL, 'o' },
		{ "interval", required_argument, NULL, 'i' },
		{ "full", no_argument, NULL, 'F' },
		{ "json", no_argument, NULL, 'j' },
		{ "exec", required_argument, NULL, 'x' },
		{ "exec-for", required_argument, NULL, 'R' },
		{ "no-exec", no_argument, NULL, 'X' },
		AMP_CLI_SYNC_OPTIONS,
		{ "dashboard", required_argument, NULL, 'D' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *exec_cmd = NULL, *exec_for = NULL, *dashboard = NULL;
	amp_notify_opts notify, *use_notify = NULL;
	struct out out = { 0, NULL };
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	struct sigaction sa;
	long long interval = -1;
	int c, once = 0, full = 0, no_exec = 0, code = 0, sync = -1;
	amp_error err;

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
		case 'j': out.json = 1; break;
		case 'x': exec_cmd = optarg; break;
		case 'R': exec_for = optarg; break;
		case 'X': no_exec = 1; break;
		AMP_CLI_SYNC_CASES(sync);
		case 'D': dashboard = optarg; break;
		case 'r': repo = optarg; break;
		case 'h': return amp_cli_help("watch", usage, opts);
		default:
			return amp_cli_bad_option("watch", usage, opts, argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("watch", argc, argv, "h", opts)))
		return code;
	if (optind != argc)
		return amp_cli_usage_error("watch", usage, "no arguments expected");
	if (once && interval > 0)
		return amp_cli_usage_error("watch", usage, "--once and --interval exclude each other");
	if (no_exec && (exec_cmd || exec_for))
		return amp_cli_usage_error("watch", usage, "--no-exec excludes --exec and --exec-for");
	if (exec_cmd && !*exec_cmd)
		return amp_cli_usage_error("watch", usage, "--exec: the command is empty");
	if (!once && interval <= 0)
		interval = 60;
	if ((code = amp_cli_open_store("watch", repo, &st)) ||
	    (code = notify_setup(st, &set, exec_cmd, exec_for, no_exec, &notify, &use_notify)))
		goto cleanup;
	if (sync < 0 && amp_store_config_bool(st, "amp.autoSync", 0, &sync, &err) < 0) {
		code = amp_cli_fail("watch", &err);
		goto cleanup;
	}
	out.cmd = notify.cmd;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (;;) {
		struct timespec ts = { 0, 0 };
		long long left;

		code = pass(st, &set, full, sync, use_notify, &out);
		full = 0;
		/* --dashboard: the site follows what this pass wrote; a
		 * failure to write it is an I/O error of the pass. */
		if (dashboard && code != AMP_EXIT_USAGE) {
			int64_t now;

			if (amp_clock_now_ms(&now, &err) < 0 ||
			    amp_dashboard_write(st, dashboard, now, NULL, &err) < 0)
				code = amp_cli_fail("watch", &err);
		}
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
	amp_cli_trace("watch", st);
cleanup:
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
