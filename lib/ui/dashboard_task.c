/*
 * dashboard_task.c - a task's page of the dashboard (dashboard.h): its
 * state and holder, a timeline with one lane per subtask and round, the
 * conversation as threads (the task's own records, then each subtask's
 * rounds: request, result, review, verdict, rework), each escalation with
 * its cause and what lifted it, the bookkeeping records (ACKs, heartbeats,
 * idempotency keys, records set aside) folded away; the team's progress
 * reports and questions (dashboard_feedback.c); and the task's row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "protocol/protocol.h"
#include "dashboard_int.h"
#include "base/util.h"

#define str dash_str
/* Lanes of the timeline and threads of the conversation, at most. */
#define THREADS_MAX 64
#define THREAD_NAME 160

/* Where each record goes: its thread (0: the task's own records), and
 * whether it is bookkeeping. */
struct placed {
	int thread;
	int fold;
	int reject; /* the n-th rejecting verdict, or 0 */
};

struct threads {
	char name[THREADS_MAX][THREAD_NAME];
	size_t n;
	struct placed *at; /* per entry of the log */
};

/* The colour of a record on the timeline: a fixed palette by what it is,
 * never a value from the record. */
static const char *mark_color(const amp_entry *e)
{
	const char *type = str(e->doc, "type");
	const json_t *p = json_object_get(e->doc, "payload");

	if (e->kind == AMP_ENTRY_CTL)
		return "#6b6b6b";
	if (!type)
		return "#8a8a8a";
	if (!strcmp(type, "task_dispatch"))
		return "#1f5fbf";
	if (!strcmp(type, "task_result"))
		return "#1f7a70";
	if (!strcmp(type, "review_request"))
		return "#7b5ea7";
	if (!strcmp(type, "review_verdict"))
		return str(p, "decision") && !strcmp(str(p, "decision"), "approved") ? "#1e7e34" : "#c25100";
	if (!strcmp(type, "escalation"))
		return "#b00020";
	return "#8a8a8a";
}

static int is_type(const amp_entry *e, const char *type)
{
	return e->kind == AMP_ENTRY_MSG && str(e->doc, "type") && !strcmp(str(e->doc, "type"), type);
}

/* Bookkeeping: what says a record arrived or an agent is alive, not what
 * the task is about. */
static int bookkeeping(const amp_entry *e)
{
	const char *type = str(e->doc, "type");

	return e->kind == AMP_ENTRY_ACK ||
	       (e->kind == AMP_ENTRY_CTL && type &&
		(!strcmp(type, "heartbeat") || !strcmp(type, "idempotency_key")));
}

/* The thread named "<subtask> round <n>", made when new; 0 when full. */
static int thread_of(struct threads *th, const char *subtask, int round)
{
	char name[THREAD_NAME];
	size_t i;

	snprintf(name, sizeof(name), "%.120s, round %d", subtask, round);
	for (i = 1; i < th->n; i++)
		if (!strcmp(th->name[i], name))
			return (int)i;
	if (th->n == THREADS_MAX)
		return 0;
	memcpy(th->name[th->n], name, sizeof(name));
	return (int)th->n++;
}

/* The subtask of a result (its payload), of a request (its result's),
 * of a verdict (the request its context_ref names), from what came before;
 * `subs` maps msg_id to subtask. */
static const char *subtask_of(const amp_entry *e, json_t *subs)
{
	const json_t *p = json_object_get(e->doc, "payload"), *ref;
	size_t i;

	if (is_type(e, "task_result"))
		return str(p, "subtask_id");
	if (is_type(e, "review_request"))
		return json_string_value(json_object_get(subs, str(p, "task_result_ref") ? str(p, "task_result_ref") : ""));
	if (!is_type(e, "review_verdict"))
		return NULL;
	ref = json_object_get(e->doc, "context_ref");
	if (json_is_string(ref))
		return json_string_value(json_object_get(subs, json_string_value(ref)));
	json_array_foreach(ref, i, p)
		if (json_is_string(p) && json_object_get(subs, json_string_value(p)))
			return json_string_value(json_object_get(subs, json_string_value(p)));
	return NULL;
}

