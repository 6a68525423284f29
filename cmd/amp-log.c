/* amp log: the audit trail of the SSOT, record by record, newest first. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "base/human.h"
#include "read/read.h"
#include "base/spool.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp log [--task <task_id>] [--type <type>] [--from <role>] [--to <role>]\n"
	"               [--since <time>] [--until <time>] [--grep <text>] [-n <1..1000000>]\n"
	"               [--json] " AMP_HUMAN_USAGE " [--repo <dir>]\n";

/* One human line, kept to be shown in time order. */
struct line {
	int64_t ms;     /* the record's timestamp; INT64_MIN when it has none */
	size_t seq;     /* its place in the walk: commit order, newest first */
	long start, end; /* its bytes in the spool */
};

/* The human lines are held in memory up to this size, then in a temporary
 * file: at 100k messages they are 33 MB, which held in memory put `amp
 * log` at 104 MB resident. */
#define SPOOL_BOUND ((size_t)4 << 20)

struct out {
	int json;
	amp_human h;
	amp_spool spool; /* the human lines, one after another */
	struct line *lines;
	size_t n, alloc;
	int oom;         /* the walk stopped: out of memory */
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
	struct out *o = ctx;
	const char *ts = json_string_value(json_object_get(r->doc, "timestamp"));
	char hex[8], what[64], t[AMP_HUMAN_TIME_BUFSZ];
	struct line *l;

	if (o->json) {
		json_t *j = amp_log_record_json(r);

		amp_cli_print_json(j, 0);
		json_decref(j);
		return 0;
	}
	if (o->n == o->alloc) {
		size_t alloc = o->alloc ? o->alloc * 2 : 256;

		if (!(l = realloc(o->lines, alloc * sizeof(*l))))
			return o->oom = 1;
		o->lines = l;
		o->alloc = alloc;
	}
	l = &o->lines[o->n];
	l->seq = o->n++;
	l->start = amp_spool_tell(&o->spool);
	if (!ts || amp_time_parse(ts, &l->ms) < 0)
		l->ms = INT64_MIN;
	git_oid_tostr(hex, sizeof(hex), &r->commit);
	/* "msg/task_dispatch", "ack", "ctl/heartbeat"; "?" when unreadable. */
	snprintf(what, sizeof(what), "%s%s%s", amp_entry_kind_name(r->kind),
		 r->kind == AMP_ENTRY_ACK ? "" : "/", r->kind == AMP_ENTRY_ACK ? "" :
		 r->doc ? str(r->doc, "type") : "?");
	if (o->h.width) {
		/* A terminal: who wrote which record when, in 80 columns;
		 * a message's id holds its task and type. */
		fprintf(o->spool.f, "%s%s%s %-*s  %-11s  %-3s  %s", amp_human_sgr(&o->h, AMP_SGR_YELLOW),
			hex, amp_human_sgr(&o->h, AMP_SGR_RESET), amp_human_when_width(&o->h),
			amp_human_when(&o->h, ts, t), str(r->doc, "from"), amp_entry_kind_name(r->kind),
			amp_term(r->id));
	} else {
		fprintf(o->spool.f, "%s%s%s %-*s  %-12s  %-18s  %-11s", amp_human_sgr(&o->h, AMP_SGR_YELLOW),
			hex, amp_human_sgr(&o->h, AMP_SGR_RESET), AMP_HUMAN_TIME_WIDTH,
			amp_human_time(&o->h, ts, t), *r->task_id ? amp_term(r->task_id) : "-",
			amp_term(what), str(r->doc, "from"));
		/* A control record has no addressee: its column stays blank. */
		fprintf(o->spool.f, " %s%-11s", r->kind != AMP_ENTRY_CTL ? "-> " : "   ",
			r->kind != AMP_ENTRY_CTL ? str(r->doc, "to") : "");
		fprintf(o->spool.f, "  %s", amp_term(r->id));
	}
	if (r->agent)
		fprintf(o->spool.f, "  agent %s", amp_term(r->agent));
	if (r->reason)
		fprintf(o->spool.f, "  %sunreadable%s: %s: %s", amp_human_sgr(&o->h, AMP_SGR_RED),
			amp_human_sgr(&o->h, AMP_SGR_RESET), amp_term(r->path), amp_term(r->reason));
	else if (r->kind == AMP_ENTRY_MSG && json_is_string(json_object_get(r->doc, "type")) &&
		 !strcmp(json_string_value(json_object_get(r->doc, "type")), "escalation"))
		fprintf(o->spool.f, "  %s %s", str(json_object_get(r->doc, "payload"), "severity"),
			str(json_object_get(r->doc, "payload"), "escalation_type"));
	fputc('\n', o->spool.f);
	amp_spool_check(&o->spool);
	return 0;
}

