/*
 * fuzz_send.c - `amp send --envelope <file>` on a scratch repository: the
 * JSON reader, the schema, the protocol rules, the store write and the
 * error log, through the library calls cmd/amp-send.c makes.
 *
 * An input holds up to 8 envelopes separated by lines "@@" (FUZZ_SEP),
 * sent in order to an empty SSOT, so that rules depending on earlier
 * messages (re-dispatch, verdicts, duplicates) are reached.  Afterwards
 * every task is read back and shown as `amp status --json` would.
 * Promises checked, besides "no crash, no leak":
 *   - a fuzzed envelope never makes the repository fail (AMP_EIO);
 *   - a refused envelope (exit 1 or 3) is on the error log: the errors ref
 *     moved;
 *   - a non-conforming envelope is refused by the schema (exit 1), before
 *     any rule looks at it (only a bad /payload/branch may be refused by
 *     the Branch Validation rule, exit 3), and writes nothing to the SSOT
 *     (exit 1: the messages ref did not move);
 *   - an accepted message can be read back from its task, by its msg_id.
 */
#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "record/record.h"
#include "write/write.h"
#include "protocol/protocol.h"
#include "base/util.h"

#define MAX_ENVELOPES 8

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_env();
	fuzz_schemas();
	fuzz_repo();
	return 0;
}

static void tip_of(const char *ref, git_oid *oid)
{
	if (git_reference_name_to_id(oid, amp_store_repo(fuzz_repo()), ref) < 0)
		fuzz_fail("cannot read %s", ref);
}

static void write_input(const char *part, size_t len)
{
	FILE *f = fopen(fuzz_scratch_file(), "wb");

	if (!f || fwrite(part, 1, len, f) != len || fclose(f) != 0)
		fuzz_fail("cannot write %s", fuzz_scratch_file());
}

static const char *first_reason(const amp_errlist *errors)
{
	return errors->count ? errors->items[0].message : "(no reason)";
}

/* The message just accepted is in its task, readable, under its msg_id. */
static void check_readable(amp_store *st, const json_t *msg, const char *msg_id)
{
	const char *task = amp_json_str(msg, "task_id");
	git_commit *commit = NULL;
	git_tree *tip = NULL;
	amp_task_log log;
	amp_error err;
	const amp_entry *e;

	if (!task)
		fuzz_fail("accepted a message without a task_id: %s", msg_id);
	if (amp_store_tip(st, amp_store_messages_ref(st), &commit, &tip, &err) < 0 ||
	    amp_store_read_task(st, tip, task, &log, &err) < 0)
		fuzz_fail("accepted %s, then cannot read task %s: %s", msg_id, task,
			  err.message);
	if (!(e = amp_task_log_find(&log, AMP_ENTRY_MSG, msg_id)))
		fuzz_fail("accepted %s, then it is not in task %s (%zu unreadable records)",
			  msg_id, task, log.nbad);
	if (!json_equal(e->doc, msg))
		fuzz_fail("accepted %s, read back another value", msg_id);
	amp_task_log_free(&log);
	git_tree_free(tip);
	git_commit_free(commit);
}

/* 1 when msg conforms to the schema except, perhaps, at /payload/branch:
 * what the Branch Validation rule may refuse with exit 3. */
static int conforms_but_branch(json_t *msg)
{
	amp_errlist errors = { 0 };
	size_t i;
	int ok = 1;

	amp_message_validate(fuzz_schemas(), msg, 0, &errors);
	for (i = 0; i < errors.count; i++)
		if (strcmp(errors.items[i].path, "/payload/branch"))
			ok = 0;
	amp_errlist_free(&errors);
	return ok;
}

static int send_one(const char *part, size_t len, void *ctx)
{
	amp_store *st = fuzz_repo();
	amp_send_opts opts = { "send", NULL, NULL, 0, 0, NULL, 0, NULL };
	amp_send_result res;
	amp_errlist errors = { 0 };
	git_oid msgs_before, errs_before, msgs_after, errs_after;
	json_t *msg = NULL;
	char *raw = NULL;
	size_t raw_len = 0;
	int status;

	(void)ctx;
	memset(&res, 0, sizeof(res));
	write_input(part, len);
	tip_of(amp_store_messages_ref(st), &msgs_before);
	tip_of(amp_store_errors_ref(st), &errs_before);
	opts.source = fuzz_scratch_file();
	status = amp_send_read_json(st, "send", fuzz_scratch_file(), "", &msg, &raw,
				    &raw_len, &errors);
	if (status == AMP_OK) {
		opts.raw = raw;
		opts.raw_len = raw_len;
		status = amp_send_message(st, fuzz_schemas(), msg, &opts, &res, &errors);
	}
	tip_of(amp_store_messages_ref(st), &msgs_after);
	tip_of(amp_store_errors_ref(st), &errs_after);
	switch (status) {
	case AMP_OK:
		check_readable(st, msg, res.msg_id);
		break;
	case AMP_ESCHEMA:
		if (!git_oid_equal(&msgs_before, &msgs_after))
			fuzz_fail("a non-conforming envelope wrote to the SSOT (%s)",
				  first_reason(&errors));
		/* fall through */
	case AMP_ERULE:
		if (status == AMP_ERULE && !conforms_but_branch(msg))
			fuzz_fail("a non-conforming envelope was refused by a rule, "
				  "not by the schema (%s)", first_reason(&errors));
		if (git_oid_equal(&errs_before, &errs_after))
			fuzz_fail("a refused envelope is not on the error log (%s)",
				  first_reason(&errors));
		break;
	default:
		fuzz_fail("amp send --envelope: status %d: %s", status, first_reason(&errors));
	}
	amp_errlist_free(&errors);
	json_decref(msg);
	free(raw);
	return 0;
}

/* What `amp status --json` does for every task. */
static void show_all(amp_store *st)
{
	git_commit *commit = NULL;
	git_tree *tip = NULL;
	char **ids = NULL;
	size_t count = 0, i;
	amp_task_log log;
	amp_task_state state;
	amp_error err;
	json_t *out;
	char *text;

	if (amp_store_tip(st, amp_store_messages_ref(st), &commit, &tip, &err) < 0 ||
	    amp_store_list_tasks(st, tip, &ids, &count, &err) < 0)
		fuzz_fail("cannot list the tasks: %s", err.message);
	for (i = 0; i < count; i++) {
		if (amp_store_read_task(st, tip, ids[i], &log, &err) < 0)
			fuzz_fail("cannot read task %s: %s", ids[i], err.message);
		amp_task_state_compute(&log, &state);
		amp_task_state_free(&state);
		if (!(out = amp_task_status_json(&log, 1772116800000LL)) ||
		    !(text = json_dumps(out, JSON_PRESERVE_ORDER)))
			fuzz_fail("no status for task %s", ids[i]);
		free(text);
		json_decref(out);
		amp_task_log_free(&log);
	}
	amp_strv_free(ids, count);
	git_tree_free(tip);
	git_commit_free(commit);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_repo_reset();
	fuzz_split(data, size, MAX_ENVELOPES, send_one, NULL);
	show_all(fuzz_repo());
	return 0;
}