/* Places every record of the log in a thread: a subtask's result, review
 * request and verdict go to "<subtask>, round <n>" (a rejection starts
 * the next round), everything else to the task's own thread. */
static int place(const amp_task_log *log, struct threads *th)
{
	json_t *subs = json_object(), *rounds = json_object();
	int rejects = 0;
	size_t i;

	th->n = 1;
	snprintf(th->name[0], THREAD_NAME, "the task");
	if (!(th->at = calloc(log->count + 1, sizeof(*th->at))) || !subs || !rounds) {
		json_decref(subs);
		json_decref(rounds);
		return -1;
	}
	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *sub = e->kind == AMP_ENTRY_MSG ? subtask_of(e, subs) : NULL;
		const char *decision = str(json_object_get(e->doc, "payload"), "decision");

		th->at[i].fold = bookkeeping(e);
		if (is_type(e, "review_verdict") && decision && !strcmp(decision, "rejected"))
			th->at[i].reject = ++rejects;
		if (!sub)
			continue;
		if (str(e->doc, "msg_id"))
			json_object_set_new(subs, str(e->doc, "msg_id"), json_string(sub));
		th->at[i].thread = thread_of(th, sub, (int)dash_ival(rounds, sub) + 1);
		if (th->at[i].reject)
			json_object_set_new(rounds, sub, json_integer(dash_ival(rounds, sub) + 1));
	}
	json_decref(subs);
	json_decref(rounds);
	return 0;
}

/* Per task: one lane per thread that has a mark, the records in their
 * order at an even step (never on one another, even at the same second),
 * the times of the first and the last below. */
static void task_svg(FILE *f, const amp_task_log *log, const struct threads *th)
{
	int lane[THREADS_MAX], nlanes = 0, k = 0, n = 0;
	int64_t t0 = -1, t1 = -1, t;
	size_t i;
	double step, width;
	const double x0 = 150, lh = 24;
	char a[AMP_TIME_BUFSZ], b[AMP_TIME_BUFSZ];

	for (i = 0; i < THREADS_MAX; i++)
		lane[i] = -1;
	for (i = 0; i < log->count; i++) {
		if (log->entries[i].kind == AMP_ENTRY_ACK)
			continue;
		n++;
		if (lane[th->at[i].thread] < 0)
			lane[th->at[i].thread] = nlanes++;
		if ((t = amp_record_time(log->entries[i].doc)) >= 0) {
			if (t0 < 0 || t < t0)
				t0 = t;
			if (t > t1)
				t1 = t;
		}
	}
	if (!n)
		return;
	step = n > 1 ? 630.0 / (n - 1) : 0;
	if (step < 18)
		step = 18;
	width = x0 + 20 + step * (n - 1) + 20;
	fprintf(f, "<div class=\"wrap\"><svg viewBox=\"0 0 %.0f %.0f\" style=\"min-width:%.0fpx\" "
		"role=\"group\" aria-label=\"timeline: one lane per subtask and round\">\n",
		width, nlanes * lh + 36, width > 800 ? width : 0);
	for (i = 0; i < th->n; i++) {
		if (lane[i] < 0)
			continue;
		fprintf(f, "<text x=\"4\" y=\"%.0f\">", lane[i] * lh + 24);
		amp_html_put(f, th->name[i], 0);
		fprintf(f, "</text><line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#ddd\"/>\n",
			x0, width - 10, lane[i] * lh + 20, lane[i] * lh + 20);
	}
	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *type = str(e->doc, "type");
		double x, y;

		if (e->kind == AMP_ENTRY_ACK)
			continue;
		x = x0 + 20 + step * k++;
		y = lane[th->at[i].thread] * lh + 20;
		fprintf(f, "<a href=\"#r%d\">", e->seq);
		if (type && !strcmp(type, "escalation"))
			fprintf(f, "<polygon points=\"%.1f,%.0f %.1f,%.0f %.1f,%.0f %.1f,%.0f\" fill=\"%s\">",
				x, y - 7, x + 7, y, x, y + 7, x - 7, y, mark_color(e));
		else if (e->kind == AMP_ENTRY_CTL)
			fprintf(f, "<rect x=\"%.1f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\">",
				x - 5, y - 5, mark_color(e));
		else
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.0f\" r=\"6\" fill=\"%s\">", x, y, mark_color(e));
		fputs("<title>", f);
		amp_html_put(f, type ? type : e->id, 0);
		fputs(" ", f);
		amp_html_put(f, str(e->doc, "from"), 0);
		fputs(" ", f);
		amp_html_put(f, str(e->doc, "timestamp"), 0);
		fputs(e->kind == AMP_ENTRY_CTL ? "</title></rect></a>\n" :
		      type && !strcmp(type, "escalation") ? "</title></polygon></a>\n" :
		      "</title></circle></a>\n", f);
	}
	if (t0 >= 0)
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">%.16s</text><text x=\"%.0f\" y=\"%.0f\" "
			"text-anchor=\"end\">%.16s</text>\n", x0, nlanes * lh + 30, amp_time_format(t0, a),
			width - 10, nlanes * lh + 30, amp_time_format(t1, b));
	fputs("</svg></div>\n<p class=\"meta\">In the order written, evenly spaced. "
	      "<span style=\"color:#1f5fbf\">&#9679;</span> dispatch "
	      "<span style=\"color:#1f7a70\">&#9679;</span> result "
	      "<span style=\"color:#7b5ea7\">&#9679;</span> review request "
	      "<span style=\"color:#1e7e34\">&#9679;</span> approved "
	      "<span style=\"color:#c25100\">&#9679;</span> rejected "
	      "<span style=\"color:#b00020\">&#9670;</span> escalation "
	      "<span style=\"color:#6b6b6b\">&#9632;</span> control record</p>\n", f);
}

