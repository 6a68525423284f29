/*
 * cli.h - what every amp command does the same way: open the SSOT, load
 * the schemas, print errors as "amp <cmd>: error: <path>: <reason>", pick
 * the caller's role.  These print (to stderr) and return exit codes; they
 * are for cmd/ only.
 */
#ifndef AMP_CLI_H
#define AMP_CLI_H

#include <getopt.h>
#include <jansson.h>

#include "base/error.h"
#include "schema/schema.h"
#include "write/write.h"
#include "store/store.h"

/* Exit codes, documented in README.md and amp(1). */
#define AMP_EXIT_OK      0
#define AMP_EXIT_INVALID 1
#define AMP_EXIT_USAGE   2
#define AMP_EXIT_REFUSED 3
#define AMP_EXIT_IO      4
#define AMP_EXIT_TIMEOUT 5 /* amp wait: the timeout passed first */
#define AMP_EXIT_CLAIMED 6 /* amp claim: another instance holds the task */

/* Checks AMP_NOW and opens the store (repo = --repo or NULL); on failure
 * prints the error and returns its exit code (2 for a bad AMP_NOW or a bad
 * git config amp.* setting). */
int amp_cli_open_store(const char *cmd, const char *repo, amp_store **st);

/* amp_cli_open_store for the commands that write messages: the SSOT must
 * have been made by `amp init` (the messages ref present), so that a
 * missing init is one error and not a rejection that cannot be logged
 * either.  The instance writing is --agent (amp_cli_agent_given), else
 * $AMP_AGENT, else git config amp.agent; a bad name is exit 2, naming
 * where it came from. */
int amp_cli_open_ssot(const char *cmd, const char *repo, amp_store **st);

/* --agent NAME of the writing commands: the named instance (store.h
 * amp_store_set_agent) amp_cli_open_ssot gives the store, before $AMP_AGENT
 * and git config amp.agent. */
#define AMP_CLI_AGENT_OPTION { "agent", required_argument, NULL, 'G' }
#define AMP_CLI_AGENT_CASE case 'G': amp_cli_agent_given(optarg); break
void amp_cli_agent_given(const char *name);

/* Loads the AMP schemas; on failure prints and returns the exit code. */
int amp_cli_load_schemas(const char *cmd, amp_schema_set **set);

/* Prints every error of the list; returns the exit code of the worst. */
int amp_cli_print_errors(const char *cmd, const amp_errlist *errors, int status);

/* Prints each entry below tasks/ the command's listings skipped, not a
 * task in its place (amp_store_skipped), and returns AMP_EXIT_IO when
 * there was one and `code` is 0, else `code`: the damage is local to those
 * entries, the rest was listed.  The list is emptied: a loop (amp watch)
 * reports an entry again only when a later pass skips it again. */
int amp_cli_report_skipped(const char *cmd, amp_store *st, int code);

/* Prints one error and returns its exit code. */
int amp_cli_fail(const char *cmd, const amp_error *err);

/* Prints "amp <cmd>: error: <reason>" (escaped by amp_term) and the usage
 * to stderr; returns 2. */
int amp_cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* -h of a command: prints `usage`, then each option of `opts` with one
 * line (lib/ui/cli_help.c holds the lines); returns 0. */
int amp_cli_help(const char *cmd, const char *usage, const struct option *opts);

/* An unknown option `arg` (argv[optind - 1] after getopt_long's '?'):
 * amp_cli_usage_error, then git's hint of the most similar options of
 * `opts` when some are near.  Returns 2. */
int amp_cli_bad_option(const char *cmd, const char *usage, const struct option *opts,
		       const char *arg);

/*
 * The caller's role: `given` (--from) when not NULL, else $AMP_ROLE, else
 * git config amp.role (st may be NULL).  The role is checked against the
 * schemas' definition `def` ("sender_role") and an error names where it
 * came from ("AMP_ROLE: 'x' is not a role (...)").  *role is NULL when none
 * is set (an error when `required`).  Returns 0 or the exit code after
 * printing the error; *role points into static or given storage.
 */
int amp_cli_role(const char *cmd, amp_store *st, amp_schema_set *set,
		 const char *given, int required, const char **role);

/*
 * Checks `value` against the definition `def` of common.schema.json
 * ("task_id", "msg_id", "sender_role", "addressee_role"), so that the
 * command line accepts what the schemas accept and nothing else: the roles
 * with the schema validator, the ids with their C twins in lib/record/bounds.h
 * (`set` may then be NULL).  On a mismatch prints one error naming `what` (the option,
 * or "<task_id>" for an operand) and returns 2; returns 4 when the schema
 * cannot be read, else 0.
 */
