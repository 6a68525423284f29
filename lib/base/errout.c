#include "errout.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "utf8.h"

#define KEPT 64

/* Command-line glue: one command per process. */
static struct {
	int on, printed, stream;
	char command[64];
	size_t count;
	int status[KEPT];
	char path[KEPT][AMP_PATH_MAX];
	char message[KEPT][AMP_MSG_MAX];
} out;

void amp_errout_begin(int argc, char **argv)
{
	const char *name = argv[0] ? strrchr(argv[0], '-') : NULL;
	int i;

	name = name ? name + 1 : "";
	snprintf(out.command, sizeof(out.command), "%s", name);
	out.stream = !strcmp(name, "log") || !strcmp(name, "watch");
	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			out.on = 1;
}

void amp_errout_result_printed(void)
{
	out.printed = 1;
}

const char *amp_errout_command(void)
{
	return out.command;
}

json_t *amp_errout_format(const char *name)
{
	return json_pack("{s:s, s:i}", "name", name, "version", AMP_JSON_FORMAT);
}

int amp_errout_on(void)
{
	return out.on;
}

/* `s` as a JSON string: its bytes when UTF-8, else each byte of a bad
 * sequence as "?" (a reason may quote a file name, which is any bytes). */
static json_t *text(const char *s)
{
	char buf[AMP_MSG_MAX];
	size_t i = 0, n;
	unsigned cp;

	if (amp_utf8_valid(s))
		return json_string(s);
	while (*s && i + 4 < sizeof(buf)) {
		n = amp_utf8_seq(s, &cp);
		if (!n) {
			buf[i++] = '?';
			s++;
			continue;
		}
		memcpy(buf + i, s, n);
		i += n;
		s += n;
	}
	buf[i] = '\0';
	return json_string(buf);
}

void amp_errout_record(int status, const char *path, const char *message)
{
	if (!out.on || out.count >= KEPT)
		return;
	out.status[out.count] = status;
	snprintf(out.path[out.count], AMP_PATH_MAX, "%s", path ? path : "");
	snprintf(out.message[out.count], AMP_MSG_MAX, "%s", message);
	out.count++;
}

/* The name of an exit code, for programs that branch on it. */
static const char *code_name(int code)
{
	static const char *const names[] = {
		"ok", "invalid", "usage", "refused", "io", "timeout", "claimed"
	};

	return code >= 0 && code < 7 ? names[code] : "failed";
}

static json_t *one(size_t i, int code)
{
	return json_pack("{s:s, s:i, s:o, s:o}", "code", code_name(code), "exit", code,
			 "path", text(out.path[i]), "message", text(out.message[i]));
}

int amp_errout_end(int code)
{
	json_t *doc, *list;
	size_t i, first = 0;

	if (!out.on || !code || code == 5 || !out.count || (out.printed && !out.stream))
		return code;
	/* The error the exit code reports, else the first. */
	for (i = 0; i < out.count; i++)
		if (amp_exit_code(out.status[i]) == code) {
			first = i;
			break;
		}
	list = json_array();
	for (i = 0; i < out.count; i++)
		json_array_append_new(list, one(i, amp_exit_code(out.status[i])));
	doc = json_pack("{s:o, s:o, s:o}", "format", amp_errout_format("error"), "error",
			one(first, code), "errors", list);
	fflush(stdout);
	if (doc)
		json_dumpf(doc, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
	putchar('\n');
	fflush(stdout);
	json_decref(doc);
	return code;
}