void dash_put_escalation(FILE *f, const json_t *e, const char *msg_id)
{
	fputs("<b>", f);
	amp_html_put(f, str(e, "severity"), 0);
	fputs(" ", f);
	amp_html_put(f, str(e, "escalation_type"), 0);
	fputs("</b>", f);
	if (msg_id) {
		fputs(" ", f);
		amp_html_put(f, msg_id, 0);
	}
	fputs(": ", f);
	amp_html_put(f, str(e, "description"), 0);
}

/* One line saying what a message says, from the fields of its type. */
static void put_gist(FILE *f, const json_t *doc)
{
	const char *type = str(doc, "type");
	const json_t *p = json_object_get(doc, "payload"), *v;
	size_t i;

	if (!type)
		return;
	if (!strcmp(type, "task_dispatch")) {
		fputs("<p>", f);
		amp_html_put(f, str(p, "description"), 0);
		fputs("</p><p class=\"meta\">branch ", f);
		amp_html_put(f, str(p, "branch"), 0);
		fputs(", risk ", f);
		amp_html_put(f, str(p, "risk_level"), 0);
		fprintf(f, ", %zu subtask(s)</p>", json_array_size(json_object_get(p, "subtasks")));
	} else if (!strcmp(type, "task_result")) {
		fputs("<p>", f);
		amp_html_put(f, str(p, "subtask_id"), 0);
		fputs(": ", f);
		amp_html_put(f, str(p, "completion_status"), 0);
		fputs("</p>", f);
	} else if (!strcmp(type, "review_request")) {
		fputs("<p>review of ", f);
		amp_html_put(f, str(p, "task_result_ref"), 0);
		fputs(" (", f);
		amp_html_put(f, str(p, "review_scope"), 0);
		fputs(")</p>", f);
	} else if (!strcmp(type, "review_verdict")) {
		fputs("<p>decision <b>", f);
		amp_html_put(f, str(p, "decision"), 0);
		fprintf(f, "</b>, confidence %.2f</p>", json_number_value(json_object_get(p, "confidence")));
		json_array_foreach(json_object_get(p, "issues"), i, v) {
			fputs(i ? "<br>" : "<p class=\"meta\">issues: ", f);
			amp_html_put(f, json_is_string(v) ? json_string_value(v) :
				     str(v, "description") ? str(v, "description") : str(v, "message"), 0);
		}
		if (json_array_size(json_object_get(p, "issues")))
			fputs("</p>", f);
	} else if (!strcmp(type, "escalation")) {
		fputs("<p>", f);
		dash_put_escalation(f, p, NULL);
		fputs("</p>", f);
	}
}

