/*
 * sync_git.c - the fetch and the push of amp sync, driven through the
 * user's own `git` (sync_git.h).
 *
 * Transport is the user's own `git` program, run with an argv (never a
 * shell): ssh agents, credential helpers, insteadOf and proxies work as
 * they do for the user's other repositories.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/proc.h"
#include "base/util.h"
#include "store/store.h"
#include "sync.h"
#include "sync_git.h"

/* ---- running git ---------------------------------------------------------- */

/*
 * Runs `git --git-dir=<repo> <args...>` (args NULL-terminated) as amp_run
 * does (proc.h): stdout into *out when out is not NULL, else to stderr;
 * stderr to errfd (-1: amp's own).
 */
static int run_git(amp_store *st, const char *const *args, char **out, int errfd,
		   int *code, amp_error *err)
{
	const char *argv[32];
	char gitdir[4096 + 16];
	size_t n = 0;

	snprintf(gitdir, sizeof(gitdir), "--git-dir=%s",
		 git_repository_path(amp_store_repo(st)));
	argv[n++] = "git";
	argv[n++] = gitdir;
	while (*args && n < sizeof(argv) / sizeof(argv[0]) - 1)
		argv[n++] = *args++;
	argv[n] = NULL;
	return amp_run_errfd(argv, NULL, 0, out, NULL, errfd, code, err);
}

/* Notes what the fetch from `key` brought of the messages ref, by this
 * clone's clock (amp_arrivals_fetched). */
static int first_seen(amp_store *st, const char *key, amp_error *err)
{
	const char *ref = amp_store_messages_ref(st);
	char mirror[600];
	git_oid tip, local;
	int64_t now;
	int status, have_local;

	snprintf(mirror, sizeof(mirror), "%s%s/%s", AMP_SYNC_NAMESPACE, key, ref + strlen("refs/amp/"));
	if (git_reference_name_to_id(&tip, amp_store_repo(st), mirror) < 0) {
		git_error_clear();
		return AMP_OK;
	}
	have_local = git_reference_name_to_id(&local, amp_store_repo(st), ref) == 0;
	git_error_clear();
	if ((status = amp_clock_now_ms(&now, err)) < 0)
		return status;
	return amp_arrivals_fetched(st, key, &tip, have_local ? &local : NULL, now, err);
}

/* The most of git's stderr read back (the hook's refusals, a reset). */
#define AMP_SYNC_GIT_ERR_MAX (1024 * 1024)

/*
 * run_git with its stderr kept (a temporary file), shown on amp's own
 * stderr once git is done, and given back in *said (freed by the caller;
 * NULL when it could not be kept).
 */
static int run_git_said(amp_store *st, const char *const *args, char **out, char **said,
			int *code, amp_error *err)
{
	FILE *f = tmpfile();
	size_t got;
	int status = run_git(st, args, out, f ? fileno(f) : -1, code, err);

	*said = NULL;
	if (f && fseek(f, 0, SEEK_SET) == 0 && (*said = malloc(AMP_SYNC_GIT_ERR_MAX + 1))) {
		got = fread(*said, 1, AMP_SYNC_GIT_ERR_MAX, f);
		(*said)[got] = '\0';
		fwrite(*said, 1, got, stderr);
	}
	if (f)
		fclose(f);
	return status;
}

/* git failed (exit 128) because the server reset the connection: git
 * daemon resets what its listen queue (5) has no room for, so many
 * clones at once meet it.  Nothing was sent or taken: try again. */
static int was_reset(int code, const char *said)
{
	return code == 128 && said && strstr(said, "Connection reset by peer");
}

int amp_sync_fetch(amp_store *st, const char *remote, const char *key, const char *id,
		   amp_error *err)
{
	char refspec[600], marks[600], *said = NULL;
	int code, status;
	/* No auto maintenance: a sync is a hot path, and the clone's git gc
	 * is the user's (or a cron's) to run. */
	const char *args[] = { "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
			       "--no-auto-maintenance", "--prune", remote, refspec,
			       id ? marks : NULL, NULL };

	snprintf(refspec, sizeof(refspec), "+refs/amp/*:%s%s/*", AMP_SYNC_NAMESPACE, key);
	/* Inbox: the hub's markers of this clone's inbox only (sync_hub.h). */
	if (id)
		snprintf(marks, sizeof(marks), "+" AMP_SYNC_JOINED "%s/*:" AMP_SYNC_MARKS "%s/*",
			 id, key);
	status = run_git_said(st, args, NULL, &said, &code, err);
	if (status == AMP_OK && was_reset(code, said))
		status = FETCH_RESET;
	free(said);
	if (status)
		return status;
	if (code != 0)
		return amp_error_set(err, AMP_EIO, "",
				     "git fetch from %s failed (exit %d, git's reason above); nothing changed locally",
				     remote, code);
	/* The hub's arrival notes (store/arrivals.h), where amp watch reads
	 * them, and what this fetch saw first. */
	snprintf(refspec, sizeof(refspec), "%s%s/%s", AMP_SYNC_NAMESPACE, key,
		 &AMP_ARRIVALS_REF[strlen("refs/amp/")]);
	if ((status = amp_arrivals_take(amp_store_repo(st), refspec, err)) < 0)
		return status;
	return first_seen(st, key, err);
}

