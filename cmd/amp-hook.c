/*
 * amp hook: the git hooks that guard a shared SSOT.  `pre-receive` runs on
 * the server (the hub) and `pre-push` on a client; both refuse an update of
 * an amp ref (refs/amp/...) that does not append valid records (lib/enforce/hook.h).
 * `pre-commit`, `pre-merge-commit` and `work-pre-push` guard the work
 * repository a dispatch names: no agent commits on, merges into or pushes
 * to a protected branch (lib/write/guard.h).  `install` writes the hook scripts.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ui/ui.h"
#include "write/write.h"
#include "enforce/enforce.h"
#include "sync/sync.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp hook pre-receive\n"
	"   or: amp hook post-receive\n"
	"   or: amp hook pre-push <remote> <url>\n"
	"   or: amp hook pre-commit\n"
	"   or: amp hook pre-merge-commit\n"
	"   or: amp hook work-pre-push <remote> <url>\n"
	"   or: amp hook install [--server | --work] [--repo <dir>]\n";

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

/* Notes that `tip` reached the hub now (lib/enforce/arrival.h); a
 * failure is said, and the records count from their commits. */
static void note_arrival(amp_store *st, const char *ref, const git_oid *tip, int *code)
{
	amp_error err;

	if (amp_hook_note_arrival(st, tip, &err) < 0) {
		fprintf(stderr, "amp hook: error: %s: cannot note its arrival: %s\n", amp_term(ref),
			amp_term(err.message));
		*code = amp_exit_code(err.status);
	}
}

/* The hub's post-receive: its store, and its exit code so far. */
struct hub_run {
	amp_store *st;
	int code;
};

/* Says an escalation of the hub's watch pass (amp.hookWatch). */
static void print_escalation(const amp_watch_action *a, void *ctx)
{
	(void)ctx;
	fprintf(stderr, "amp hook: %s %s %s %s (%s)\n", a->action, a->escalation_type,
		amp_term(a->task_id), amp_term(a->cause), amp_term(a->msg_id));
}

/* The hub's watch pass after the push (amp.hookWatch): what it could not
 * do is said; the push has happened. */
static void hub_watch(amp_store *st, amp_schema_set **set, int *code)
{
	amp_errlist errors = { 0 };
	int ran;

	if (amp_hook_watch(st, set, print_escalation, NULL, &ran, &errors) < 0) {
		size_t i;

		for (i = 0; i < errors.count; i++)
			fprintf(stderr, "amp hook: error: watch: %s\n", amp_term(errors.items[i].message));
		*code = amp_exit_code(errors.items[0].status);
	}
	amp_errlist_free(&errors);
}

/* What the hub's join made of one inbox (amp_sync_join_inboxes): said on
 * the pusher's stderr, and the join's arrival noted. */
static void report_join(const amp_sync_inbox_joined *j, void *ctx)
{
	struct hub_run *run = ctx;

	if (j->status < 0) {
		fprintf(stderr, "amp hook: error: %s: %s (the inbox stays as it is)\n",
			amp_term(j->inbox), amp_term(j->err->message));
		run->code = amp_exit_code(j->status);
		return;
	}
	fprintf(stderr, "amp hook: joined %s into %s: %lu record%s replayed, %lu set aside (%.7s)\n",
		amp_term(j->inbox), j->target, j->out.replayed, j->out.replayed == 1 ? "" : "s",
		j->out.superseded, git_oid_tostr_s(&j->out.tip));
	/* For benchmarks (share/bench-hub.sh): how long this join waited
	 * for the ref's writers (other joins never: they take turns on
	 * their own lock), and how long it took. */
	if (getenv("AMP_TRACE"))
		fprintf(stderr, "amp hook: trace: join of %s: waited_ms=%lld joined_ms=%lld\n",
			amp_term(j->inbox), j->out.waited_ms, j->out.joined_ms);
	note_arrival(run->st, j->target, &j->out.tip, &run->code);
}

/*
 * post-receive on a hub: notes when each update of refs/amp/<ref> arrived
 * (the hub's clock, lib/store/arrivals.h); when the push updated a clone's
 * inbox (refs/amp-in/<id>/<ref>, amp.syncPush inbox), or when run with no
 * input at all (by hand, or a cron), joins every pending inbox into
 * refs/amp/<ref> (amp_sync_join_inboxes) and notes each join's arrival,
 * unless a join is under way: then the push returns at once, its inbox
 * left to that join ("amp hook: left <inbox> to the join under way").
 * Then the hub's watch pass when amp.hookWatch says so.  The push has
 * happened whatever this does: a join that fails leaves the inbox as it
 * is and says why, and the clone's sync, which fetches next, sees what is
 * missing.
 */
