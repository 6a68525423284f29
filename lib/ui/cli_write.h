/*
 * cli_write.h - the skeleton every amp command that writes one record
 * shares (amp claim, release, depend, plan, register, ack, and amp_cli_
 * control's resume, approve, abort, heartbeat): its common options, the
 * check of its arguments, the schemas, the SSOT and the role, then, after
 * the command's own write, its errors, its --json or text result and the
 * sync after the write.  The command says only what differs.  For cmd/.
 */
#ifndef AMP_CLI_WRITE_H
#define AMP_CLI_WRITE_H

#include <getopt.h>
#include <jansson.h>
#include <stdint.h>

#include "base/error.h"
#include "schema/schema.h"
#include "store/store.h"
#include "write/write.h"

/* The operand of most writing commands: one task id. */
#define AMP_CLI_TASK_OPERAND \
	.usage_one = "one task id expected", .operand_name = "<task_id>", .operand_def = "task_id"

/* What amp_cli_write_open returns when the command goes on to write. */
#define AMP_CLI_GO (-1)

typedef struct amp_cli_writer amp_cli_writer;
struct amp_cli_writer {
	/* Said by the command. */
	const char *cmd;
	const char *usage;
	/* Its own options, a zero row last (may be NULL); --from, --json,
	 * --repo, --agent, --sync, --no-sync and --help are added.  Their
	 * letters must not be f j r G S U h. */
	const struct option *opts;
	/* Takes one of its own options (letter c, value optarg): 0, or the
	 * exit code after printing a usage error. */
	int (*option)(amp_cli_writer *w, int c);
	/* Or, when option is NULL: where each of its own options' argument
	 * goes, values[i] for opts[i]. */
	const char ***values;
	/* The operand: the usage error when there is not exactly one ("one
	 * task id expected"), its name in errors ("<task_id>") and its
	 * definition in common.schema.json ("task_id").  usage_one NULL: no
	 * operand at all ("no operands expected"). */
	const char *usage_one;
	const char *operand_name;
	const char *operand_def;
	int role_required;       /* --from (or AMP_ROLE, amp.role) must be set */
	/* The one role the record comes from (amp ask, amp progress: the
	 * executor), or NULL for any: another is refused (AMP_ERULE, /from,
	 * "<role_why>, not <role given>"). */
	const char *role;
	const char *role_why;
	/* Its own checks, after the options and before the schemas load
	 * (usage errors, number options): 0 or the exit code.  May be NULL. */
	int (*check)(amp_cli_writer *w);
	/* Its own checks of ids once the schemas are loaded, before the SSOT
	 * opens: 0 or the exit code.  May be NULL. */
	int (*check_ids)(amp_cli_writer *w);
	/* --idempotency-key's value, when the command takes one: checked
	 * (amp_cli_idempotency_key, $AMP_IDEMPOTENCY_KEY) with the arguments. */
	const char **idempotency_key;
	void *ctx;               /* the command's own option values */

	/* Filled by amp_cli_write_open. */
	const char *arg;         /* the operand, or NULL */
	const char *from;        /* the role (NULL when none and not required) */
	const char *repo;
	int json_out;
	int sync;                /* AMP_CLI_SYNC_CASES: 1, 0, -1 */
	amp_schema_set *set;
	amp_store *st;
	int64_t now_ms;
	amp_errlist errors;      /* for the command's write */
};

/*
 * Parses argv (getopt_long, the command's options and the common ones),
 * checks the arguments (amp_cli_check_args, the operand), runs w->check,
 * loads the schemas, checks the operand's id, runs w->check_ids, opens the
 * SSOT (amp_cli_open_ssot), picks the role (amp_cli_role), reads the
 * clock and refuses a role other than w->role.  Returns AMP_CLI_GO, or the exit code to leave with (0 after
 * --help) once amp_cli_write_close has freed what was opened.
 */
int amp_cli_write_open(amp_cli_writer *w, int argc, char **argv);

/*
 * Issue 33, RepoMesh ACP "recovered" (cli_recover.c): after a heartbeat of
 * w's instance found that amp watch released its lease `lost` of task
 * w->arg, releases (as the holder) each lease the instance still holds in
 * force on a task not finished and did not renew after that release.  A
 * new JSON array of {"task_id", "claim"} released; failures go to
 * w->errors.
 */
json_t *amp_cli_recover(amp_cli_writer *w, const char *lost);

/* The result of a write that succeeded: `out` (a new reference, taken
 * over) printed as the --json result under --json, else the line of
 * `fmt` (printf, a newline added). */
void amp_cli_write_print(amp_cli_writer *w, json_t *out, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * After the command's write returned `status` (and printed its result):
 * when it failed, prints the errors of w->errors and the exit code is
 * theirs; else the sync after the write (amp_cli_sync_after_write) gives
 * it.  Then amp_cli_write_close.  Returns the exit code.
 */
int amp_cli_write_done(amp_cli_writer *w, int status);

/*
 * A message or ACK refused with `status` (amp_send_message, amp_send_ack):
 * prints the errors and the escalation recorded with the refusal, and
 * syncs when there is one (the escalation goes too), then
 * amp_cli_write_close.  Returns the exit code.
 */
int amp_cli_write_refused(amp_cli_writer *w, int status, const amp_send_result *res);

/* The --json result of a message or ACK written: {key: res->msg_id,
 * "duplicate", "escalation" (its id or null)}.  New reference. */
json_t *amp_cli_sent_json(const char *key, const amp_send_result *res);

/* Frees what amp_cli_write_open opened; returns code. */
int amp_cli_write_close(amp_cli_writer *w, int code);

/*
 * The whole of `amp resume|approve|abort|heartbeat TASK [--reason TEXT |
 * --note TEXT] [--from ROLE] [--json] [--repo DIR]`: writes the control
 * record `type` (control.h) and prints what it did.  Returns the exit code.
 */
int amp_cli_control(const char *type, const char *usage, int argc, char **argv);

#endif