/*
 * The records the hub's amp hook refused in an update of `dst`, read from
 * git push's stderr: each line "remote: amp hook: refused <dst>: commit
 * <hex>: <record path>: <reason>" (amp hook pre-receive's refusal) into
 * `paths` as {path: reason}.  A line that names no record file (a refusal
 * of the commit, a signature) is not one.
 */
static void hook_refusals(char *text, const char *dst, json_t *paths)
{
	char prefix[700], *line, *save = NULL;

	snprintf(prefix, sizeof(prefix), "amp hook: refused %s: commit ", dst);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = strstr(line, prefix), *file, *end, *why;
		size_t len = strlen(line);

		/* git pads the remote's lines (sideband.c): cut the blanks. */
		while (len && (line[len - 1] == ' ' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (!p)
			continue;
		file = p + strlen(prefix);
		while (isxdigit((unsigned char)*file))
			file++;
		if (file == p + strlen(prefix) || strncmp(file, ": tasks/", 8))
			continue;
		file += 2;
		if (!(end = strstr(file, ": ")) || end - file < 6 || strncmp(end - 5, ".json", 5))
			continue;
		*end = '\0';
		why = end + 2;
		if (!json_object_get(paths, file))
			json_object_set_new(paths, file, json_string(why));
	}
}

/*
 * Pushes the messages ref (and the errors ref when `errors`) to `dst` and
 * `edst` on the remote: non-forced to the same names (amp.syncPush ref),
 * or forced to the clone's own inbox (amp.syncPush inbox: nobody else
 * writes there).  Returns PUSHED, PUSH_RACED (someone pushed first: fetch
 * and join again), PUSH_REFUSED (the hub's amp hook refused records,
 * named in `refused` as {path: reason}; err filled), or a negative status
 * (err filled; git's reason went to stderr).
 */
int amp_sync_push(amp_store *st, const char *remote, const char *dst, const char *edst,
		  int force, int errors, json_t *refused, int *left, amp_error *err)
{
	const char *ref = amp_store_messages_ref(st), *eref = amp_store_errors_ref(st);
	char spec[1300], espec[1300], shown[1300], *out = NULL, *line, *save = NULL;
	char *said = NULL;
	int code, status, found = 0;
	const char *args[] = { "-c", "advice.pushUpdateRejected=false", "push", "--porcelain",
			       remote, spec, errors ? espec : NULL, NULL };

	snprintf(spec, sizeof(spec), "%s%s:%s", force ? "+" : "", ref, dst);
	snprintf(espec, sizeof(espec), "%s%s:%s", force ? "+" : "", eref, edst);
	/* --porcelain names the refs without the "+" */
	snprintf(shown, sizeof(shown), "%s:%s", ref, dst);
	json_object_clear(refused);
	/* git's stderr is kept to read the hook's refusals, then shown. */
	if ((status = run_git_said(st, args, &out, &said, &code, err)) < 0)
		goto cleanup;
	status = PUSHED;
	/* The hub's hook left the inbox to the join under way (amp hook
	 * post-receive): its records are joined after the push returns.
	 * Its marker says so (sync_hub.h), which the fetch brings; this
	 * line is read for hubs before that marker. */
	if (left) {
		const char *slash = strrchr(dst, '/');
		char inbox[700];

		/* "amp hook: left refs/amp-in/<id>/<name> to the join under way" */
		snprintf(inbox, sizeof(inbox), "amp hook: left %.*s/", (int)(slash ? slash - dst : 0),
			 dst);
		*left = said && strstr(said, inbox);
	}
	/* --porcelain: "<flag>\t<from>:<to>\t<summary>" per ref; "!" is a
	 * refusal, "[rejected]" the remote's ref moved first, "[remote
	 * rejected]" a hook or the server said no. */
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *summary;

		if (!line[0] || line[1] != '\t' || strncmp(line + 2, shown, strlen(shown)) ||
		    line[2 + strlen(shown)] != '\t')
			continue;
		found = 1;
		summary = line + 3 + strlen(shown);
		/* "=": the inbox held it already, so no hook ran: whether
		 * it is joined is the hub's marker's to say. */
		if (line[0] == '=' && left)
			*left = 1;
		if (line[0] != '!')
			break;
		/* "[rejected]": the remote's ref had moved when git compared;
		 * "failed to update ref" / "failed to lock": it moved between
		 * that check and the server's own compare-and-swap.  Both are
		 * someone pushing first. */
		if (!strncmp(summary, "[rejected]", 10) ||
		    (!strncmp(summary, "[remote rejected]", 17) &&
		     (strstr(summary, "failed to update ref") || strstr(summary, "failed to lock"))))
			status = PUSH_RACED;
		else
			status = amp_error_set(err, AMP_EIO, "", "%s refused the push of %s: %s",
					       remote, ref, amp_term(summary));
		/* The hub's amp hook names the records it refused. */
		if (status == AMP_EIO && !strncmp(summary, "[remote rejected]", 17) && said) {
			hook_refusals(said, dst, refused);
			if (json_object_size(refused))
				status = PUSH_REFUSED;
		}
		break;
	}
	if (!found && was_reset(code, said))
		status = PUSH_RESET;
	else if (!found)
		status = amp_error_set(err, AMP_EIO, "",
				       "git push to %s failed (exit %d, git's reason above); nothing lost: the local history stays on %s",
				       remote, code, ref);
cleanup:
	free(said);
	free(out);
	return status;
}