static int absorb_inboxes(int push)
{
	amp_schema_set *set = NULL;
	amp_error err;
	char line[LINE_MAX_BYTES], a[LINE_MAX_BYTES], b[LINE_MAX_BYTES], c[LINE_MAX_BYTES];
	char left[8][300];
	git_oid left_tip[8];
	struct hub_run run = { NULL, 0 };
	int lines = 0, inboxes = 0, ran, i;

	(void)push;
	if ((run.code = amp_cli_open_store("hook", NULL, &run.st)) ||
	    (run.code = amp_cli_load_schemas("hook", &set)))
		goto cleanup;
	while (fgets(line, sizeof(line), stdin)) {
		git_oid new;

		lines++;
		if (sscanf(line, "%4095s %4095s %4095s", a, b, c) != 3 ||
		    git_oid_fromstr(&new, b) < 0 || git_oid_is_zero(&new))
			continue;
		if (!strncmp(c, "refs/amp/", 9) && strcmp(c, AMP_ARRIVALS_REF))
			note_arrival(run.st, c, &new, &run.code);
		else if (!strncmp(c, AMP_SYNC_INBOX, strlen(AMP_SYNC_INBOX)) &&
			 inboxes++ < (int)(sizeof(left) / sizeof(left[0]))) {
			snprintf(left[inboxes - 1], sizeof(left[0]), "%.290s", c);
			git_oid_cpy(&left_tip[inboxes - 1], &new);
		}
	}
	if (inboxes || !lines) {
		int joined = amp_sync_join_inboxes(run.st, set, report_join, &run, &ran, &err);

		if (joined < 0) {
			fprintf(stderr, "amp hook: error: the join of the inboxes: %s (they stay as they are)\n",
				amp_term(err.message));
			run.code = amp_exit_code(err.status);
		}
		if (ran == AMP_SYNC_JOIN_CHILD)
			goto cleanup; /* the push has returned: nobody reads this */
		/* The clone's sync fetches its marker, "left <tip>", and
		 * fetches again until the join under way took it; the line is
		 * for the user (and clones before the marker, sync_git.c).
		 * Not after an error (the join's lock could not be taken): no
		 * join is under way, and the clone is told the hub's reason
		 * above instead of waiting for nothing. */
		for (i = 0; joined >= 0 && ran == AMP_SYNC_JOIN_LEFT && i < inboxes &&
			    i < (int)(sizeof(left) / sizeof(left[0]));
		     i++) {
			if (amp_sync_mark_left(run.st, left[i], &left_tip[i], &err) < 0)
				fprintf(stderr, "amp hook: error: %s\n", amp_term(err.message));
			fprintf(stderr, "amp hook: left %s to the join under way\n", amp_term(left[i]));
		}
		/* The inboxes stay: deleting a ref while another push's
		 * receive-pack walks every ref makes that push fail ("bad
		 * object"), and the clone's next push replaces it anyway. */
	}
	hub_watch(run.st, &set, &run.code);
	/* After the join, whose objects count too (store/hubgc.h). */
	if (amp_store_hub_gc(run.st, &ran, &err) < 0)
		fprintf(stderr, "amp hook: error: %s\n", amp_term(err.message));
cleanup:
	amp_schema_set_free(set);
	amp_store_free(run.st);
	return run.code;
}

