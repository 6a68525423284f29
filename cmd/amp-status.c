/* amp status: the state of one task, or one line per task. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "base/human.h"
#include "read/read.h"
#include "protocol/protocol.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp status [<task_id> | --all] [--json] " AMP_HUMAN_USAGE " [--repo <dir>]\n";

static amp_human h;

static const char *sgr(const char *code) { return amp_human_sgr(&h, code); }

/* Where the human lines go: fitted to the terminal (human.h). */
#define OUT amp_human_out(&h)

static const char *state_color(const char *state)
{
	if (!strcmp(state, "approved"))
		return sgr(AMP_SGR_GREEN);
	if (!strcmp(state, "rejected") || !strcmp(state, "locked") ||
	    !strcmp(state, "suspended") || !strcmp(state, "aborted"))
		return sgr(AMP_SGR_RED);
	return sgr(AMP_SGR_YELLOW);
}

/* One line of the listing, built by hand: printf's parsing of its format
 * was a sixth of a warm listing of 12,500 tasks.  The pieces are short
 * (an escaped task id is at most 4 x 255 bytes): a line that would not fit
 * is cut, never overrun. */
struct line {
	char buf[2048];
	size_t len;
};

static void put(struct line *l, const char *s, int width)
{
	size_t n = strlen(s);

	if (n > sizeof(l->buf) - 1 - l->len)
		n = sizeof(l->buf) - 1 - l->len;
	memcpy(l->buf + l->len, s, n);
	l->len += n;
	if (width > (int)n) {
		size_t pad = (size_t)width - n;

		if (pad > sizeof(l->buf) - 1 - l->len)
			pad = sizeof(l->buf) - 1 - l->len;
		memset(l->buf + l->len, ' ', pad);
		l->len += pad;
	}
}

/* A count, right-aligned in `width` columns. */
static void put_count(struct line *l, int v, int width)
{
	char digits[16];
	char *p = digits + sizeof(digits) - 1;
	unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;

	*p = '\0';
	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	for (width -= (int)(digits + sizeof(digits) - 1 - p); width > 0; width--)
		put(l, " ", 0);
	put(l, p, 0);
}

/* A member for the terminal: escaped by amp_term, "-" when absent. */
static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? amp_term(s) : "-";
}