static void put_json(FILE *f, const json_t *doc, int seq)
{
	char *s = amp_json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	fprintf(f, "<span id=\"j%d\"></span><details><summary>JSON</summary><pre>", seq);
	amp_html_put(f, s ? s : "(cannot print)", 1);
	fputs("</pre></details>\n", f);
	free(s);
}

/* The ACK line of a message, from its `amp status --json` entry: dates
 * rather than "due in", so the page does not depend on the time. */
static void put_ack(FILE *f, const json_t *m)
{
	const char *state = str(m, "ack_state");

	if (!m || !state)
		return;
	fputs("<p class=\"meta\">", f);
	if (!strcmp(state, "acked")) {
		fputs("ACKed by ", f);
		amp_html_put(f, str(m, "acked_by"), 0);
		fprintf(f, " after %lld s", dash_ival(m, "ack_seconds"));
		if (json_is_integer(json_object_get(m, "ack_late_seconds")))
			fprintf(f, " <span class=\"overdue\">(%lld s late)</span>", dash_ival(m, "ack_late_seconds"));
	} else if (!strcmp(state, "not_required")) {
		fputs("no ACK required", f);
	} else if (!strcmp(state, "awaiting_approval")) {
		fputs("no ACK before the admin's approval", f);
	} else {
		fputs("no ACK yet; due ", f);
		amp_html_put(f, str(m, "ack_deadline"), 0);
	}
	fputs("</p>\n", f);
}

/* What an escalation is about and what lifted it: the first resume or
 * abort after it (by whom, why), or that it is still open. */
static void put_lifted(FILE *f, const amp_task_log *log, size_t at)
{
	char cause[512];
	const char *c = amp_escalation_cause(log->entries[at].doc, cause, sizeof(cause));
	const char *sev = str(json_object_get(log->entries[at].doc, "payload"), "severity");
	size_t i;

	/* The cause amp compares (its first affected message, or the
	 * record it is about), else what raised it. */
	fputs("<p class=\"meta\">cause: ", f);
	if (c) {
		amp_html_put(f, c, 0);
	} else {
		amp_html_put(f, str(json_object_get(log->entries[at].doc, "payload"), "escalation_type"), 0);
		fputs(" raised by ", f);
		amp_html_put(f, str(log->entries[at].doc, "from"), 0);
	}
	fputs("; ", f);
	for (i = at + 1; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *type = str(e->doc, "type");

		if (e->kind != AMP_ENTRY_CTL || !type || (strcmp(type, "resume") && strcmp(type, "abort")))
			continue;
		fprintf(f, "lifted by <a href=\"#r%d\">", e->seq);
		amp_html_put(f, type, 0);
		fputs("</a> of ", f);
		amp_html_put(f, str(e->doc, "from"), 0);
		if (str(e->doc, "reason")) {
			fputs(" (", f);
			amp_html_put(f, str(e->doc, "reason"), 0);
			fputs(")", f);
		}
		fputs("</p>\n", f);
		return;
	}
	fputs(sev && !strcmp(sev, "critical") ? "<span class=\"overdue\">still open</span>: "
		      "<code class=\"cmd\">amp resume " : "open (not critical: it suspends nothing)", f);
	if (sev && !strcmp(sev, "critical")) {
		amp_html_put(f, log->task_id, 0);
		fputs(" --from admin --reason '...'</code>", f);
	}
	fputs("</p>\n", f);
}