static int install(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "server", no_argument, NULL, 's' },
		{ "work", no_argument, NULL, 'w' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const ssot_client[] = { "pre-push", NULL };
	static const char *const ssot_server[] = { "pre-receive", "post-receive", NULL };
	static const char *const work[] = { "pre-commit", "pre-merge-commit", "work-pre-push",
					    NULL };
	const char *const *commands = ssot_client;
	const char *repo = NULL;
	char dir[PATH_MAX], program[PATH_MAX + 16], path[AMP_PATH_MAX];
	amp_store *st = NULL;
	amp_error err;
	int c, code, chained;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
		case 'w':
			if (commands != ssot_client)
				return amp_cli_usage_error("hook", usage, "--server and --work exclude each other");
			commands = c == 's' ? ssot_server : work;
			break;
		case 'r': repo = optarg; break;
		case 'h': return amp_cli_help("hook", usage, opts);
		default:
			return amp_cli_bad_option("hook", usage, opts, argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("hook", argc, argv, "h", opts)))
		return code;
	if (optind < argc)
		return amp_cli_usage_error("hook", usage, "unexpected argument: '%s'", argv[optind]);
	/* The hook runs this very program's driver, `amp hook <command>`, by
	 * its absolute path, whatever PATH git has.  The running program is
	 * bin/amp or one of its links: bin/amp-hook in the build tree, or
	 * <prefix>/libexec/amp/amp-hook, a symbolic link /proc/self/exe
	 * resolves to <prefix>/bin/amp.  So amp is next to it in both trees,
	 * whereas amp-hook is next to amp only in the build tree. */
	if (amp_exe_dir(dir, sizeof(dir)) < 0) {
		fprintf(stderr, "amp hook: error: cannot find the running program\n");
		return AMP_EXIT_IO;
	}
	snprintf(program, sizeof(program), "%s/amp", dir);
	if (access(program, X_OK) < 0) {
		fprintf(stderr, "amp hook: error: %s: the hooks run it, and it is not there: %s\n",
			amp_term(program), strerror(errno));
		return AMP_EXIT_IO;
	}
	/* The work repository is here, never $AMP_REPO: that names the SSOT. */
	if (!repo && commands == work)
		repo = ".";
	if ((code = amp_cli_open_store("hook", repo, &st)))
		return code;
	/* A hub's post-receive runs git gc --auto only when it has work
	 * (store/hubgc.h), instead of receive-pack at every push. */
	if (commands == ssot_server && amp_store_hub_gc_install(st, &err) < 0)
		code = amp_cli_fail("hook", &err);
	for (; *commands && !code; commands++) {
		if (amp_hook_install(st, *commands, program, path, sizeof(path), &chained, &err) < 0)
			code = amp_cli_fail("hook", &err);
		else
			printf("installed %s%s\n", amp_term(path),
			       chained ? " (chained to the hook that was there)" : "");
	}
	amp_store_free(st);
	return code;
}

/* Adds ", 'branch'" for ref to list, as long as it fits: the list is for
 * the escalation's description. */
static void list_branch(char *list, size_t listsz, const char *ref)
{
	size_t n = strlen(list);

	if (n + 8 < listsz)
		snprintf(list + n, listsz - n, "%s'%.200s'", n ? ", " : "", ref + 11);
}

/* Refuses the act of `role` on the protected ref. */
static void print_guard_refusal(const char *role, const char *act, const char *ref)
{
	fprintf(stderr, "amp hook: error: %s: the %s may not %s protected branch '%s' "
		"(AMP/1.0 branch_violation: \"Executor tries to operate the main branch\"; "
		"No Auto-Merge): work on the dispatch's feature branch\n",
		amp_term(ref + 11), role, act, amp_term(ref + 11));
}

/* The protected refs git's pre-push input (one "<local ref> <local sha>
 * <remote ref> <remote sha>" a line) pushes to, into list; each refused
 * on stderr.  0 or the exit code. */
static int push_refs(amp_store *work, amp_store *ssot, const char *role, char *list,
		     size_t listsz)
{
	char line[LINE_MAX_BYTES], a[LINE_MAX_BYTES], b[LINE_MAX_BYTES], c[LINE_MAX_BYTES],
		d[LINE_MAX_BYTES];

	while (fgets(line, sizeof(line), stdin)) {
		if (!strchr(line, '\n') && !feof(stdin)) {
			fprintf(stderr, "amp hook: error: a line of input longer than %d bytes\n",
				LINE_MAX_BYTES - 1);
			return AMP_EXIT_USAGE;
		}
		if (sscanf(line, "%4095s %4095s %4095s %4095s", a, b, c, d) != 4) {
			fprintf(stderr, "amp hook: error: not a line of git's pre-push input: %s",
				amp_term(line));
			return AMP_EXIT_USAGE;
		}
		/* A deletion of main operates it too. */
		if (amp_guard_is_protected(work, ssot, c)) {
			print_guard_refusal(role, "push to", c);
			list_branch(list, listsz, c);
		}
	}
	return 0;
}

