#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int amp_cli_fail(const char *cmd, const amp_error *err)
{
	amp_print_error(cmd, err);
	return amp_exit_code(err->status);
}

int amp_cli_open_store(const char *cmd, const char *repo, amp_store **st)
{
	amp_error err;

	if (amp_store_open(st, repo, &err) < 0)
		return amp_cli_fail(cmd, &err);
	return 0;
}

int amp_cli_load_schemas(const char *cmd, amp_schema_set **set)
{
	amp_error err;

	if (amp_schema_set_load_amp(set, NULL, &err) < 0)
		return amp_cli_fail(cmd, &err);
	return 0;
}

int amp_cli_print_errors(const char *cmd, const amp_errlist *errors, int status)
{
	size_t i;
	int worst = amp_exit_code(status);

	for (i = 0; i < errors->count; i++) {
		amp_print_error(cmd, &errors->items[i]);
		/* An I/O failure outranks the verdict on the message. */
		if (errors->items[i].status == AMP_EIO)
			worst = AMP_EXIT_IO;
	}
	return worst;
}

int amp_cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "amp %s: error: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", usage);
	return AMP_EXIT_USAGE;
}

const char *amp_cli_role(amp_store *st, const char *given)
{
	static char buf[64];
	const char *env = getenv("AMP_ROLE");

	if (given)
		return given;
	if (env && *env)
		return env;
	if (st && amp_store_config(st, "amp.role", buf, sizeof(buf)))
		return buf;
	return NULL;
}

long amp_cli_parse_seconds(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s && !*end && v >= 0 ? v : -1;
}

void amp_cli_print_json(const json_t *value, int pretty)
{
	json_dumpf(value, stdout, (pretty ? JSON_INDENT(2) : JSON_COMPACT) |
		   JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	putchar('\n');
}