/* One record of the conversation as a list item. */
static void put_entry(FILE *f, const amp_task_log *log, size_t i, const struct placed *pl,
		      const json_t *byid)
{
	const amp_entry *e = &log->entries[i];
	const char *type = str(e->doc, "type");

	fprintf(f, "<li id=\"r%d\" class=\"%s%s\"><p class=\"meta\">#%d ", e->seq,
		e->kind == AMP_ENTRY_ACK ? "k-ack" : e->kind == AMP_ENTRY_CTL ? "k-ctl" :
		type && !strcmp(type, "escalation") ? "k-escalation" : "k-msg",
		pl->reject ? " rejected" : "", e->seq);
	amp_html_put(f, str(e->doc, "timestamp"), 0);
	fprintf(f, " &middot; <a href=\"#j%d\">JSON</a></p><p><span class=\"who\">", e->seq);
	amp_html_put(f, str(e->doc, "from"), 0);
	fputs("</span> &rarr; <span class=\"who\">", f);
	amp_html_put(f, str(e->doc, "to") ? str(e->doc, "to") : "SSOT", 0);
	fputs("</span>: <b>", f);
	if (e->kind == AMP_ENTRY_ACK) {
		fputs("ACK</b> of <a href=\"#", f);
		amp_html_put(f, e->id, 0);
		fputs("\">", f);
		amp_html_put(f, e->id, 0);
		fputs("</a></p>\n", f);
	} else if (e->kind == AMP_ENTRY_CTL) {
		amp_html_put(f, type ? type : e->id, 0);
		fputs("</b>", f);
		if (str(e->doc, "reason") || str(e->doc, "note")) {
			fputs(": ", f);
			amp_html_put(f, str(e->doc, "reason") ? str(e->doc, "reason") : str(e->doc, "note"), 0);
		}
		fputs("</p>\n", f);
	} else {
		amp_html_put(f, type, 0);
		fputs("</b> <span class=\"meta\" id=\"", f);
		amp_html_put(f, e->id, 0);
		fputs("\">", f);
		amp_html_put(f, e->id, 0);
		fputs("</span>", f);
		if (pl->reject)
			fprintf(f, " <span class=\"overdue\">reject #%d</span>", pl->reject);
		fputs("</p>\n", f);
		put_gist(f, e->doc);
		put_ack(f, json_object_get(byid, e->id));
		if (type && !strcmp(type, "escalation"))
			put_lifted(f, log, i);
	}
	put_json(f, e->doc, e->seq);
	fputs("</li>\n", f);
}

/* The head of the page: state, rejects, holder, suspension, approval. */
static void put_summary(FILE *f, const json_t *t, const json_t *row)
{
	const json_t *h;
	size_t i;

	fputs("<p>state ", f);
	dash_put_state(f, str(t, "state"));
	fprintf(f, " &middot; %lld reject(s)", dash_ival(t, "reject_count"));
	json_array_foreach(json_object_get(row, "holders"), i, h) {
		fputs(i ? ", " : " &middot; held by <span class=\"who\">", f);
		amp_html_put(f, str(h, "who"), 0);
	}
	if (json_array_size(json_object_get(row, "holders")))
		fputs("</span>", f);
	if (str(t, "suspended_by")) {
		fputs(" &middot; <span class=\"overdue\">suspended by ", f);
		amp_html_put(f, str(t, "suspended_by"), 0);
		fputs("</span>", f);
	}
	if (str(t, "awaiting_approval")) {
		fputs(" &middot; awaiting the admin's approval of ", f);
		amp_html_put(f, str(t, "awaiting_approval"), 0);
	}
	fputs("</p>\n", f);
}

static void put_subtasks(FILE *f, const json_t *t)
{
	const json_t *m;
	size_t i;

	fputs("<h2>Subtasks</h2>\n<div class=\"wrap\"><table><tr><th>subtask</th><th>state</th>"
	      "<th>round</th><th>rejects</th></tr>\n", f);
	json_array_foreach(json_object_get(t, "subtasks"), i, m) {
		fputs("<tr><td>", f);
		amp_html_put(f, str(m, "subtask_id"), 0);
		fputs("</td><td>", f);
		dash_put_state(f, str(m, "state"));
		fprintf(f, "</td><td>%lld</td><td>%lld</td></tr>\n", dash_ival(m, "round"),
			dash_ival(m, "rejects"));
	}
	fputs("</table></div>\n", f);
}