/* Records the refusal in the SSOT, or says why it could not. */
static void record_refusal(amp_store *work, amp_store *ssot, const amp_error *ssot_err,
			   amp_schema_set *set, const char *role, const char *act,
			   const char *branches)
{
	amp_errlist errors = { 0 };
	amp_send_result res;
	amp_error err;
	char task[64], dispatch[256];
	const char *why = NULL;

	if (!ssot)
		why = ssot_err->message;
	else if (amp_guard_find_task(ssot, work, task, sizeof(task), dispatch, sizeof(dispatch),
				     &err) < 0)
		why = err.message;
	else if (amp_guard_record(ssot, set, work, task, dispatch, role, act, branches, &res,
				  &errors) < 0)
		why = errors.count ? errors.items[0].message : "unknown error";
	if (why)
		fprintf(stderr, "amp hook: warning: the branch_violation could not be recorded in the SSOT: %s\n",
			amp_term(why));
	else
		fprintf(stderr, "amp hook: recorded branch_violation %s in task %s\n",
			amp_term(res.msg_id), task);
	amp_errlist_free(&errors);
}

/*
 * The work repository's guard: pre-commit (push 0) checks the branch HEAD
 * is on, work-pre-push (push 1) the remote refs of git's input.  Refused:
 * exit 3, with one branch_violation escalation recorded for the refusal.
 */
static int guard(int push)
{
	amp_store *work = NULL, *ssot = NULL;
	amp_schema_set *set = NULL;
	amp_error err, ssot_err;
	const char *gitdir = getenv("GIT_DIR"), *role = NULL;
	const char *act = push ? "push to" : "commit on";
	char branches[1024] = "", head[AMP_PATH_MAX];
	int code;

	/* git gives a hook GIT_DIR when it was given one; $AMP_REPO names the
	 * SSOT, not this repository. */
	if ((code = amp_cli_open_store("hook", gitdir && *gitdir ? gitdir : ".", &work)))
		return code;
	if ((code = amp_cli_load_schemas("hook", &set)) ||
	    (code = amp_cli_role("hook", work, set, NULL, 0, &role)))
		goto cleanup;
	/* A human's own work is not blocked: no role is set, or the admin's. */
	if (!role || !strcmp(role, "admin"))
		goto cleanup;
	if (amp_guard_open_ssot(work, &ssot, &ssot_err) < 0)
		ssot = NULL;
	if (push) {
		code = push_refs(work, ssot, role, branches, sizeof(branches));
	} else if (amp_guard_head(work, head, sizeof(head), &err) < 0) {
		code = amp_cli_fail("hook", &err);
	} else if (amp_guard_is_protected(work, ssot, head)) {
		print_guard_refusal(role, act, head);
		list_branch(branches, sizeof(branches), head);
	}
	if (code || !branches[0])
		goto cleanup;
	record_refusal(work, ssot, &ssot_err, set, role, act, branches);
	code = AMP_EXIT_REFUSED;
cleanup:
	amp_schema_set_free(set);
	amp_store_free(ssot);
	amp_store_free(work);
	return code;
}

/* The hooks git runs, with the arguments git gives each. */
static const struct {
	const char *name;
	int push;         /* 1: git's pre-push, "<remote> <url>" */
	int (*run)(int push);
} hooks[] = {
	{ "pre-receive", 0, check_updates },
	{ "post-receive", 0, absorb_inboxes },
	{ "pre-push", 1, check_updates },
	{ "pre-commit", 0, guard },
	/* git runs pre-merge-commit, not pre-commit, for a merge commit. */
	{ "pre-merge-commit", 0, guard },
	{ "work-pre-push", 1, guard },
};

int main(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : "";
	size_t i;

	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		fputs(usage, stdout);
		return 0;
	}
	for (i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		if (strcmp(sub, hooks[i].name))
			continue;
		if (argc != (hooks[i].push ? 4 : 2))
			return amp_cli_usage_error("hook", usage, "%s takes %s", sub,
						   hooks[i].push ? "<remote> <url>" : "no argument");
		return hooks[i].run(hooks[i].push);
	}
	if (!strcmp(sub, "install"))
		return install(argc - 1, argv + 1);
	if (!*sub)
		return amp_cli_usage_error("hook", usage, "missing subcommand");
	return amp_cli_usage_error("hook", usage, "unknown subcommand: '%s'", sub);
}