/* Newest first by the records' timestamps, ties (and records without one,
 * last) in commit order: a record fetched late is committed late but
 * listed where it happened. */
static int newest_first(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	if (x->ms != y->ms)
		return x->ms > y->ms ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* 0, or -1 (errno says why) when the spool cannot be read back. */
static int print_lines(struct out *o, size_t len)
{
	char *line = NULL, *grown;
	size_t i, n, size = 0;
	int status = 0;

	/* Each line ends where the next one in walk order starts. */
	for (i = 0; i < o->n; i++)
		o->lines[i].end = i + 1 < o->n ? o->lines[i + 1].start : (long)len;
	if (o->n) /* qsort takes no NULL, even for nothing to sort */
		qsort(o->lines, o->n, sizeof(*o->lines), newest_first);
	for (i = 0; i < o->n && !status; i++) {
		n = (size_t)(o->lines[i].end - o->lines[i].start);
		if (n > size) {
			if (!(grown = realloc(line, n))) {
				errno = ENOMEM;
				status = -1;
				break;
			}
			line = grown;
			size = n;
		}
		if ((status = amp_spool_read(&o->spool, o->lines[i].start, n, line)) == 0)
			amp_human_fit(line, n, o->h.width, stdout);
	}
	free(line);
	return status;
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
		AMP_HUMAN_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	amp_log_filter f = { .since_ms = INT64_MIN, .until_ms = INT64_MAX, .release_packs = 1 };
	const char *repo = NULL, *since = NULL, *until = NULL, *limit = NULL;
	struct out o = { 0 };
	size_t len = 0;
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
		case 'h': return amp_cli_help("log", usage, opts);
		default:
			if ((code = amp_human_option(&o.h, c, optarg, &err)) > 0)
				break;
			if (code < 0)
				return amp_cli_usage_error("log", usage, "%s", err.message);
			return amp_cli_bad_option("log", usage, opts, argv[optind - 1]);
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
	amp_human_start(&o.h, amp_store_repo(st), o.json, 1);
	if (!o.json && amp_spool_open(&o.spool, SPOOL_BOUND) < 0) {
		amp_error_set(&err, AMP_EIO, "", "out of memory");
		code = amp_cli_fail("log", &err);
		goto cleanup;
	}
	if (amp_log_walk(st, &f, print_record, &o, &problems, &err) < 0) {
		code = amp_cli_fail("log", &err);
		goto cleanup;
	}
	if (!o.json) {
		if (amp_spool_finish(&o.spool, &len) < 0 || o.oom) {
			if (o.oom || !o.spool.spilled)
				amp_error_set(&err, AMP_EIO, "", "out of memory");
			else
				amp_error_set(&err, AMP_EIO, "", "cannot write to a temporary file: %s",
					      strerror(errno));
			code = amp_cli_fail("log", &err);
			goto cleanup;
		}
		/* The walk is over: the pack index it read all over need
		 * not stay resident while the lines are sorted. */
		amp_store_trim_indexes();
		if (print_lines(&o, len) < 0) {
			amp_error_set(&err, AMP_EIO, "", "cannot read back a temporary file: %s",
				      strerror(errno));
			code = amp_cli_fail("log", &err);
			goto cleanup;
		}
	}
	/* A part of the history that cannot be read hides its records only:
	 * everything else is listed, and the exit code says it. */
	for (i = 0; i < problems.count; i++)
		code = amp_cli_fail("log", &problems.items[i]);
cleanup:
	amp_spool_free(&o.spool);
	free(o.lines);
	amp_errlist_free(&problems);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