/* The records neither placed nor read: unreadable ones, those set aside. */
static void put_unplaced(FILE *f, const amp_task_log *log)
{
	size_t i;

	for (i = 0; i < log->nbad; i++) {
		fprintf(f, "<li class=\"k-bad\"><p><b class=\"overdue\">unreadable record</b> #%d ",
			log->bad[i].seq);
		amp_html_put(f, log->bad[i].name, 0);
		fputs(": ", f);
		amp_html_put(f, log->bad[i].reason, 0);
		fputs("</p></li>\n", f);
	}
}

static void put_thread(FILE *f, const amp_task_log *log, const struct threads *th, size_t k,
		       const json_t *byid)
{
	size_t i, shown = 0;

	for (i = 0; i < log->count; i++) {
		if (th->at[i].thread != (int)k || th->at[i].fold)
			continue;
		if (!shown++) {
			fputs(k ? "<section class=\"round\"><h3>" : "<section><h3>", f);
			amp_html_put(f, th->name[k], 0);
			fputs("</h3>\n<ol class=\"tl\">\n", f);
		}
		put_entry(f, log, i, &th->at[i], byid);
	}
	if (!k && log->nbad && !shown++)
		fputs("<section><h3>the task</h3>\n<ol class=\"tl\">\n", f);
	if (!k)
		put_unplaced(f, log);
	if (shown)
		fputs("</ol></section>\n", f);
}

void dash_render_task(FILE *f, const amp_task_log *log, const json_t *t, const json_t *row)
{
	struct threads th;
	json_t *byid = json_object();
	const json_t *m;
	size_t i, folded = 0;

	dash_page_head(f, log->task_id, "../");
	if (str(row, "title")) {
		fputs("<p><b>", f);
		amp_html_put(f, str(row, "title"), 0);
		fputs("</b></p>\n", f);
	}
	put_summary(f, t, row);
	put_subtasks(f, t);
	dash_put_feedback(f, log);
	if (place(log, &th) < 0) {
		fputs("<p class=\"overdue\">out of memory</p>\n", f);
		goto done;
	}
	fputs("<h2>Timeline</h2>\n", f);
	task_svg(f, log, &th);
	/* The status entries by msg_id, for the ACK of each message. */
	json_array_foreach(json_object_get(t, "messages"), i, m)
		if (str(m, "msg_id"))
			json_object_set(byid, str(m, "msg_id"), (json_t *)m);
	fputs("<h2>Conversation</h2>\n", f);
	for (i = 0; i < th.n; i++)
		put_thread(f, log, &th, i, byid);
	for (i = 0; i < log->count; i++)
		folded += th.at[i].fold;
	if (folded || log->nsuperseded) {
		fprintf(f, "<details class=\"bookkeeping\"><summary>%zu bookkeeping record(s): ACKs, "
			"heartbeats, idempotency keys, records set aside</summary>\n<ol class=\"tl\">\n",
			folded + log->nsuperseded);
		for (i = 0; i < log->count; i++)
			if (th.at[i].fold)
				put_entry(f, log, i, &th.at[i], byid);
		for (i = 0; i < log->nsuperseded; i++) {
			fprintf(f, "<li class=\"k-ack\"><p><b>superseded</b> #%d ", log->superseded[i].seq);
			amp_html_put(f, log->superseded[i].id, 0);
			fputs("</p>", f);
			put_json(f, log->superseded[i].doc, -log->superseded[i].seq);
			fputs("</li>\n", f);
		}
		fputs("</ol></details>\n", f);
	}
done:
	free(th.at);
	json_decref(byid);
	dash_page_tail(f, -1);
}
