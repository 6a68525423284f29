/*
 * cli.h - what every amp command does the same way: open the SSOT, load
 * the schemas, print errors as "amp <cmd>: error: <path>: <reason>", pick
 * the caller's role.  These print (to stderr) and return exit codes; they
 * are for cmd/ only.
 */
#ifndef AMP_CLI_H
#define AMP_CLI_H

#include <jansson.h>

#include "error.h"
#include "schema.h"
#include "store.h"

/* Exit codes, documented in README.md. */
#define AMP_EXIT_OK      0
#define AMP_EXIT_INVALID 1
#define AMP_EXIT_USAGE   2
#define AMP_EXIT_REFUSED 3
#define AMP_EXIT_IO      4

/* Opens the store (repo = --repo or NULL); on failure prints the error and
 * returns its exit code. */
int amp_cli_open_store(const char *cmd, const char *repo, amp_store **st);

/* Loads the AMP schemas; on failure prints and returns the exit code. */
int amp_cli_load_schemas(const char *cmd, amp_schema_set **set);

/* Prints every error of the list; returns the exit code of the worst. */
int amp_cli_print_errors(const char *cmd, const amp_errlist *errors, int status);

/* Prints one error and returns its exit code. */
int amp_cli_fail(const char *cmd, const amp_error *err);

/* Prints "amp <cmd>: error: <reason>" and the usage to stderr; returns 2. */
int amp_cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The caller's role: `given` when not NULL, else $AMP_ROLE, else git config
 * amp.role (st may be NULL), else NULL. Returns a pointer into static or
 * given storage. */
const char *amp_cli_role(amp_store *st, const char *given);

/* Prints `value` on stdout as the --json result: one JSON document and a
 * newline, indented when `pretty`, members in their order.  Borrowed. */
void amp_cli_print_json(const json_t *value, int pretty);

/* Parses a non-negative integer option; -1 when malformed. */
long amp_cli_parse_seconds(const char *s);

#endif