int amp_cli_check_id(const char *cmd, amp_schema_set *set, const char *what,
		     const char *value, const char *def);

/*
 * After getopt_long(argc, argv, optstring, opts): checks that every option
 * value and operand is valid UTF-8 (messages are JSON, which is UTF-8),
 * except the values of options naming files (--repo, --payload,
 * --envelope), which are paths.  Prints an error naming the option ("amp
 * send: error: --description: not valid UTF-8: 'bad\xff'") and returns 2, or
 * returns 0.
 */
int amp_cli_check_args(const char *cmd, int argc, char **argv,
		       const char *optstring, const struct option *opts);

/* A number option, parsed by amp_parse_int/amp_parse_real (see util.h);
 * on error prints it and returns 2, else 0. */
int amp_cli_int(const char *cmd, const char *what, const char *s,
		long long min, long long max, long long *out);
int amp_cli_real(const char *cmd, const char *what, const char *s,
		 double min, double max, double *out);

/* The --sync and --no-sync options of the writing commands, and what they
 * set: 1, 0, or -1 (neither given: git config amp.autoSync decides). */
#define AMP_CLI_SYNC_OPTIONS \
	{ "sync", no_argument, NULL, 'S' }, { "no-sync", no_argument, NULL, 'U' }
#define AMP_CLI_SYNC_CASES(var) case 'S': (var) = 1; break; case 'U': (var) = 0; break

/*
 * After a write: with `flag` 1 (--sync), or -1 and git config amp.autoSync
 * true, runs amp sync with the default remote (amp_sync_remote).  Returns
 * 0, or the exit code after printing "amp CMD: error: sync: <reason> (what
 * was written stays in the local SSOT: run amp sync)": the write itself
 * stands.  A bad amp.autoSync is exit 2.
 */
int amp_cli_sync_after_write(const char *cmd, amp_store *st, amp_schema_set *set, int flag);

/* For amp inbox and amp wait, after getopt_long: checks the arguments
 * (one ROLE operand, an addressee role; --task a task id) and opens the
 * store into *st.  Returns 0 or the exit code after printing the error. */
struct amp_inbox;
int amp_cli_inbox_open(const char *cmd, const char *usage, int argc, char **argv,
		       const struct option *opts, const char *task, const char *repo,
		       const char **role, amp_store **st);

/* Prints the inbox `in` of `role` as amp inbox does (--json or text, with
 * AMP_NOW for the deadlines), after amp_human_start(h, ..., pager) settles
 * colour and the pager.  Returns 0 or the exit code after printing the
 * error. */
struct amp_human;
int amp_cli_inbox_print(const char *cmd, amp_store *st, const struct amp_inbox *in,
			const char *role, int json_out, struct amp_human *h, int pager);

/* The longest idempotency key, in bytes. */
#define AMP_IDEMPOTENCY_KEY_MAX 256

/* --idempotency-key: *key (the option), else $AMP_IDEMPOTENCY_KEY.  A key
 * is 1..256 bytes of UTF-8; else prints an error and returns 2. */
int amp_cli_idempotency_key(const char *cmd, const char **key);

/* AMP_TRACE (amp-send(1)): when it is set, says on stderr what the
 * command's store did -- compare-and-swap retries, records parsed from git
 * and taken from a record cache, entries task-log lookups compared without
 * an index -- for benchmarks and tests.  Nothing when st is NULL. */
void amp_cli_trace(const char *cmd, amp_store *st);

/* Says on stderr which escalation a successful write recorded with it (a
 * lock, a late ACK's timeout), if any. */
void amp_cli_report_escalation(const char *cmd, const amp_send_result *res);

/* After a dispatch of `msg` was written: warns on stderr ("amp CMD:
 * warning: ...") for each soft dependency (amp depend --soft) of its task
 * that is not approved yet. */
void amp_cli_warn_soft_waits(const char *cmd, amp_store *st, const json_t *msg);

/* Prints the object `value` on stdout as the --json result of the
 * command (issue 34): one JSON object and a newline, indented when
 * `pretty`, "format": {"name": <the command>, "version"} first, then the
 * members of `value` in their order (schemas/output/<command>.schema.json);
 * a `value` that is no object is the member "items".  Borrowed. */
void amp_cli_print_json(const json_t *value, int pretty);

/* Prints a document that is no --json result (a schema, a payload
 * template) as it is: indented when `pretty`, and a newline. */
void amp_cli_print_document(const json_t *value, int pretty);

/* The same with the layout's name given: `value`'s members after "format",
 * or when `key` is not NULL, `value` (an array) as the member `key`, so
 * that every --json result is one object that says its format. */
void amp_cli_print_result(const char *name, const char *key, const json_t *value, int pretty);

#endif
