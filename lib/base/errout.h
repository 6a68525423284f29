#ifndef AMP_ERROUT_H
#define AMP_ERROUT_H

#include <jansson.h>

/*
 * errout.h - errors a program can read (issue 34): with --json, a failing
 * command prints one JSON object on stdout,
 *   {"format": {"name": "error", "version": 1},
 *    "error": {"code", "exit", "path", "message"}, "errors": [...]}
 * (schemas/output/error.schema.json), besides the human line on stderr.
 * The driver turns it on for a built-in command given --json; every error
 * printed through amp_print_error (and amp_cli_usage_error) is recorded,
 * and amp_errout_end prints the object when the command fails.
 */

/* The version of the --json layouts: every --json object carries
 * "format": {"name": <layout>, "version": AMP_JSON_FORMAT}, the layout
 * described by schemas/output/<name>.schema.json.  A change that renames,
 * removes or retypes a member raises the version. */
#define AMP_JSON_FORMAT 1

/* {"name": name, "version": AMP_JSON_FORMAT}: a new reference. */
json_t *amp_errout_format(const char *name);

/* The command's name ("status" for amp-status), from amp_errout_begin's
 * argv[0]; "" before it. */
const char *amp_errout_command(void);

/* Turns the JSON error object on when argv (before a "--") holds --json;
 * argv[0] ends with the command's name. */
void amp_errout_begin(int argc, char **argv);

/* The command printed its --json result (ui/cli.h amp_cli_print_json):
 * a command printing one object (amp claim refused, exit 6; amp status
 * with entries it skipped, exit 4) has said what happened in it, and no
 * error object follows.  A stream (amp log, amp watch: JSON lines) ends
 * with the error object all the same. */
void amp_errout_result_printed(void);

/* True when the JSON error object is on. */
int amp_errout_on(void);

/* Records one error (status AMP_E*, JSON pointer or "", reason) for the
 * object; the first 64 are kept. */
void amp_errout_record(int status, const char *path, const char *message);

/* After the command returned `code`: when on, `code` is not 0 or 5 (amp
 * wait's timeout is an answer, not an error), an error was recorded and
 * no result object was printed, prints the object on stdout.  Returns
 * code. */
int amp_errout_end(int code);

#endif
