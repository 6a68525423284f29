/*
 * fuzz_store.c - the readers of stored records: what `amp status` and
 * `amp watch` do with a task directory that holds anything at all (a
 * fetch, an older amp or a hand-made commit can bring in any file).
 *
 * An input holds up to 16 records separated by lines "@@" (FUZZ_SEP); each
 * record is its file name on the first line, then its content, e.g.
 *
 *   000001.msg.task_dispatch-T-2026-044-1772116327000.json
 *   { "msg_id": ... }
 *
 * They become the directory tasks/2026/0/T-2026-044/ of a commit on the
 * messages ref of a scratch repository.  Then the task is read
 * (amp_store_read_task), its state and `amp status --json` object are
 * computed, and two full passes of the watcher run.  Promises checked:
 *   - a task directory is always readable (bad records are reported, not
 *     fatal): amp_store_read_task and amp_watch_pass succeed;
 *   - `amp status --json` always has an answer;
 *   - the watcher escalates each cause once: a second full pass over the
 *     same SSOT writes nothing.
 * With FUZZ_LAX_WATCH=1 in the environment the two watcher promises are
 * not checked (the passes still run): for fuzzing the readers while a
 * known watcher defect would otherwise be all the fuzzer finds.
 */
#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "fuzz.h"
#include "protocol/protocol.h"
#include "enforce/enforce.h"

#define MAX_RECORDS 16
#define TASK "T-2026-044"

static int lax_watch;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_env();
	fuzz_schemas();
	fuzz_repo();
	lax_watch = getenv("FUZZ_LAX_WATCH") && !strcmp(getenv("FUZZ_LAX_WATCH"), "1");
	return 0;
}

static void check_git(int rc, const char *what)
{
	const git_error *e;

	if (rc < 0) {
		e = git_error_last();
		fuzz_fail("%s: %s", what, e ? e->message : "?");
	}
}

/* Adds one record to the task directory being built; a name git cannot
 * hold (empty, with "/" or NUL) is skipped. */
static int add_record(const char *part, size_t len, void *ctx)
{
	git_treebuilder *dir = ctx;
	git_repository *repo = amp_store_repo(fuzz_repo());
	const char *nl = memchr(part, '\n', len);
	size_t name_len = nl ? (size_t)(nl - part) : len;
	char name[256];
	git_oid blob;

	if (!name_len || name_len >= sizeof(name) || memchr(part, '/', name_len) ||
	    memchr(part, '\0', name_len))
		return 0;
	memcpy(name, part, name_len);
	name[name_len] = '\0';
	if (!strcmp(name, ".") || !strcmp(name, "..") || !strcmp(name, ".git"))
		return 0;
	check_git(git_blob_create_from_buffer(&blob, repo, nl ? nl + 1 : part + len,
					      nl ? len - name_len - 1 : 0), "blob");
	if (git_treebuilder_insert(NULL, dir, name, &blob, GIT_FILEMODE_BLOB) < 0)
		git_error_clear(); /* a name libgit2 refuses: skip it */
	return 0;
}

/* Wraps `inner` in a tree holding it as `name`; returns the new tree. */
static git_oid wrap(git_repository *repo, const char *name, const git_oid *inner)
{
	git_treebuilder *tb = NULL;
	git_oid out;

	check_git(git_treebuilder_new(&tb, repo, NULL), "treebuilder");
	check_git(git_treebuilder_insert(NULL, tb, name, inner, GIT_FILEMODE_TREE), "insert");
	check_git(git_treebuilder_write(&out, tb), "tree");
	git_treebuilder_free(tb);
	return out;
}

/* Commits the task directory built from the input on the messages ref. */
static void commit_task(const uint8_t *data, size_t size)
{
	amp_store *st = fuzz_repo();
	git_repository *repo = amp_store_repo(st);
	git_treebuilder *dir = NULL;
	git_signature *sig = NULL;
	git_commit *parent = NULL;
	git_tree *root = NULL;
	git_reference *ref = NULL;
	git_oid id, parent_id;

	check_git(git_treebuilder_new(&dir, repo, NULL), "treebuilder");
	fuzz_split(data, size, MAX_RECORDS, add_record, dir);
	check_git(git_treebuilder_write(&id, dir), "task tree");
	git_treebuilder_free(dir);
	id = wrap(repo, TASK, &id);
	id = wrap(repo, "0", &id);
	id = wrap(repo, "2026", &id);
	id = wrap(repo, "tasks", &id);
	check_git(git_tree_lookup(&root, repo, &id), "root tree");
	check_git(git_reference_name_to_id(&parent_id, repo, amp_store_messages_ref(st)), "tip");
	check_git(git_commit_lookup(&parent, repo, &parent_id), "parent");
	check_git(git_signature_new(&sig, "fuzz", "fuzz@amp.invalid", 1772116327, 0), "signature");
	check_git(git_commit_create_v(&id, repo, NULL, sig, sig, NULL, "fuzzed task", root,
				      1, parent), "commit");
	check_git(git_reference_create(&ref, repo, amp_store_messages_ref(st), &id, 1, NULL),
		  "update the messages ref");
	git_reference_free(ref);
	git_commit_free(parent);
	git_signature_free(sig);
	git_tree_free(root);
}

static void read_task(int64_t now)
{
	amp_store *st = fuzz_repo();
	git_commit *commit = NULL;
	git_tree *tip = NULL;
	amp_task_log log;
	amp_task_state state;
	amp_error err;
	json_t *out;
	char *text;

	if (amp_store_tip(st, amp_store_messages_ref(st), &commit, &tip, &err) < 0 ||
	    amp_store_read_task(st, tip, TASK, &log, &err) < 0)
		fuzz_fail("cannot read the task: %s", err.message);
	amp_task_state_compute(&log, &state);
	amp_task_state_free(&state);
	if (!(out = amp_task_status_json(&log, now)) ||
	    !(text = json_dumps(out, JSON_PRESERVE_ORDER)))
		fuzz_fail("no status for the task");
	free(text);
	json_decref(out);
	amp_task_log_free(&log);
	git_tree_free(tip);
	git_commit_free(commit);
}

static size_t watch_pass(int64_t now)
{
	amp_schema_set *set = fuzz_schemas();
	amp_watch_opts o = { now, AMP_WATCH_LOCK_THRESHOLD,
			     (int64_t)AMP_WATCH_HEARTBEAT_SEC * 1000, 1 };
	amp_watch_stats stats;
	amp_errlist errors = { 0 };

	memset(&stats, 0, sizeof(stats));
	if (amp_watch_pass(fuzz_repo(), &set, &o, NULL, NULL, &stats, &errors) < 0 &&
	    !lax_watch)
		fuzz_fail("amp watch --once --full: %s",
			  errors.count ? errors.items[0].message : "(no reason)");
	amp_errlist_free(&errors);
	return stats.escalated;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int64_t now;
	size_t again;

	if (amp_time_parse(FUZZ_NOW, &now) < 0)
		fuzz_fail("FUZZ_NOW does not parse");
	fuzz_repo_reset();
	commit_task(data, size);
	read_task(now);
	watch_pass(now);
	read_task(now);
	if ((again = watch_pass(now)) && !lax_watch)
		fuzz_fail("a second full watch pass escalated %zu more time(s)", again);
	return 0;
}
