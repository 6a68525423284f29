/* amp log: the audit trail of the SSOT, record by record, newest first. */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "read.h"
#include "util.h"

static const char usage[] =
	"usage: amp log [--task <task_id>] [--type <type>] [--from <role>] [--to <role>]\n"
	"               [--since <time>] [--until <time>] [--grep <text>] [-n <1..1000000>]\n"
	"               [--json] [--repo <dir>]\n";

struct out {
	int json;
	int color;
};

/* A member of the record for the terminal: escaped, "-" when absent. */
static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? amp_term(s) : "-";
}

/* One line per record: commit, time, task, kind/type, from -> to, id, and
 * an escalation's severity and type. */
static int print_record(const amp_log_record *r, void *ctx)
{
	const struct out *o = ctx;
	char hex[8], what[64];

	if (o->json) {
		json_t *j = amp_log_record_json(r);

		amp_cli_print_json(j, 0);
		json_decref(j);
		return 0;
	}
	git_oid_tostr(hex, sizeof(hex), &r->commit);
	/* "msg/task_dispatch", "ack", "ctl/heartbeat"; "?" when unreadable. */
	snprintf(what, sizeof(what), "%s%s%s", amp_entry_kind_name(r->kind),
		 r->kind == AMP_ENTRY_ACK ? "" : "/", r->kind == AMP_ENTRY_ACK ? "" :
		 r->doc ? str(r->doc, "type") : "?");
	printf("%s%s%s %-25s  %-12s  %-18s  %s", o->color ? "\033[33m" : "", hex,
	       o->color ? "\033[0m" : "", str(r->doc, "timestamp"),
	       *r->task_id ? amp_term(r->task_id) : "-",
	       amp_term(what), str(r->doc, "from"));
	/* A control record has no addressee. */
	if (r->kind != AMP_ENTRY_CTL)
		printf(" -> %s", str(r->doc, "to"));
	printf("  %s", amp_term(r->id));
	if (r->agent)
		printf("  agent %s", amp_term(r->agent));
	if (r->reason)
		printf("  %sunreadable%s: %s: %s", o->color ? "\033[31m" : "", o->color ? "\033[0m" : "",
		       amp_term(r->path), amp_term(r->reason));
	else if (r->kind == AMP_ENTRY_MSG && json_is_string(json_object_get(r->doc, "type")) &&
		 !strcmp(json_string_value(json_object_get(r->doc, "type")), "escalation"))
		printf("  %s %s", str(json_object_get(r->doc, "payload"), "severity"),
		       str(json_object_get(r->doc, "payload"), "escalation_type"));
	putchar('\n');
	return 0;
}

/* --since / --until: an ISO 8601 time with offset, like AMP_NOW. */
static int parse_time(const char *what, const char *s, int64_t *ms)
{
	if (amp_time_parse(s, ms) == 0)
		return 0;
	return amp_cli_usage_error("log", usage, "%s: '%s' is not an ISO 8601 time with offset (2026-02-26T14:32:07+00:00)",
				   what, s);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "task", required_argument, NULL, 'T' },
		{ "type", required_argument, NULL, 't' },
		{ "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 'o' },
		{ "since", required_argument, NULL, 's' },
		{ "until", required_argument, NULL, 'u' },
		{ "grep", required_argument, NULL, 'g' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	amp_log_filter f = { .since_ms = INT64_MIN, .until_ms = INT64_MAX };
	const char *repo = NULL, *since = NULL, *until = NULL, *limit = NULL;
	struct out o = { 0, 0 };
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	amp_errlist problems = { 0 };
	amp_error err;
	long long n = 0;
	size_t i;
	int c, code = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "hn:", opts, NULL)) != -1) {
		switch (c) {
		case 'T': f.task = optarg; break;
		case 't': f.type = optarg; break;
		case 'f': f.from = optarg; break;
		case 'o': f.to = optarg; break;
		case 's': since = optarg; break;
		case 'u': until = optarg; break;
		case 'g': f.grep = optarg; break;
		case 'n': limit = optarg; break;
		case 'j': o.json = 1; break;
		case 'r': repo = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default:
			return amp_cli_usage_error("log", usage, "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("log", argc, argv, "hn:", opts)))
		return code;
	if (optind < argc)
		return amp_cli_usage_error("log", usage, "unexpected argument '%s'", argv[optind]);
	if (limit && (code = amp_cli_int("log", "-n", limit, 1, 1000000, &n)))
		return code;
	f.limit = n;
	if ((since && (code = parse_time("--since", since, &f.since_ms))) ||
	    (until && (code = parse_time("--until", until, &f.until_ms))))
		return code;
	if (f.type && !amp_log_type_valid(f.type))
		return amp_cli_usage_error("log", usage, "--type: '%s' is not a message type, ack, or a control record type", f.type);
	if (f.task && (code = amp_cli_check_id("log", NULL, "--task", f.task, "task_id")))
		return code;
	if ((f.from || f.to) && (code = amp_cli_load_schemas("log", &set)))
		return code;
	if ((f.from && (code = amp_cli_check_id("log", set, "--from", f.from, "sender_role"))) ||
	    (f.to && (code = amp_cli_check_id("log", set, "--to", f.to, "addressee_role"))) ||
	    (code = amp_cli_open_store("log", repo, &st)))
		goto cleanup;
	o.color = !o.json && amp_use_color(stdout);
	if (amp_log_walk(st, &f, print_record, &o, &problems, &err) < 0) {
		code = amp_cli_fail("log", &err);
		goto cleanup;
	}
	/* A part of the history that cannot be read hides its records only:
	 * everything else is listed, and the exit code says it. */
	for (i = 0; i < problems.count; i++)
		code = amp_cli_fail("log", &problems.items[i]);
cleanup:
	amp_errlist_free(&problems);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