static long long num(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

/* A record's time member, as every listing shows times (human.h). */
static const char *when(const json_t *o, const char *key, char buf[AMP_HUMAN_TIME_BUFSZ])
{
	return amp_human_when(&h, json_string_value(json_object_get(o, key)), buf);
}

static void print_ack(const json_t *m)
{
	const char *state = str(m, "ack_state");
	char d[AMP_DURATION_BUFSZ], late[AMP_DURATION_BUFSZ];

	amp_duration_format(num(m, "ack_seconds"), d);
	if (!strcmp(state, "acked") && json_is_integer(json_object_get(m, "ack_late_seconds")))
		fprintf(OUT, "%sacked %s late%s (after %s)", sgr(AMP_SGR_RED),
		             amp_duration_format(num(m, "ack_late_seconds"), late), sgr(AMP_SGR_RESET), d);
	else if (!strcmp(state, "acked"))
		fprintf(OUT, "acked after %s", d);
	else if (!strcmp(state, "awaiting_approval"))
		fprintf(OUT, "no ACK before the admin's approval");
	else if (!strcmp(state, "pending"))
		fprintf(OUT, "ACK due in %s", d);
	else if (!strcmp(state, "overdue"))
		fprintf(OUT, "%sACK overdue %s%s", sgr(AMP_SGR_RED), d, sgr(AMP_SGR_RESET));
	else
		fprintf(OUT, "no ACK required");
}

/* The widest value of `key` in `array`, escaped, for a column. */
static int widest(const json_t *array, const char *key)
{
	const json_t *m;
	size_t i, w = 0;

	json_array_foreach(array, i, m)
		if (strlen(str(m, key)) > w)
			w = strlen(str(m, key));
	return (int)w;
}

static void print_control(const json_t *m)
{
	const char *what = str(m, "type");
	char t[AMP_HUMAN_TIME_BUFSZ];

	if (!strcmp(what, "idempotency_key") || !strcmp(what, "superseded"))
		return; /* bookkeeping: of `amp send --idempotency-key`; of
			 * amp sync, shown below */
	fprintf(OUT, "control: %s  %s by %s", when(m, "timestamp", t), what, str(m, "from"));
	if (json_is_string(json_object_get(m, "agent")))
		fprintf(OUT, " (agent %s)", str(m, "agent"));
	if (json_is_string(json_object_get(m, "approves")))
		fprintf(OUT, " of %s", str(m, "approves"));
	if (json_is_string(json_object_get(m, "reason")))
		fprintf(OUT, ": %s", str(m, "reason"));
	else if (json_is_string(json_object_get(m, "note")))
		fprintf(OUT, ": %s", str(m, "note"));
	fputc('\n', OUT);
}

/* The task's messages, escalations and controls in the order of their
 * timestamps (ties in the order of their sequence numbers): a record
 * fetched late is committed late but shown where it happened. */
static void print_task(const json_t *t)
{
	const json_t *m, *list;
	const char *state = str(t, "state");
	char ts[AMP_HUMAN_TIME_BUFSZ];
	size_t i, k, *order;
	int idw;

	fprintf(OUT, "%s  %s%s%s  rejects %lld%s%s\n", str(t, "task_id"),
	             state_color(state), state, sgr(AMP_SGR_RESET), num(t, "reject_count"),
	             json_is_string(json_object_get(t, "suspended_by")) ? "  suspended by " : "",
	             json_is_string(json_object_get(t, "suspended_by")) ? str(t, "suspended_by") : "");
	if (json_is_string(json_object_get(t, "awaiting_approval")))
		fprintf(OUT, "awaiting the admin's approval of %s ('amp approve %s')\n",
		             str(t, "awaiting_approval"), str(t, "task_id"));
	json_array_foreach(json_object_get(t, "subtasks"), i, m) {
		const char *sub_state = str(m, "state");

		fprintf(OUT, "  subtask %-16s %s%-17s%s round %lld", str(m, "subtask_id"),
		             state_color(sub_state), sub_state, sgr(AMP_SGR_RESET), num(m, "round"));
		if (num(m, "rejects"))
			fprintf(OUT, ", %lld rejected", num(m, "rejects"));
		fputc('\n', OUT);
	}
	list = json_object_get(t, "messages");
	idw = widest(list, "msg_id");
	order = amp_human_time_order(list, "timestamp");
	for (k = 0; k < json_array_size(list); k++) {
		m = json_array_get(list, order ? order[k] : k);
		if (h.width)
			/* A terminal: the id holds the type, whose roles
			 * AMP/1.0 fixes; --wide shows them. */
			fprintf(OUT, "  %-*s  %-*s  ", idw, str(m, "msg_id"), amp_human_when_width(&h),
				when(m, "timestamp", ts));
		else
			fprintf(OUT, "  %s  %-14s  %-11s -> %-11s  %-*s  ", when(m, "timestamp", ts),
				str(m, "type"), str(m, "from"), str(m, "to"), idw, str(m, "msg_id"));
		print_ack(m);
		fputc('\n', OUT);
	}
	free(order);
	list = json_object_get(t, "escalations");
	if (!json_array_size(list)) {
		fprintf(OUT, "escalations: none\n");
	} else {
		fprintf(OUT, "escalations:\n");
		idw = widest(list, "msg_id");
		order = amp_human_time_order(list, "timestamp");
		for (k = 0; k < json_array_size(list); k++) {
			m = json_array_get(list, order ? order[k] : k);
			fprintf(OUT, "  %-*s  %-8s %-18s %-*s  %s\n", amp_human_when_width(&h),
			             when(m, "timestamp", ts),
			             str(m, "severity"), str(m, "escalation_type"), idw,
			             str(m, "msg_id"), str(m, "description"));
		}
		free(order);
	}
	json_array_foreach(json_object_get(t, "unreadable"), i, m)
		fprintf(OUT, "%sunreadable record%s %s: %s\n", sgr(AMP_SGR_RED), sgr(AMP_SGR_RESET),
		             str(m, "name"), str(m, "reason"));
	list = json_object_get(t, "controls");
	order = amp_human_time_order(list, "timestamp");
	for (k = 0; k < json_array_size(list); k++)
		print_control(json_array_get(list, order ? order[k] : k));
	free(order);
	/* Dependencies (amp depend) not approved yet. */
	json_array_foreach(json_object_get(t, "waits_for"), i, m)
		fprintf(OUT, "waits for %s (%s)%s\n", str(m, "task_id"), str(m, "state"),
		             json_is_true(json_object_get(m, "soft")) ? ", soft" : "");
	/* Leases (coord.h) not released: who holds the task, until when. */
	json_array_foreach(json_object_get(t, "claims"), i, m)
		fprintf(OUT, "claimed by %s%s%s until %s%s\n", str(m, "agent"),
		             json_is_string(json_object_get(m, "subtask_id")) ? " for subtask " : "",
		             json_is_string(json_object_get(m, "subtask_id")) ? str(m, "subtask_id") : "",
		             when(m, "expires", ts), json_is_true(json_object_get(m, "expired")) ?
		             " (expired: amp watch releases it)" : "");
	/* SPEC-022 task_progress: each holder's latest report (amp progress). */
	json_array_foreach(json_object_get(t, "progress"), i, m) {
		fprintf(OUT, "progress of %s%s%s: %lld%% at %s", str(m, "agent"),
		             json_is_string(json_object_get(m, "subtask_id")) ? " on subtask " : "",
		             json_is_string(json_object_get(m, "subtask_id")) ? str(m, "subtask_id") : "",
		             (long long)json_integer_value(json_object_get(m, "percent")),
		             when(m, "timestamp", ts));
		if (json_is_string(json_object_get(m, "note")))
			fprintf(OUT, ": %s", str(m, "note"));
		fputc('\n', OUT);
	}
	/* SPEC-022 feedback: the clarification questions (amp ask), each
	 * answered or due. */
	json_array_foreach(json_object_get(t, "questions"), i, m) {
		const json_t *a = json_object_get(m, "answer");

		fprintf(OUT, "question %s by %s%s%s: %s\n", str(m, "record"),
		             json_is_string(json_object_get(m, "agent")) ? str(m, "agent") : "the executor",
		             json_is_string(json_object_get(m, "subtask_id")) ? " on subtask " : "",
		             json_is_string(json_object_get(m, "subtask_id")) ? str(m, "subtask_id") : "",
		             str(m, "question"));
		if (json_is_object(a))
			fprintf(OUT, "  answered by %s at %s: %s\n",
			             json_is_string(json_object_get(a, "agent")) ? str(a, "agent") : str(a, "from"),
			             when(a, "timestamp", ts), str(a, "answer"));
		else
			fprintf(OUT, "  unanswered, due %s\n", when(m, "answer_due", ts));
	}
	json_array_foreach(json_object_get(t, "superseded"), i, m) {
		fprintf(OUT, "%ssuperseded%s %s %s", sgr(AMP_SGR_YELLOW), sgr(AMP_SGR_RESET),
		             json_is_string(json_object_get(m, "type")) ? str(m, "type") : str(m, "kind"),
		             str(m, "id"));
		fprintf(OUT, " from %s", str(m, "from"));
		if (json_is_string(json_object_get(m, "by")))
			fprintf(OUT, ", by %s", str(m, "by"));
		fprintf(OUT, ": %s\n", str(m, "reason"));
	}
}

/* The end of a task's line: who holds it, what it waits for. */
static void print_holders(const json_t *s)
{
	const json_t *m;
	size_t i, open;

	json_array_foreach(json_object_get(s, "claims"), i, m)
		fprintf(OUT, "%s%s%s%s%s", i ? ", " : "  held by ", str(m, "agent"),
		             json_is_string(json_object_get(m, "subtask_id")) ? " for " : "",
		             json_is_string(json_object_get(m, "subtask_id")) ? str(m, "subtask_id") : "",
		             json_is_true(json_object_get(m, "expired")) ? " (expired)" : "");
	json_array_foreach(json_object_get(s, "waits_for"), i, m)
		fprintf(OUT, "%s%s (%s%s)", i ? ", " : "  waits for ", str(m, "task_id"), str(m, "state"),
		             json_is_true(json_object_get(m, "soft")) ? ", soft" : "");
	/* What the team reports (issue 33): progress, questions unanswered. */
	json_array_foreach(json_object_get(s, "progress"), i, m)
		fprintf(OUT, "%s%s %lld%%", i ? ", " : "  progress ", str(m, "agent"),
		             (long long)json_integer_value(json_object_get(m, "percent")));
	open = 0;
	json_array_foreach(json_object_get(s, "questions"), i, m)
		open += json_is_null(json_object_get(m, "answer"));
	if (open)
		fprintf(OUT, "  %zu question%s unanswered", open, open == 1 ? "" : "s");
}

/* amp status TASK: the task's status, its claims and what it waits for.
 * Returns the exit code. */
static int show_task(amp_store *st, git_tree *tip, const char *id, int64_t now, int json_out)
{
	amp_task_log log = { 0 };
	json_t *out = NULL, *waits = NULL;
	amp_error err;
	int code = 0;

	if (amp_store_read_task(st, tip, id, &log, &err) < 0) {
		code = amp_cli_fail("status", &err);
		goto cleanup;
	}
	if (!log.count && !log.nbad) {
		amp_error_set(&err, AMP_EUSAGE, "", "no task %s in the SSOT", id);
		code = amp_cli_fail("status", &err);
		goto cleanup;
	}
	out = amp_task_status_json(&log, now);
	json_object_set_new(out, "claims", amp_coord_claims_json(&log, now));
	json_object_set_new(out, "progress", amp_progress_json(&log));
	json_object_set_new(out, "questions", amp_questions_json(&log));
	json_object_set_new(out, "released", amp_coord_released_json(&log));
	if (amp_coord_waits(st, tip, &log, &waits, &err) < 0) {
		code = amp_cli_fail("status", &err);
		goto cleanup;
	}
	json_object_set_new(out, "waits_for", waits);
	if (json_out) {
		amp_cli_print_json(out, 1);
	} else {
		print_task(out);
	}
cleanup:
	json_decref(out);
	amp_task_log_free(&log);
	return code;
}

/* One line of the listing, from task id's brief summary b (and its whole
 * summary s, when read, for the holders). */
static void print_brief(int idw, const char *id, const amp_summary_brief *b, const json_t *s)
{
	struct line line;

	line.len = 0;
	put(&line, amp_term(id), idw);
	put(&line, " ", 0);
	put(&line, state_color(b->state), 0);
	put(&line, b->state, 11);
	put(&line, sgr(AMP_SGR_RESET), 0);
	put(&line, " ", 0);
	put_count(&line, b->messages, 3);
	put(&line, " msgs  ", 0);
	put_count(&line, b->reject_count, 0);
	put(&line, " rejects", 0);
	put(&line, b->acks_overdue ? "  ACK overdue" : "", 0);
	put(&line, b->acks_pending ? "  ACK pending" : "", 0);
	if (b->unreadable) {
		put(&line, "  ", 0);
		put_count(&line, b->unreadable, 0);
		put(&line, " unreadable", 0);
	}
	fwrite(line.buf, 1, line.len, OUT);
	if (s)
		print_holders(s);
	fputc('\n', OUT);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "all", no_argument, NULL, 'a' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		AMP_HUMAN_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL;
	amp_store *st = NULL;
	git_tree *tip = NULL;
	amp_summaries *cache = NULL;
	amp_error err;
	json_t *out = NULL;
	char **ids = NULL;
	git_oid *trees = NULL;
	size_t nids = 0, finished = 0, i;
	int64_t now;
	int c, json_out = 0, all = 0, code = 0, idw = 12;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json_out = 1; break;
		case 'a': all = 1; break;
		case 'r': repo = optarg; break;
		case 'h': return amp_cli_help("status", usage, opts);
		default:
			if ((code = amp_human_option(&h, c, optarg, &err)) > 0)
				break;
			if (code < 0)
				return amp_cli_usage_error("status", usage, "%s", err.message);
			return amp_cli_bad_option("status", usage, opts, argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("status", argc, argv, "h", opts)))
		return code;
	if (argc - optind > 1)
		return amp_cli_usage_error("status", usage, "at most one task id");
	if (all && optind < argc)
		return amp_cli_usage_error("status", usage, "--all lists every task: not with a task id");
	if (optind < argc &&
	    (code = amp_cli_check_id("status", NULL, "<task_id>", argv[optind], "task_id")))
		goto cleanup;
	if ((code = amp_cli_open_store("status", repo, &st)))
		goto cleanup;
	amp_human_start(&h, amp_store_repo(st), json_out, 1);
	if (amp_clock_now_ms(&now, &err) < 0 ||
	    amp_store_tip(st, amp_store_messages_ref(st), NULL, &tip, &err) < 0) {
		code = amp_cli_fail("status", &err);
		goto cleanup;
	}
	if (optind < argc) {
		code = show_task(st, tip, argv[optind], now, json_out);
		goto cleanup;
	}
	/* Like an issue tracker: the tasks not finished, unless --all. */
	cache = amp_summaries_open(st);
	if ((all ? amp_store_list_task_trees(st, tip, &ids, &trees, &nids, &err) :
		   amp_summary_list_open(cache, st, tip, now, &ids, &trees, &nids, &finished,
					 &err)) < 0) {
		code = amp_cli_fail("status", &err);
		goto cleanup;
	}
	out = json_array();
	/* One column for the task ids, however long the longest. */
	for (i = 0; i < nids; i++)
		if ((int)strlen(amp_term(ids[i])) > idw)
			idw = (int)strlen(amp_term(ids[i]));
	for (i = 0; i < nids; i++) {
		amp_summary_brief b = { 0 };
		json_t *s = NULL;
		int bad;

		/* The listing prints from the brief summary and reads the whole
		 * one only for --json or a task with claims or dependencies. */
		bad = !json_out &&
		      amp_summary_brief_get(cache, st, tip, ids[i], &trees[i], now, &b, &err) < 0;
		if (!bad && (json_out || b.extras))
			bad = !(s = amp_summary_get(cache, st, tip, ids[i], now, &err));
		if (bad) {
			/* One unreadable task directory hides that task only: the
			 * others are listed, and the exit code says it (4: the
			 * SSOT holds it, even when its name is no task id). */
			err.status = AMP_EIO;
			code = amp_cli_fail("status", &err);
			if (!json_out)
				fprintf(OUT, "%-*s %sunreadable%s  %s\n", idw, amp_term(ids[i]), sgr(AMP_SGR_RED),
				             sgr(AMP_SGR_RESET), amp_term(err.message));
			json_array_append_new(out, json_pack("{s:s,s:s,s:s}", "task_id", ids[i],
							     "state", "unreadable", "reason", err.message));
			continue;
		}
		/* Only --json prints them all at the end: the listing of 25,000
		 * tasks holds one summary at a time. */
		if (json_out) {
			json_array_append_new(out, s);
			continue;
		}
		print_brief(idw, ids[i], &b, s);
		json_decref(s);
	}
	if (json_out) {
		amp_cli_print_result("status-list", "tasks", out, 1);
	} else if (!nids && !finished) {
		fprintf(OUT, "no tasks yet\n");
	} else if (!nids) {
		fprintf(OUT, "no open tasks; %zu finished (amp status --all lists them)\n", finished);
	} else if (finished) {
		fprintf(OUT, "and %zu finished task%s (amp status --all lists them)\n", finished,
		             finished == 1 ? "" : "s");
	}
cleanup:
	amp_human_out_end(&h);
	amp_summaries_close(cache);
	json_decref(out);
	amp_strv_free(ids, nids);
	free(trees);
	git_tree_free(tip);
	code = amp_cli_report_skipped("status", st, code);
	amp_store_free(st);
	return code;
}
