/*
 * dashboard.c - the static site of the SSOT (dashboard.h): the overview,
 * one page per task, the error log, and the state that makes a pass cost
 * what changed.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "base/clock.h"
#include "base/tempfile.h"
#include "dashboard.h"
#include "protocol/protocol.h"
#include "base/util.h"

/* Bumped when the pages change shape: a state of another format rebuilds
 * every page. */
#define PAGE_FORMAT 3
#define STATE_FILE ".amp-dashboard.json"
/* Per shard of the task tree: its tree, its tasks' trees and rows. */
#define STATE_DIR ".amp-dashboard"
/* The error page lists the newest rejections only, so that it stays small. */
#define ERRORS_SHOWN 500
/* The overview's charts: this many hours up to the newest message. */
#define CHART_HOURS 48
/* The overview shows this many tasks needing the admin (needs.html: all)
 * and this many most recently active tasks (the group pages: all). */
#define NEEDS_SHOWN 50
#define RECENT_SHOWN 100
#define HOUR_MS 3600000LL

/* A shard of the task tree: tasks/<year>/<s>/. */
struct shard {
	char key[600]; /* "<year>/<s>" */
	long long year, s; /* for the order; -1 when not a number */
	git_oid id;
};

struct gen {
	amp_store *st;
	const char *dir;
	json_t *written; /* paths under dir */
};

/* ---- files ------------------------------------------------------------ */

/* Writes data to dir/rel through a temporary file and a rename, so that a
 * reader (a browser, the server) never sees half a page.  With
 * `if_changed`, a file already holding these bytes is left alone. */
static int write_file(struct gen *g, const char *rel, const char *data, size_t len,
		      int if_changed, amp_error *err)
{
	amp_tempfile t = { .fd = -1 };
	char path[PATH_MAX], tmp[sizeof(t.tmp)];
	int status = AMP_OK;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", g->dir, rel) >= sizeof(path))
		return amp_error_set(err, AMP_EIO, "", "%s/%s: path too long", g->dir, rel);
	if (if_changed) {
		char *old = NULL;
		size_t oldlen = 0;

		if (amp_cache_read(path, len, &old, &oldlen) == 0 && oldlen == len &&
		    !memcmp(old, data, len)) {
			free(old);
			return AMP_OK;
		}
		free(old);
	}
	/* the errors name the temporary file (tempfile.h) */
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	if (amp_tempfile_open(&t, path, 0) == 0)
		snprintf(tmp, sizeof(tmp), "%s", t.tmp);
	if (!t.tmp[0] || amp_tempfile_write(&t, data, len) < 0 || amp_tempfile_close(&t) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "cannot write %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	if (amp_tempfile_commit(&t) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "cannot rename %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	json_array_append_new(g->written, json_string(rel));
cleanup:
	amp_tempfile_rollback(&t);
	return status;
}

/* A page being built in memory (open_memstream), written by finish(). */
struct page {
	FILE *f;
	char *buf;
	size_t len;
};

static int page_open(struct page *p, amp_error *err)
{
	p->buf = NULL;
	p->len = 0;
	if (!(p->f = open_memstream(&p->buf, &p->len)))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	return AMP_OK;
}

static int page_finish(struct gen *g, struct page *p, const char *rel, int if_changed,
		       amp_error *err)
{
	int status;

	if (fclose(p->f) != 0) {
		free(p->buf);
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	}
	status = write_file(g, rel, p->buf, p->len, if_changed, err);
	free(p->buf);
	return status;
}

/* ---- page chrome ---------------------------------------------------------- */

static const char css[] =
	"body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;padding:0 1em 2em;"
	"color:#1d1d1f;background:#fbfbfd;line-height:1.4}"
	"header{border-bottom:1px solid #ddd;margin-bottom:1em}"
	"nav a{margin-right:1em}h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em}"
	"table{border-collapse:collapse;width:100%;font-size:.92em}"
	"th,td{border-bottom:1px solid #e3e3e6;padding:.3em .4em;text-align:left;vertical-align:top}"
	".wrap{overflow-x:auto}"
	".st{display:inline-block;padding:0 .45em;border-radius:.6em;font-size:.85em;background:#eee}"
	".st-approved{background:#d4f5dc}.st-rejected,.st-locked,.st-suspended,.st-aborted{background:#fbd5d5}"
	".st-awaiting_approval{background:#fff0c2}.overdue{color:#b00020;font-weight:600}"
	".needs{border-left:4px solid #b00020;background:#fff5f5;padding:.5em .8em;margin:.5em 0}"
	"ol.tl{list-style:none;padding:0}ol.tl li{border-left:3px solid #ccd;margin:0 0 .8em;padding:.2em .7em}"
	"li.k-escalation{border-color:#b00020;background:#fff5f5}li.k-ctl{border-color:#888}"
	"li.k-ack{border-color:#dde;font-size:.9em;color:#555}li.rejected{border-color:#e06000}"
	"li.k-bad{border-color:#b00020}"
	".meta{color:#555;font-size:.85em}.who{font-weight:600}"
	"pre{white-space:pre-wrap;word-break:break-all;background:#f3f3f6;padding:.5em;font-size:.8em}"
	"svg{width:100%;height:auto;max-width:60em;background:#fff;border:1px solid #e3e3e6}"
	"svg text{font-size:11px;fill:#444}"
	"@media (max-width:600px){body{padding:0 .5em 1em}th,td{padding:.25em}.hide-s{display:none}}";

/* The top of a page; `up` is the path back to DIR ("" or "../"). */
static void page_head(FILE *f, const char *title, const char *up)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      /* No script ever: even a markup mistake could not run one. */
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "style-src 'unsafe-inline'; img-src 'self'\">\n<title>", f);
	amp_html_put(f, title, 0);
	fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n<header><nav>"
		"<a href=\"%sindex.html\">Overview</a><a href=\"%serrors.html\">Error log</a>"
		"</nav>\n<h1>", css, up, up);
	amp_html_put(f, title, 0);
	fputs("</h1></header>\n<main>\n", f);
}

static void page_tail(FILE *f)
{
	fputs("</main>\n<footer class=\"meta\"><p>Generated by amp dashboard from the SSOT; "
	      "read-only.</p></footer>\n</body></html>\n", f);
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* A state as a badge; the class name is one of amp's own state words. */
static void put_state(FILE *f, const char *state)
{
	static const char *known[] = { "new", "awaiting_approval", "dispatched", "in_progress",
		"submitted", "in_review", "approved", "rejected", "suspended", "locked",
		"aborted", "unreadable", NULL };
	const char *cls = "other";
	size_t i;

	for (i = 0; state && known[i]; i++)
		if (!strcmp(state, known[i]))
			cls = known[i];
	fprintf(f, "<span class=\"st st-%s\">", cls);
	amp_html_put(f, state ? state : "?", 0);
	fputs("</span>", f);
}

static void put_time(FILE *f, int64_t ms)
{
	char buf[AMP_TIME_BUFSZ];

	if (ms < 0)
		fputs("-", f);
	else
		amp_html_put(f, amp_time_format(ms, buf), 0);
}

/* ---- the task page -------------------------------------------------------- */

static const char *const lanes[] = { "coordinator", "executor", "reviewer", "admin", "system" };
#define NLANES (sizeof(lanes) / sizeof(lanes[0]))

static size_t lane_of(const char *role)
{
	size_t i;

	for (i = 0; role && i < NLANES; i++)
		if (!strcmp(role, lanes[i]))
			return i;
	return NLANES; /* any other: the bottom lane */
}

/* The colour of a record on the timeline: a fixed palette by what it is,
 * never a value from the record. */
static const char *mark_color(const amp_entry *e)
{
	const char *type = str(e->doc, "type");
	const json_t *p = json_object_get(e->doc, "payload");

	if (e->kind == AMP_ENTRY_CTL)
		return "#777";
	if (!type)
		return "#999";
	if (!strcmp(type, "task_dispatch"))
		return "#1f5fbf";
	if (!strcmp(type, "task_result"))
		return "#2a9d8f";
	if (!strcmp(type, "review_request"))
		return "#7b5ea7";
	if (!strcmp(type, "review_verdict"))
		return str(p, "decision") && !strcmp(str(p, "decision"), "approved") ? "#1e9e3e" : "#e06000";
	if (!strcmp(type, "escalation"))
		return "#b00020";
	return "#999";
}

/* Per task: the records on one time axis, a lane per role. */
static void task_svg(FILE *f, const amp_task_log *log)
{
	int64_t t0 = -1, t1 = -1, t;
	size_t i, l;
	char a[AMP_TIME_BUFSZ], b[AMP_TIME_BUFSZ];
	const double x0 = 90, w = 690;

	for (i = 0; i < log->count; i++) {
		if (log->entries[i].kind == AMP_ENTRY_ACK ||
		    (t = amp_record_time(log->entries[i].doc)) < 0)
			continue;
		if (t0 < 0 || t < t0)
			t0 = t;
		if (t > t1)
			t1 = t;
	}
	if (t0 < 0)
		return;
	fprintf(f, "<svg viewBox=\"0 0 800 %u\" role=\"img\" aria-label=\"timeline\">\n",
		(unsigned)(NLANES + 1) * 22 + 30);
	for (l = 0; l <= NLANES; l++)
		fprintf(f, "<text x=\"4\" y=\"%u\">%s</text><line x1=\"%.0f\" x2=\"790\" y1=\"%u\" "
			"y2=\"%u\" stroke=\"#eee\"/>\n", (unsigned)(l * 22 + 24),
			l < NLANES ? lanes[l] : "other", x0, (unsigned)(l * 22 + 20),
			(unsigned)(l * 22 + 20));
	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *type = str(e->doc, "type");
		double x;
		unsigned y;

		if (e->kind == AMP_ENTRY_ACK || (t = amp_record_time(e->doc)) < 0)
			continue;
		x = t1 > t0 ? x0 + w * (double)(t - t0) / (double)(t1 - t0) : x0 + w / 2;
		y = (unsigned)(lane_of(str(e->doc, "from")) * 22 + 20);
		fprintf(f, "<a href=\"#r%d\">", e->seq);
		if (type && !strcmp(type, "escalation"))
			fprintf(f, "<polygon points=\"%.1f,%u %.1f,%u %.1f,%u %.1f,%u\" fill=\"%s\">",
				x, y - 7, x + 7, y, x, y + 7, x - 7, y, mark_color(e));
		else if (e->kind == AMP_ENTRY_CTL)
			fprintf(f, "<rect x=\"%.1f\" y=\"%u\" width=\"10\" height=\"10\" fill=\"%s\">",
				x - 5, y - 5, mark_color(e));
		else
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%u\" r=\"6\" fill=\"%s\">", x, y,
				mark_color(e));
		fputs("<title>", f);
		amp_html_put(f, type ? type : e->id, 0);
		fputs(" ", f);
		amp_html_put(f, str(e->doc, "from"), 0);
		fputs(" ", f);
		put_time(f, t);
		fputs(e->kind == AMP_ENTRY_CTL ? "</title></rect></a>\n" :
		      type && !strcmp(type, "escalation") ? "</title></polygon></a>\n" :
		      "</title></circle></a>\n", f);
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%u\">%s</text><text x=\"790\" y=\"%u\" "
		"text-anchor=\"end\">%s</text>\n</svg>\n", x0, (unsigned)(NLANES + 1) * 22 + 24,
		amp_time_format(t0, a), (unsigned)(NLANES + 1) * 22 + 24, amp_time_format(t1, b));
	fputs("<p class=\"meta\"><span style=\"color:#1f5fbf\">&#9679;</span> dispatch "
	      "<span style=\"color:#2a9d8f\">&#9679;</span> result "
	      "<span style=\"color:#7b5ea7\">&#9679;</span> review request "
	      "<span style=\"color:#1e9e3e\">&#9679;</span> approved "
	      "<span style=\"color:#e06000\">&#9679;</span> rejected "
	      "<span style=\"color:#b00020\">&#9670;</span> escalation "
	      "<span style=\"color:#777\">&#9632;</span> control record</p>\n", f);
}

/* "<b>severity type</b> [msg_id]: description" of an escalation's payload
 * (or of amp status's summary of one, which has the same members). */
static void put_escalation(FILE *f, const json_t *e, const char *msg_id)
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
	const json_t *p = json_object_get(doc, "payload");

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
	} else if (!strcmp(type, "escalation")) {
		fputs("<p>", f);
		put_escalation(f, p, NULL);
		fputs("</p>", f);
	}
}

static void put_json(FILE *f, const json_t *doc)
{
	char *s = amp_json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	fputs("<details><summary>JSON</summary><pre>", f);
	amp_html_put(f, s ? s : "(cannot print)", 1);
	fputs("</pre></details>\n", f);
	free(s);
}

/* The ACK line of message msg_id, from its `amp status --json` entry:
 * dates rather than "due in", so the page does not depend on the time. */
static void put_ack(FILE *f, const json_t *m)
{
	const char *state = str(m, "ack_state");

	if (!m || !state)
		return;
	fputs("<p class=\"meta\">", f);
	if (!strcmp(state, "acked")) {
		fputs("ACKed by ", f);
		amp_html_put(f, str(m, "acked_by"), 0);
		fprintf(f, " after %lld s", (long long)json_integer_value(json_object_get(m, "ack_seconds")));
		if (json_is_integer(json_object_get(m, "ack_late_seconds")))
			fprintf(f, " <span class=\"overdue\">(%lld s late)</span>",
				(long long)json_integer_value(json_object_get(m, "ack_late_seconds")));
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

static void render_task(FILE *f, const amp_task_log *log, const json_t *t)
{
	const json_t *subs = json_object_get(t, "subtasks"), *m;
	json_t *byid;
	int rejects = 0;
	size_t i;

	page_head(f, log->task_id, "../");
	fputs("<p>state ", f);
	put_state(f, str(t, "state"));
	fprintf(f, " &middot; %lld reject(s)", (long long)json_integer_value(json_object_get(t, "reject_count")));
	if (str(t, "suspended_by")) {
		fputs(" &middot; <span class=\"overdue\">suspended by ", f);
		amp_html_put(f, str(t, "suspended_by"), 0);
		fputs("</span>", f);
	}
	if (str(t, "awaiting_approval")) {
		fputs(" &middot; awaiting the admin's approval of ", f);
		amp_html_put(f, str(t, "awaiting_approval"), 0);
	}
	fputs("</p>\n<h2>Subtasks</h2>\n<div class=\"wrap\"><table><tr><th>subtask</th><th>state</th>"
	      "<th>round</th><th>rejects</th></tr>\n", f);
	json_array_foreach(subs, i, m) {
		fputs("<tr><td>", f);
		amp_html_put(f, str(m, "subtask_id"), 0);
		fputs("</td><td>", f);
		put_state(f, str(m, "state"));
		fprintf(f, "</td><td>%lld</td><td>%lld</td></tr>\n",
			(long long)json_integer_value(json_object_get(m, "round")),
			(long long)json_integer_value(json_object_get(m, "rejects")));
	}
	fputs("</table></div>\n<h2>Timeline</h2>\n", f);
	task_svg(f, log);
	/* The status entries by msg_id, for the ACK of each message. */
	byid = json_object();
	json_array_foreach(json_object_get(t, "messages"), i, m)
		if (str(m, "msg_id"))
			json_object_set(byid, str(m, "msg_id"), (json_t *)m);
	fputs("<h2>Conversation</h2>\n<ol class=\"tl\">\n", f);
	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *type = str(e->doc, "type");
		int rejected = e->kind == AMP_ENTRY_MSG && type && !strcmp(type, "review_verdict") &&
			       str(json_object_get(e->doc, "payload"), "decision") &&
			       !strcmp(str(json_object_get(e->doc, "payload"), "decision"), "rejected");

		fprintf(f, "<li id=\"r%d\" class=\"%s%s\"><p class=\"meta\">#%d ", e->seq,
			e->kind == AMP_ENTRY_ACK ? "k-ack" : e->kind == AMP_ENTRY_CTL ? "k-ctl" :
			type && !strcmp(type, "escalation") ? "k-escalation" : "k-msg",
			rejected ? " rejected" : "", e->seq);
		amp_html_put(f, str(e->doc, "timestamp"), 0);
		fputs("</p><p><span class=\"who\">", f);
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
			if (rejected)
				fprintf(f, " <span class=\"overdue\">reject #%d</span>", ++rejects);
			fputs("</p>\n", f);
			put_gist(f, e->doc);
			put_ack(f, json_object_get(byid, e->id));
		}
		put_json(f, e->doc);
		fputs("</li>\n", f);
	}
	json_decref(byid);
	for (i = 0; i < log->nbad; i++) {
		fprintf(f, "<li class=\"k-bad\"><p><b class=\"overdue\">unreadable record</b> #%d ",
			log->bad[i].seq);
		amp_html_put(f, log->bad[i].name, 0);
		fputs(": ", f);
		amp_html_put(f, log->bad[i].reason, 0);
		fputs("</p></li>\n", f);
	}
	for (i = 0; i < log->nsuperseded; i++) {
		fprintf(f, "<li class=\"k-ack\"><p><b>superseded</b> #%d ", log->superseded[i].seq);
		amp_html_put(f, log->superseded[i].id, 0);
		fputs("</p>", f);
		put_json(f, log->superseded[i].doc);
		fputs("</li>\n", f);
	}
	fputs("</ol>\n", f);
	page_tail(f);
}

/* The task's row of the overview: what index.html needs, without reading
 * the task again while its records stay the same. */
static json_t *task_row(const amp_task_log *log, const json_t *t, const char *page)
{
	json_t *row = json_object(), *subs = json_array(), *dl = json_array(), *hours = json_object(),
	       *open = json_array(), *m;
	const json_t *esc = NULL;
	size_t i;
	int64_t last = -1, ms;
	int nesc = 0;

	json_array_foreach(json_object_get(t, "subtasks"), i, m)
		json_array_append_new(subs, json_pack("[s?s?]", str(m, "subtask_id"), str(m, "state")));
	json_array_foreach(json_object_get(t, "messages"), i, m) {
		const char *state = str(m, "ack_state");

		if (state && (!strcmp(state, "pending") || !strcmp(state, "overdue")) &&
		    str(m, "ack_deadline") && amp_time_parse(str(m, "ack_deadline"), &ms) == 0)
			json_array_append_new(dl, json_integer(ms));
	}
	json_array_foreach(json_object_get(t, "escalations"), i, m)
		if (str(t, "suspended_by") && str(m, "msg_id") &&
		    !strcmp(str(m, "msg_id"), str(t, "suspended_by")))
			esc = m;
	/* Messages per hour, and how long each critical escalation stayed
	 * open: until a resume or an abort after it. */
	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *type = str(e->doc, "type");
		char key[24];
		size_t j;
		json_t *iv;

		if ((ms = amp_record_time(e->doc)) < 0)
			continue;
		if (ms > last)
			last = ms;
		if (e->kind == AMP_ENTRY_CTL && type &&
		    (!strcmp(type, "resume") || !strcmp(type, "abort"))) {
			json_array_foreach(open, j, iv)
				if (json_integer_value(json_array_get(iv, 1)) < 0)
					json_array_set_new(iv, 1, json_integer(ms));
		}
		if (e->kind != AMP_ENTRY_MSG)
			continue;
		snprintf(key, sizeof(key), "%lld", (long long)(ms / HOUR_MS));
		json_object_set_new(hours, key, json_integer(json_integer_value(json_object_get(hours, key)) + 1));
		if (type && !strcmp(type, "escalation")) {
			const char *sev = str(json_object_get(e->doc, "payload"), "severity");

			nesc++;
			if (sev && !strcmp(sev, "critical"))
				json_array_append_new(open, json_pack("[I,I]", (json_int_t)ms, (json_int_t)-1));
		}
	}
	json_object_set_new(row, "task_id", json_string(log->task_id));
	json_object_set_new(row, "page", json_string(page));
	json_object_set(row, "state", json_object_get(t, "state"));
	json_object_set(row, "reject_count", json_object_get(t, "reject_count"));
	json_object_set_new(row, "messages", json_integer((json_int_t)json_array_size(json_object_get(t, "messages"))));
	json_object_set_new(row, "escalations", json_integer(nesc));
	json_object_set_new(row, "unreadable", json_integer((json_int_t)log->nbad));
	json_object_set_new(row, "subtasks", subs);
	json_object_set_new(row, "deadlines", dl);
	json_object_set_new(row, "hours", hours);
	json_object_set_new(row, "open", open);
	json_object_set_new(row, "last_ms", json_integer(last));
	json_object_set(row, "awaiting_approval", json_object_get(t, "awaiting_approval"));
	json_object_set(row, "suspended_by", json_object_get(t, "suspended_by"));
	if (esc)
		json_object_set_new(row, "suspension", json_pack("{s:O,s:O,s:O}",
			"escalation_type", json_object_get(esc, "escalation_type"),
			"severity", json_object_get(esc, "severity"),
			"description", json_object_get(esc, "description")));
	return row;
}

/* ---- the overview ----------------------------------------------------------- */

/*
 * The aggregate the overview is drawn from ("agg" in the top state).  It is
 * updated from the shards that changed -- their old rows out (agg_rows with
 * sign -1), their new rows in (+1) -- and never recomputed from every shard
 * while the history only grows:
 *   "h1"         the hour of the newest record (-1: none yet)
 *   "hours"      {hour: messages} of the CHART_HOURS hours up to h1
 *   "open"       {hour: intervals starting - intervals ending} of the
 *                critical escalations' open intervals over those hours;
 *   "open_base"  the same summed over every older hour, so that the number
 *                open at the end of an hour is open_base plus the deltas
 *                up to it
 *   "notes"      {"<shard>/<task>": row}: the rows that may need the admin
 *                (suspended, awaiting approval, or with an ACK deadline)
 *   "recent"     the RECENT_SHOWN rows of the latest activity, newest first
 * A pass that finds it inconsistent (a history rewritten: the newest hour
 * went back, the recent list lost a row it cannot refill; a shard's state
 * not the one the aggregate was made from) rebuilds it from every shard's
 * state (agg_rebuild).
 */
static json_t *agg_new(void)
{
	return json_pack("{s:I,s:{},s:{},s:I,s:{},s:[]}", "h1", (json_int_t)-1, "hours", "open",
			 "open_base", (json_int_t)0, "notes", "recent");
}

/* An aggregate of the shape agg_new makes (a state file is data on disk:
 * one edited or cut short is not trusted). */
static int agg_valid(const json_t *agg)
{
	return json_is_integer(json_object_get(agg, "h1")) && json_is_object(json_object_get(agg, "hours")) &&
	       json_is_object(json_object_get(agg, "open")) &&
	       json_is_integer(json_object_get(agg, "open_base")) &&
	       json_is_object(json_object_get(agg, "notes")) && json_is_array(json_object_get(agg, "recent"));
}

static long long ival(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

/* A shard's summary in the top state (shard_summary): its tree (NULL when
 * none), its numbers. */
enum { SUM_COUNT = 1, SUM_PAGES, SUM_LAST };

static const char *sum_tree(const json_t *sum)
{
	return json_string_value(json_array_get(sum, 0));
}

static long long sum_int(const json_t *sum, size_t i)
{
	return (long long)json_integer_value(json_array_get(sum, i));
}

/* obj[key] += by, the member gone at 0. */
static void bump(json_t *obj, const char *key, long long by)
{
	long long v = ival(obj, key) + by;

	if (v)
		json_object_set_new(obj, key, json_integer(v));
	else
		json_object_del(obj, key);
}

/* agg[field][hour] += by for an hour of the chart; an older one counts in
 * open_base for "open", not at all for "hours". */
static void agg_bump_hour(json_t *agg, const char *field, long long hour, long long by)
{
	char key[24];

	if (hour < ival(agg, "h1") - CHART_HOURS + 1) {
		if (!strcmp(field, "open"))
			json_object_set_new(agg, "open_base", json_integer(ival(agg, "open_base") + by));
		return;
	}
	snprintf(key, sizeof(key), "%lld", hour);
	bump(json_object_get(agg, field), key, by);
}

/* The newest hour moves to `hour` when later: the hours that leave the
 * chart are dropped ("hours") or folded into open_base ("open"). */
static void agg_raise_h1(json_t *agg, long long hour)
{
	json_t *hours = json_object_get(agg, "hours"), *open = json_object_get(agg, "open"), *v;
	const char *k;
	void *tmp;
	long long cut = hour - CHART_HOURS + 1, base = ival(agg, "open_base");

	if (hour <= ival(agg, "h1"))
		return;
	json_object_set_new(agg, "h1", json_integer(hour));
	json_object_foreach_safe(hours, tmp, k, v)
		if (strtoll(k, NULL, 10) < cut)
			json_object_del(hours, k);
	json_object_foreach_safe(open, tmp, k, v)
		if (strtoll(k, NULL, 10) < cut) {
			base += json_integer_value(v);
			json_object_del(open, k);
		}
	json_object_set_new(agg, "open_base", json_integer(base));
}

/* The order of the recent list: latest activity first, then task id, then
 * shard (a hand-made tree may hold one name in two shards). */
static int recent_cmp(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	long long lx = ival(x, "last_ms"), ly = ival(y, "last_ms");
	int c;

	if (lx != ly)
		return lx > ly ? -1 : 1;
	if ((c = strcmp(str(x, "task_id") ? str(x, "task_id") : "", str(y, "task_id") ? str(y, "task_id") : "")))
		return c;
	return strcmp(str(x, "group") ? str(x, "group") : "", str(y, "group") ? str(y, "group") : "");
}

/* Sorts the recent list and keeps its first RECENT_SHOWN rows. */
static int agg_trim_recent(json_t *agg)
{
	json_t *recent = json_object_get(agg, "recent"), *out, **v;
	size_t n = json_array_size(recent), i;

	if (!(v = malloc((n ? n : 1) * sizeof(*v))))
		return -1;
	for (i = 0; i < n; i++)
		v[i] = json_array_get(recent, i);
	if (n) /* qsort takes no NULL, even for nothing to sort */
		qsort(v, n, sizeof(*v), recent_cmp);
	out = json_array();
	for (i = 0; i < n && i < RECENT_SHOWN; i++)
		json_array_append(out, v[i]);
	free(v);
	return json_object_set_new(agg, "recent", out);
}

/* The row may need the admin: suspended (locked too), awaiting approval,
 * or with an open ACK deadline (overdue or not: that depends on the time of
 * the pass). */
static int may_need(const json_t *row)
{
	return str(row, "suspended_by") || str(row, "awaiting_approval") ||
	       json_array_size(json_object_get(row, "deadlines"));
}

/* Adds (sign 1) or takes out (sign -1) the rows of shard `shard` from the
 * aggregate; the recent list is sorted and trimmed by agg_trim_recent. */
static void agg_rows(json_t *agg, const char *shard, const json_t *rows, int sign)
{
	json_t *notes = json_object_get(agg, "notes"), *recent = json_object_get(agg, "recent"), *v;
	const json_t *row, *iv;
	const char *k;
	char key[1024];
	size_t i, j;

	json_array_foreach(rows, i, row) {
		if (sign > 0 && ival(row, "last_ms") >= 0)
			agg_raise_h1(agg, ival(row, "last_ms") / HOUR_MS);
		json_object_foreach((json_t *)json_object_get(row, "hours"), k, v)
			agg_bump_hour(agg, "hours", strtoll(k, NULL, 10), sign * (long long)json_integer_value(v));
		json_array_foreach(json_object_get(row, "open"), j, iv) {
			long long s = json_integer_value(json_array_get(iv, 0)) / HOUR_MS;
			long long e = json_integer_value(json_array_get(iv, 1));

			agg_bump_hour(agg, "open", s, sign);
			/* An end stamped before its start closes it in the
			 * hour it opened. */
			if (e >= 0)
				agg_bump_hour(agg, "open", e / HOUR_MS > s ? e / HOUR_MS : s, -sign);
		}
		snprintf(key, sizeof(key), "%s/%s", shard, str(row, "task_id") ? str(row, "task_id") : "");
		if (sign < 0)
			json_object_del(notes, key);
		else if (may_need(row))
			json_object_set(notes, key, (json_t *)row);
		if (sign > 0)
			json_array_append(recent, (json_t *)row);
	}
	if (sign < 0)
		for (i = json_array_size(recent); i-- > 0;)
			if (str(json_array_get(recent, i), "group") &&
			    !strcmp(str(json_array_get(recent, i), "group"), shard))
				json_array_remove(recent, i);
}

/* Messages per hour (bars) and open critical escalations (a step line)
 * over the CHART_HOURS hours up to the newest record, from the aggregate. */
static void overview_svg(FILE *f, const json_t *agg)
{
	long long counts[CHART_HOURS] = { 0 }, open[CHART_HOURS] = { 0 }, maxc = 1, maxo = 0,
		  h1 = ival(agg, "h1"), run = ival(agg, "open_base");
	int k;
	char a[AMP_TIME_BUFSZ], b[AMP_TIME_BUFSZ], key[24];

	if (h1 < 0)
		return;
	for (k = 0; k < CHART_HOURS; k++) {
		snprintf(key, sizeof(key), "%lld", h1 - CHART_HOURS + 1 + k);
		counts[k] = ival(json_object_get(agg, "hours"), key);
		run += ival(json_object_get(agg, "open"), key);
		open[k] = run;
		if (counts[k] > maxc)
			maxc = counts[k];
		if (open[k] > maxo)
			maxo = open[k];
	}
	fputs("<svg viewBox=\"0 0 800 200\" role=\"img\" aria-label=\"messages per hour\">\n", f);
	for (k = 0; k < CHART_HOURS; k++)
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#8fb3e8\">"
			"<title>%lld message(s), %lld open escalation(s)</title></rect>\n",
			40 + k * 15.0, 170 - 150.0 * (double)counts[k] / (double)maxc, 13.0,
			150.0 * (double)counts[k] / (double)maxc, counts[k], open[k]);
	fputs("<polyline fill=\"none\" stroke=\"#b00020\" stroke-width=\"2\" points=\"", f);
	for (k = 0; k < CHART_HOURS; k++) {
		double y = 170 - 150.0 * (double)open[k] / (double)(maxo ? maxo : 1);

		fprintf(f, "%.1f,%.1f %.1f,%.1f ", 40 + k * 15.0, y, 55 + k * 15.0, y);
	}
	fprintf(f, "\"/>\n<text x=\"2\" y=\"24\">%lld</text><text x=\"2\" y=\"170\">0</text>"
		"<text x=\"40\" y=\"192\">%s</text><text x=\"760\" y=\"192\" text-anchor=\"end\">%s</text>"
		"<text x=\"760\" y=\"14\" text-anchor=\"end\" fill=\"#b00020\">open escalations (max %lld)</text>"
		"\n</svg>\n", maxc, amp_time_format((h1 - CHART_HOURS + 1) * HOUR_MS, a),
		amp_time_format((h1 + 1) * HOUR_MS, b), maxo);
}

/* The task's name, linked to its page under `up`tasks/ (or the reason it
 * has none). */
static void task_link(FILE *f, const json_t *row, const char *up)
{
	if (!str(row, "page")) {
		amp_html_put(f, str(row, "task_id"), 0);
		fputs(" <span class=\"overdue\">", f);
		amp_html_put(f, str(row, "reason"), 0);
		fputs("</span>", f);
		return;
	}
	fprintf(f, "<a href=\"%stasks/", up);
	amp_html_put(f, str(row, "page"), 0);
	fputs("\">", f);
	amp_html_put(f, str(row, "task_id"), 0);
	fputs("</a>", f);
}

/* The overdue ACKs of row at now_ms; 1 when the row needs the admin
 * (suspended, locked, awaiting approval, or with an overdue ACK). */
static int needs_admin(const json_t *row, int64_t now_ms, size_t *overdue)
{
	const json_t *d;
	size_t j;

	*overdue = 0;
	json_array_foreach(json_object_get(row, "deadlines"), j, d)
		if (now_ms > (int64_t)json_integer_value(d))
			(*overdue)++;
	return str(row, "suspended_by") || str(row, "awaiting_approval") || *overdue;
}

/* How urgent a row needing the admin is: suspended (or locked) first, then
 * awaiting approval, then overdue ACKs. */
static int urgency(const json_t *row)
{
	return str(row, "suspended_by") ? 0 : str(row, "awaiting_approval") ? 1 : 2;
}

static int needs_cmp(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;

	if (urgency(x) != urgency(y))
		return urgency(x) - urgency(y);
	return recent_cmp(a, b);
}

/* The rows of the aggregate's notes that need the admin at now_ms, most
 * urgent first, into *out (the caller frees; borrowed rows); -1 when out
 * of memory. */
static int needs_list(const json_t *agg, int64_t now_ms, const json_t ***out, size_t *count)
{
	const json_t *notes = json_object_get(agg, "notes"), **v;
	json_t *row;
	const char *k;
	size_t n = 0, overdue;

	*out = NULL;
	*count = 0;
	if (!(v = malloc((json_object_size(notes) + 1) * sizeof(*v))))
		return -1;
	json_object_foreach((json_t *)notes, k, row)
		if (needs_admin(row, now_ms, &overdue))
			v[n++] = row;
	qsort(v, n, sizeof(*v), needs_cmp);
	*out = v;
	*count = n;
	return 0;
}

/* The first `limit` of the rows needing the admin, as boxes. */
static void render_needs(FILE *f, const json_t **rows, size_t n, size_t limit, int64_t now_ms)
{
	size_t i, overdue;

	for (i = 0; i < n && i < limit; i++) {
		const json_t *row = rows[i];

		needs_admin(row, now_ms, &overdue);
		fputs("<div class=\"needs\"><p>", f);
		task_link(f, row, "");
		fputs(" ", f);
		put_state(f, str(row, "state"));
		if (str(row, "suspended_by")) {
			fputs(" suspended by ", f);
			put_escalation(f, json_object_get(row, "suspension"), str(row, "suspended_by"));
		}
		if (str(row, "awaiting_approval")) {
			fputs(" awaiting approval of ", f);
			amp_html_put(f, str(row, "awaiting_approval"), 0);
		}
		if (overdue)
			fprintf(f, " <span class=\"overdue\">%zu ACK(s) overdue</span>", overdue);
		fputs("</p></div>\n", f);
	}
	if (!n)
		fputs("<p>Nothing: no task is suspended, locked, awaiting approval or overdue.</p>\n", f);
}

/* A table of task rows (a group page, the overview's recent tasks), task
 * links under `up`.  They do not depend on the time (deadlines are dates). */
static void render_rows(FILE *f, const char *table_id, const json_t *rows, const char *up)
{
	const json_t *row, *d, *s;
	size_t i, j;

	fprintf(f, "<div class=\"wrap\"><table id=\"%s\"><tr><th>task</th><th>state</th>"
		"<th>subtasks</th><th>rejects</th><th>ACK deadlines</th><th class=\"hide-s\">messages</th>"
		"<th class=\"hide-s\">escalations</th><th class=\"hide-s\">last activity</th></tr>\n", table_id);
	json_array_foreach(rows, i, row) {
		size_t open = 0;
		int64_t next = -1;

		json_array_foreach(json_object_get(row, "deadlines"), j, d) {
			open++;
			if (next < 0 || (int64_t)json_integer_value(d) < next)
				next = json_integer_value(d);
		}
		fputs("<tr class=\"task\"><td>", f);
		task_link(f, row, up);
		fputs("</td><td>", f);
		put_state(f, str(row, "state"));
		fputs("</td><td>", f);
		json_array_foreach(json_object_get(row, "subtasks"), j, s) {
			amp_html_put(f, json_string_value(json_array_get(s, 0)), 0);
			fputs(" ", f);
			put_state(f, json_string_value(json_array_get(s, 1)));
			fputs("<br>", f);
		}
		fprintf(f, "</td><td>%lld</td><td>", ival(row, "reject_count"));
		if (open) {
			fprintf(f, "%zu open, next ", open);
			put_time(f, next);
		} else {
			fputs("-", f);
		}
		fprintf(f, "</td><td class=\"hide-s\">%lld%s</td><td class=\"hide-s\">%lld</td><td class=\"hide-s\">",
			ival(row, "messages"), ival(row, "unreadable") ? " (unreadable records)" : "",
			ival(row, "escalations"));
		put_time(f, ival(row, "last_ms"));
		fputs("</td></tr>\n", f);
	}
	fputs("</table></div>\n", f);
}

/* The file name (under groups/) of the page of shard `key` ("2026/0"):
 * "2026-0.html" when both parts are digits (no two such keys give one
 * name: neither part holds a "-"), else a name made as for a task
 * directory that is no task id ("x-..."), which no digits-only one can
 * equal. */
static void group_name(const char *key, char buf[AMP_DASHBOARD_NAME_MAX])
{
	const char *slash = strchr(key, '/'), *p;
	int plain = slash && slash != key && slash[1] && strlen(key) < 40 && !strchr(slash + 1, '/');

	for (p = key; plain && *p; p++)
		if (p != slash && (*p < '0' || *p > '9'))
			plain = 0;
	if (!plain) {
		amp_dashboard_page_name(key, buf);
		return;
	}
	snprintf(buf, AMP_DASHBOARD_NAME_MAX, "%.*s-%s.html", (int)(slash - key), key, slash + 1);
}

/* The overview: what needs the admin (NEEDS_SHOWN at most, the rest on
 * needs.html), the charts, the RECENT_SHOWN most recently active tasks and
 * a link to each shard's group page -- no list of every task, so that its
 * size does not grow with the history. */
static void render_index(FILE *f, const json_t *agg, const json_t **needs, size_t nneeds,
			 const struct shard *shards, size_t nshards, const json_t *byname,
			 int64_t now_ms, const char *tip, long long ntasks)
{
	char name[AMP_DASHBOARD_NAME_MAX];
	size_t i;

	page_head(f, "amp dashboard", "");
	fprintf(f, "<p class=\"meta\">SSOT tip %s &middot; %lld task(s) in %zu group(s)</p>\n", tip,
		ntasks, nshards);
	fputs("<h2>Needs the admin</h2>\n", f);
	render_needs(f, needs, nneeds, NEEDS_SHOWN, now_ms);
	if (nneeds > NEEDS_SHOWN)
		fprintf(f, "<p><a href=\"needs.html\">All %zu tasks needing the admin</a></p>\n", nneeds);
	fputs("<h2>Messages per hour, open escalations</h2>\n", f);
	overview_svg(f, agg);
	fprintf(f, "<h2>Recently active</h2>\n<p class=\"meta\">The %d tasks with the latest records; "
		"every task is on its group's page below.</p>\n", RECENT_SHOWN);
	render_rows(f, "recent", json_object_get(agg, "recent"), "");
	fputs("<h2>Task groups</h2>\n<div class=\"wrap\"><table id=\"groups\"><tr><th>group</th>"
	      "<th>tasks</th><th>last activity</th></tr>\n", f);
	for (i = 0; i < nshards; i++) {
		const json_t *sum = json_object_get(byname, shards[i].key);

		group_name(shards[i].key, name);
		fputs("<tr class=\"group\"><td><a href=\"groups/", f);
		amp_html_put(f, name, 0);
		fputs("\">tasks/", f);
		amp_html_put(f, shards[i].key, 0);
		fprintf(f, "/</a></td><td>%lld</td><td>", sum_int(sum, SUM_COUNT));
		put_time(f, sum_int(sum, SUM_LAST));
		fputs("</td></tr>\n", f);
	}
	fputs("</table></div>\n", f);
	page_tail(f);
}

/* needs.html: every task needing the admin. */
static void render_needs_page(FILE *f, const json_t **needs, size_t nneeds, int64_t now_ms)
{
	page_head(f, "amp dashboard: needs the admin", "");
	fprintf(f, "<p class=\"meta\">%zu task(s)</p>\n", nneeds);
	render_needs(f, needs, nneeds, nneeds, now_ms);
	page_tail(f);
}

/* ---- the error log ------------------------------------------------------------ */

/* Each rejection is a directory errors/<YYYY>/<MM>/<DD>/<id>/ (store.h):
 * walking the tree in reverse name order lists them newest first, and
 * stops after `left` of them. */
static int errors_walk(git_repository *repo, git_tree *tree, int depth, FILE *f, int *left)
{
	size_t n = git_tree_entrycount(tree), i;
	int status = 0;

	for (i = n; i-- > 0 && *left > 0;) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		git_tree *sub = NULL;

		if (git_tree_entry_type(e) != GIT_OBJECT_TREE ||
		    git_tree_lookup(&sub, repo, git_tree_entry_id(e)) < 0)
			continue;
		if (depth < 3) { /* <YYYY>/<MM>/<DD>/ */
			status = errors_walk(repo, sub, depth + 1, f, left);
		} else {
			const git_tree_entry *r = git_tree_entry_byname(sub, "reasons.json");
			git_blob *blob = NULL;
			json_t *doc = NULL, *x;
			size_t j;

			if (r && git_blob_lookup(&blob, repo, git_tree_entry_id(r)) == 0)
				doc = json_loadb(git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob), 0, NULL);
			fputs("<tr><td>", f);
			amp_html_put(f, str(doc, "time"), 0);
			fputs("</td><td>", f);
			amp_html_put(f, str(doc, "command"), 0);
			fputs("</td><td>", f);
			amp_html_put(f, str(doc, "msg_id") ? str(doc, "msg_id") : "(no msg_id)", 0);
			fprintf(f, "</td><td>%lld</td><td>", (long long)json_integer_value(json_object_get(doc, "exit_code")));
			json_array_foreach(json_object_get(doc, "errors"), j, x) {
				amp_html_put(f, str(x, "path"), 0);
				fputs(str(x, "path") && *str(x, "path") ? ": " : "", f);
				amp_html_put(f, str(x, "message"), 0);
				fputs("<br>", f);
			}
			if (!doc)
				fputs("(reasons.json unreadable)", f);
			fputs("</td><td class=\"hide-s\">", f);
			amp_html_put(f, git_tree_entry_name(e), 0);
			fputs("</td></tr>\n", f);
			json_decref(doc);
			git_blob_free(blob);
			(*left)--;
		}
		git_tree_free(sub);
		if (status < 0)
			break;
	}
	return status;
}

static int render_errors(amp_store *st, FILE *f, amp_error *err)
{
	git_tree *tree = NULL, *sub = NULL;
	git_tree_entry *e = NULL;
	int left = ERRORS_SHOWN, status = AMP_OK;

	if (amp_store_tip(st, amp_store_errors_ref(st), NULL, &tree, err) < 0)
		return AMP_EIO;
	page_head(f, "amp dashboard: error log", "");
	fprintf(f, "<p>Messages the SSOT refused, newest first (at most %d; <code>amp errors</code> "
		"lists all, <code>amp errors --raw &lt;id&gt;</code> shows one as sent).</p>\n"
		"<div class=\"wrap\"><table id=\"errors\"><tr><th>time</th><th>command</th><th>msg_id</th>"
		"<th>exit</th><th>reasons</th><th class=\"hide-s\">id</th></tr>\n", ERRORS_SHOWN);
	if (git_tree_entry_bypath(&e, tree, "errors") == 0 &&
	    git_tree_lookup(&sub, amp_store_repo(st), git_tree_entry_id(e)) == 0)
		errors_walk(amp_store_repo(st), sub, 0, f, &left);
	git_error_clear();
	fputs("</table></div>\n", f);
	if (left == ERRORS_SHOWN)
		fputs("<p>No rejected messages.</p>\n", f);
	page_tail(f);
	git_tree_entry_free(e);
	git_tree_free(sub);
	git_tree_free(tree);
	return status;
}

/* ---- one pass --------------------------------------------------------------------- */

static void policy_key(amp_store *st, char *buf, size_t bufsz)
{
	const amp_policy *p = amp_store_policy(st);

	/* The build (cache.h): another may derive rows or pages otherwise. */
	snprintf(buf, bufsz, "%d %s %d %u %lld", PAGE_FORMAT, amp_build_id(), p->lock_threshold,
		 p->approval_levels, (long long)p->max_clock_skew_ms);
}

/* The hex id of a ref's tip commit into buf ("" when it has none). */
static void tip_hex(amp_store *st, const char *ref, char *buf, size_t bufsz)
{
	git_oid oid;

	buf[0] = 0;
	if (git_reference_name_to_id(&oid, amp_store_repo(st), ref) == 0)
		git_oid_tostr(buf, bufsz, &oid);
	git_error_clear();
}

/* The page and row of one task whose records changed.  AMP_NOOP (err
 * filled) when the task's records cannot be read: one unreadable task
 * directory (or a name in the tree that is no task id) hides that task
 * only. */
static int build_task(struct gen *g, git_tree *root, const char *task, const char *page,
		      int64_t now_ms, json_t **row, amp_error *err)
{
	amp_task_log log;
	struct page p;
	json_t *t = NULL;
	char rel[AMP_DASHBOARD_NAME_MAX + 8];
	int status;

	if (amp_store_read_task(g->st, root, task, &log, err) < 0)
		return AMP_NOOP;
	if (!(t = amp_task_status_json(&log, now_ms))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if ((status = page_open(&p, err)) < 0)
		goto cleanup;
	render_task(p.f, &log, t);
	snprintf(rel, sizeof(rel), "tasks/%s", page);
	if ((status = page_finish(g, &p, rel, 0, err)) < 0)
		goto cleanup;
	*row = task_row(&log, t, page);
cleanup:
	json_decref(t);
	amp_task_log_free(&log);
	return status;
}

/* mkdir -p path. */
static int ensure_dir(const char *path, amp_error *err)
{
	char buf[PATH_MAX];
	size_t i;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
		return amp_error_set(err, AMP_EIO, "", "%s: path too long", path);
	for (i = 1; buf[i]; i++) {
		if (buf[i] != '/')
			continue;
		buf[i] = 0;
		if (mkdir(buf, 0777) < 0 && errno != EEXIST)
			return amp_error_set(err, AMP_EIO, "", "cannot create %s: %s", buf, strerror(errno));
		buf[i] = '/';
	}
	if (mkdir(buf, 0777) < 0 && errno != EEXIST)
		return amp_error_set(err, AMP_EIO, "", "cannot create %s: %s", buf, strerror(errno));
	return AMP_OK;
}

/* What the top state keeps of a shard: [its tree, its task count, its task
 * pages, its newest record] (an array: the top state holds one per shard,
 * read on every pass). */
static json_t *shard_summary(const json_t *rows, const char *tree)
{
	const json_t *row;
	json_int_t last = -1;
	size_t i, pages = 0;

	json_array_foreach(rows, i, row) {
		pages += str(row, "page") != NULL;
		if (ival(row, "last_ms") > last)
			last = ival(row, "last_ms");
	}
	return json_pack("[s,i,i,I]", tree, (int)json_array_size(rows), (int)pages, last);
}

/* The file a shard's state goes to: <dir>/.amp-dashboard/<name>.json (its
 * tree, its tasks' trees and rows), the name made from the shard's key
 * ("2026/0") as a page name is, since the key comes from the tree. */
static void shard_path(const struct gen *g, const char *key, char *buf, size_t bufsz)
{
	char name[AMP_DASHBOARD_NAME_MAX];

	amp_dashboard_page_name(key, name);
	name[strlen(name) - 5] = 0; /* ".html" */
	snprintf(buf, bufsz, "%s/%s/%s.json", g->dir, STATE_DIR, name);
}

/* The rows of a shard state (its "tasks"), as an array (the caller
 * decrefs). */
static json_t *state_rows(const json_t *state)
{
	json_t *rows = json_array(), *v;
	const char *k;

	json_object_foreach((json_t *)json_object_get(state, "tasks"), k, v)
		json_array_append(rows, json_object_get(v, "row"));
	return rows;
}

/* Takes the rows of shard state `state` out of the aggregate when it is
 * the state the aggregate was made from (its tree is `tree`); returns 0,
 * or -1 when it is not (missing, or written by a pass that did not finish),
 * and the aggregate must be rebuilt. */
static int agg_take_out(json_t *agg, const char *key, const json_t *state, const char *tree)
{
	json_t *rows;

	if (!state || !str(state, "tree") || !tree || strcmp(str(state, "tree"), tree))
		return -1;
	rows = state_rows(state);
	agg_rows(agg, key, rows, -1);
	json_decref(rows);
	return 0;
}

/* Writes data to path (absolute) through a temporary file and a rename. */
static int write_state(const char *path, const char *data, size_t len, amp_error *err)
{
	if (amp_tempfile_write_file(path, data, len, 0) < 0) {
		amp_error_set(err, AMP_EIO, "", "cannot write %s: %s", path, strerror(errno));
		return AMP_EIO;
	}
	return AMP_OK;
}

/* Deletes the pages of the tasks of shard state `tasks` that `keep` (may
 * be NULL) does not hold: tasks gone from the SSOT (history rewritten). */
static void drop_pages(const struct gen *g, const json_t *tasks, const json_t *keep)
{
	const char *k, *page;
	json_t *v;
	char path[PATH_MAX];

	json_object_foreach((json_t *)tasks, k, v) {
		if (keep && json_object_get(keep, k))
			continue;
		page = str(json_object_get(v, "row"), "page");
		if (page && !strchr(page, '/') && page[0] != '.') {
			snprintf(path, sizeof(path), "%s/tasks/%s", g->dir, page);
			unlink(path);
		}
	}
}

/*
 * Brings one shard (tasks/<YYYY>/<S>/, tree `shard`) up to date: each task
 * whose tree differs from the shard state's gets its page and row anew,
 * the others keep theirs; then the shard's group page and its state are
 * written, and the aggregate gets its new rows for its old ones (`was`:
 * the shard's tree the aggregate was made from, NULL for none; *stale set
 * when the old rows are not those).  The summary for the top state goes to
 * *summary.
 */
static int do_shard(struct gen *g, git_tree *root, git_tree *shard, const char *key, int trust,
		    const char *was, json_t *agg, int *stale, int64_t now_ms, json_t **summary,
		    size_t *unchanged, amp_error *err)
{
	char path[PATH_MAX], hex[GIT_OID_HEXSZ + 1], page[AMP_DASHBOARD_NAME_MAX],
	     rel[AMP_DASHBOARD_NAME_MAX + 8];
	json_t *old = NULL, *tasks = json_object(), *rows = json_array(), *state = NULL;
	const json_t *old_tasks = NULL;
	struct page p = { NULL, NULL, 0 };
	char *dump = NULL;
	size_t i, n = git_tree_entrycount(shard), skipped = amp_store_skipped(g->st)->count;
	int status = AMP_OK;

	shard_path(g, key, path, sizeof(path));
	if (trust && (old = amp_cache_json(g->st, path)))
		old_tasks = json_object_get(old, "tasks");
	for (i = 0; i < n; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(shard, i);
		const char *task = git_tree_entry_name(e);
		const json_t *hit = json_object_get(old_tasks, task);
		json_t *row = NULL;
		struct stat sb;
		char pagepath[PATH_MAX];

		if (!amp_store_task_in_place(g->st, key, e))
			continue;
		git_oid_tostr(hex, sizeof(hex), git_tree_entry_id(e));
		amp_dashboard_page_name(task, page);
		snprintf(pagepath, sizeof(pagepath), "%s/tasks/%s", g->dir, page);
		if (hit && str(hit, "tree") && !strcmp(str(hit, "tree"), hex) &&
		    json_is_object(json_object_get(hit, "row")) && stat(pagepath, &sb) == 0) {
			row = json_incref(json_object_get(hit, "row"));
			(*unchanged)++;
		} else if ((status = build_task(g, root, task, page, now_ms, &row, err)) < 0) {
			goto cleanup;
		} else if (status == AMP_NOOP) {
			/* No page: the row says why, and the next pass tries
			 * again. */
			row = json_pack("{s:s,s:n,s:s,s:s,s:[],s:[],s:{},s:[],s:I}", "task_id", task,
					"page", "state", "unreadable", "reason", err->message,
					"subtasks", "deadlines", "hours", "open", "last_ms", (json_int_t)-1);
			hex[0] = 0;
			status = AMP_OK;
		}
		if (!row) {
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
			goto cleanup;
		}
		/* The row knows its shard: the aggregate takes a shard's rows
		 * out by it. */
		json_object_set_new(row, "group", json_string(key));
		json_array_append(rows, row);
		json_object_set_new(tasks, task, json_pack("{s:s,s:o}", "tree", hex, "row", row));
	}
	drop_pages(g, old_tasks, tasks);
	if (was && agg_take_out(agg, key, old, was) < 0)
		*stale = 1;
	agg_rows(agg, key, rows, 1);
	/* A pass without a state takes no rows out: the recent list can be
	 * cut to its first rows as it goes, instead of holding every task's
	 * row to the end (at 25,000 tasks a first pass peaked at 127 MB for
	 * it, 52 MB without). */
	if (!trust && agg_trim_recent(agg) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if ((status = page_open(&p, err)) < 0)
		goto cleanup;
	/* The shard's directory, shown: a key of any length fits. */
	{
		char where[700];

		snprintf(where, sizeof(where), "tasks/%.600s/", key);
		page_head(p.f, where, "../");
		fprintf(p.f, "<p class=\"meta\">%zu task(s) of the SSOT's directory ",
			json_array_size(rows));
		amp_html_put(p.f, where, 0);
		fputs("</p>\n", p.f);
	}
	render_rows(p.f, "tasks", rows, "../");
	page_tail(p.f);
	group_name(key, page);
	snprintf(rel, sizeof(rel), "groups/%s", page);
	if ((status = page_finish(g, &p, rel, 1, err)) < 0)
		goto cleanup;
	git_oid_tostr(hex, sizeof(hex), git_tree_id(shard));
	state = json_pack("{s:s,s:O}", "tree", hex, "tasks", tasks);
	if (!state || !(dump = json_dumps(state, JSON_COMPACT))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	shard_path(g, key, path, sizeof(path));
	if ((status = write_state(path, dump, strlen(dump), err)) < 0)
		goto cleanup;
	/* A shard with something skipped is read again on the next pass,
	 * which reports it again (no tree in its summary). */
	if (!(*summary = shard_summary(rows, amp_store_skipped(g->st)->count > skipped ? "" : hex)))
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
cleanup:
	free(dump);
	json_decref(state);
	json_decref(old);
	json_decref(tasks);
	json_decref(rows);
	return status;
}

static long long number(const char *s)
{
	char *end;
	long long v;

	if (!*s || strlen(s) > 12)
		return -1;
	v = strtoll(s, &end, 10);
	return *end ? -1 : v;
}

/* The overview lists shards in their numbers' order ("2" before "10"). */
static int shard_cmp(const void *a, const void *b)
{
	const struct shard *x = a, *y = b;

	if (x->year != y->year)
		return x->year < y->year ? -1 : 1;
	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* Every shard of the tip's task tree into *out (the caller frees). */
static int list_shards(git_repository *repo, git_tree *root, struct shard **out, size_t *count,
		       amp_error *err)
{
	git_tree_entry *te = NULL;
	git_tree *tasks = NULL, *year = NULL;
	struct shard *v = NULL, *nv;
	size_t n = 0, i, j;
	int status = AMP_OK;

	*out = NULL;
	*count = 0;
	if (git_tree_entry_bypath(&te, root, "tasks") < 0) {
		git_error_clear();
		return AMP_OK; /* no task yet */
	}
	if (git_tree_lookup(&tasks, repo, git_tree_entry_id(te)) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read the tree tasks/");
		goto cleanup;
	}
	for (i = 0; i < git_tree_entrycount(tasks); i++) {
		const git_tree_entry *ye = git_tree_entry_byindex(tasks, i);

		if (git_tree_entry_type(ye) != GIT_OBJECT_TREE)
			continue;
		if (git_tree_lookup(&year, repo, git_tree_entry_id(ye)) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot read the tree tasks/%s",
					       amp_term(git_tree_entry_name(ye)));
			goto cleanup;
		}
		for (j = 0; j < git_tree_entrycount(year); j++) {
			const git_tree_entry *se = git_tree_entry_byindex(year, j);

			if (git_tree_entry_type(se) != GIT_OBJECT_TREE)
				continue;
			if (!(nv = realloc(v, (n + 1) * sizeof(*v)))) {
				status = amp_error_set(err, AMP_EIO, "", "out of memory");
				goto cleanup;
			}
			v = nv;
			snprintf(v[n].key, sizeof(v[n].key), "%s/%s", git_tree_entry_name(ye),
				 git_tree_entry_name(se));
			v[n].year = number(git_tree_entry_name(ye));
			v[n].s = number(git_tree_entry_name(se));
			git_oid_cpy(&v[n].id, git_tree_entry_id(se));
			n++;
		}
		git_tree_free(year);
		year = NULL;
	}
	if (n) /* qsort takes no NULL, even for nothing to sort */
		qsort(v, n, sizeof(*v), shard_cmp);
	*out = v;
	*count = n;
	v = NULL;
cleanup:
	free(v);
	git_tree_free(year);
	git_tree_free(tasks);
	git_tree_entry_free(te);
	return status;
}

/* The aggregate anew from every shard's state, for when the one kept could
 * not follow (agg above).  AMP_NOOP when a shard's state is missing: the
 * pass must then start over without trusting any state. */
static int agg_rebuild(const struct gen *g, const struct shard *shards, size_t nshards,
		       json_t **agg)
{
	char path[PATH_MAX];
	json_t *state, *rows;
	size_t i;

	json_decref(*agg);
	*agg = agg_new();
	for (i = 0; i < nshards; i++) {
		shard_path(g, shards[i].key, path, sizeof(path));
		if (!(state = amp_cache_json(g->st, path)))
			return AMP_NOOP;
		rows = state_rows(state);
		agg_rows(*agg, shards[i].key, rows, 1);
		json_decref(rows);
		json_decref(state);
		/* Only rows added: the list is cut as it goes (do_shard). */
		if (agg_trim_recent(*agg) < 0)
			return AMP_EIO;
	}
	return agg_trim_recent(*agg) < 0 ? AMP_EIO : AMP_OK;
}

/* The recent list still holds the RECENT_SHOWN latest rows of all: it had
 * fewer (so it held every row, and the changed shards' rows are all back
 * in), or its last row ranks no lower than the old last row, which ranked
 * before every row it left out. */
static int recent_valid(const json_t *agg, const json_t *old_last)
{
	const json_t *recent = json_object_get(agg, "recent");
	const json_t *last = json_array_get(recent, json_array_size(recent) - 1);

	if (!old_last)
		return 1;
	return json_array_size(recent) == RECENT_SHOWN && recent_cmp(&last, &old_last) <= 0;
}

/* One pass; `trust_state` 0 ignores every state (everything anew).
 * AMP_NOOP: the state turned out unusable, run again without it. */
static int write_pass(amp_store *st, const char *dir, int64_t now_ms, int trust_state,
		      json_t **report, amp_error *err)
{
	struct gen g = { st, dir, json_array() };
	git_repository *repo = amp_store_repo(st);
	git_tree *root = NULL, *shard = NULL;
	git_commit *commit = NULL;
	git_odb *odb = NULL;
	struct shard *shards = NULL;
	json_t *old = NULL, *old_shards = NULL, *byname = json_object(), *state = NULL, *agg = NULL,
	       *old_last = NULL;
	const json_t **needs = NULL;
	char path[PATH_MAX], key[128], tip[GIT_OID_HEXSZ + 1], etip[GIT_OID_HEXSZ + 1],
	     hex[GIT_OID_HEXSZ + 1], *dump = NULL;
	size_t nshards = 0, i, unchanged = 0, nneeds = 0;
	long long ntasks = 0, last = -1;
	struct page p = { NULL, NULL, 0 };
	const char *k;
	json_t *v;
	int status, trust, stale = 0, dirty;

	if ((status = ensure_dir(dir, err)) < 0 ||
	    (snprintf(path, sizeof(path), "%s/tasks", dir), status = ensure_dir(path, err)) < 0 ||
	    (snprintf(path, sizeof(path), "%s/groups", dir), status = ensure_dir(path, err)) < 0 ||
	    (snprintf(path, sizeof(path), "%s/%s", dir, STATE_DIR), status = ensure_dir(path, err)) < 0)
		goto cleanup;
	policy_key(st, key, sizeof(key));
	snprintf(path, sizeof(path), "%s/%s", dir, STATE_FILE);
	/* A state of another format or policy, or none: every page anew. */
	old = trust_state ? amp_cache_json(st, path) : NULL;
	trust = old && str(old, "key") && !strcmp(str(old, "key"), key) &&
		json_is_object(json_object_get(old, "shards")) &&
		agg_valid(json_object_get(old, "agg"));
	if (trust) {
		old_shards = json_object_get(old, "shards");
		agg = json_incref(json_object_get(old, "agg"));
		if (json_array_size(json_object_get(agg, "recent")) >= RECENT_SHOWN)
			old_last = json_incref(json_array_get(json_object_get(agg, "recent"), RECENT_SHOWN - 1));
	} else {
		agg = agg_new();
	}
	if ((status = amp_store_tip(st, amp_store_messages_ref(st), &commit, &root, err)) < 0 ||
	    (status = list_shards(repo, root, &shards, &nshards, err)) < 0)
		goto cleanup;
	git_oid_tostr(tip, sizeof(tip), git_commit_id(commit));
	/* Whether the state must be written again: a new tip, a shard
	 * changed or gone, the aggregate made anew. */
	dirty = !trust || !str(old, "tip") || strcmp(str(old, "tip"), tip);
	if (git_repository_odb(&odb, repo) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot open the object database");
		goto cleanup;
	}
	for (i = 0; i < nshards; i++) {
		const json_t *hit = json_object_get(old_shards, shards[i].key);
		json_t *summary = NULL;

		git_oid_tostr(hex, sizeof(hex), &shards[i].id);
		/* The same shard tree (still in the object database: a tree
		 * gone is damage the records must show): not one of its tasks
		 * changed.  (Its files are not looked at, so that a pass costs
		 * no system call per shard: a group page deleted by hand comes
		 * back as a task page does, when the shard changes; a shard
		 * state gone makes the aggregate anew then.) */
		if (sum_tree(hit) && !strcmp(sum_tree(hit), hex) && git_odb_exists(odb, &shards[i].id)) {
			summary = json_incref((json_t *)hit);
			unchanged += (size_t)sum_int(hit, SUM_PAGES);
		} else {
			dirty = 1;
			if (git_tree_lookup(&shard, repo, &shards[i].id) < 0) {
				status = amp_error_git(err, AMP_EIO, "cannot read the tree tasks/%s",
						       amp_term(shards[i].key));
				goto cleanup;
			}
			if ((status = do_shard(&g, root, shard, shards[i].key, trust, sum_tree(hit),
					       agg, &stale, now_ms, &summary, &unchanged, err)) < 0)
				goto cleanup;
			git_tree_free(shard);
			shard = NULL;
		}
		ntasks += sum_int(summary, SUM_COUNT);
		if (sum_int(summary, SUM_LAST) > last)
			last = sum_int(summary, SUM_LAST);
		json_object_set_new(byname, shards[i].key, summary);
	}
	/* Shards gone from the SSOT (a rewritten history): their pages too. */
	json_object_foreach(old_shards, k, v) {
		json_t *gone;
		char name[AMP_DASHBOARD_NAME_MAX];

		if (json_object_get(byname, k))
			continue;
		dirty = 1;
		shard_path(&g, k, path, sizeof(path));
		gone = amp_cache_json(st, path);
		drop_pages(&g, json_object_get(gone, "tasks"), NULL);
		if (agg_take_out(agg, k, gone, sum_tree(v)) < 0)
			stale = 1;
		json_decref(gone);
		unlink(path);
		group_name(k, name);
		snprintf(path, sizeof(path), "%s/groups/%s", dir, name);
		unlink(path);
	}
	if (agg_trim_recent(agg) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	/* Records only added, the aggregate follows; one that cannot (the
	 * newest hour went back, a recent row left that another shard's row
	 * must replace) is made anew from every shard's state. */
	if (stale || ival(agg, "h1") != (last < 0 ? -1 : last / HOUR_MS) || !recent_valid(agg, old_last)) {
		dirty = 1;
		if ((status = agg_rebuild(&g, shards, nshards, &agg)) == AMP_NOOP)
			goto cleanup;
		if (status < 0) {
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
			goto cleanup;
		}
	}
	tip_hex(st, amp_store_errors_ref(st), etip, sizeof(etip));
	snprintf(path, sizeof(path), "%s/errors.html", dir);
	if (!trust || !str(old, "errors_tip") || strcmp(str(old, "errors_tip"), etip) ||
	    access(path, F_OK) != 0) {
		if ((status = page_open(&p, err)) < 0)
			goto cleanup;
		if ((status = render_errors(st, p.f, err)) < 0) {
			fclose(p.f);
			free(p.buf);
			goto cleanup;
		}
		if ((status = page_finish(&g, &p, "errors.html", 1, err)) < 0)
			goto cleanup;
	}
	if (needs_list(agg, now_ms, &needs, &nneeds) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if ((status = page_open(&p, err)) < 0)
		goto cleanup;
	render_needs_page(p.f, needs, nneeds, now_ms);
	if ((status = page_finish(&g, &p, "needs.html", 1, err)) < 0 || (status = page_open(&p, err)) < 0)
		goto cleanup;
	render_index(p.f, agg, needs, nneeds, shards, nshards, byname, now_ms, tip, ntasks);
	if ((status = page_finish(&g, &p, "index.html", 1, err)) < 0)
		goto cleanup;
	/* The state last: a pass that failed before leaves the old one,
	 * which at worst rebuilds pages that were already current. */
	dirty |= !str(old, "errors_tip") || strcmp(str(old, "errors_tip"), etip);
	if (!dirty)
		goto report;
	state = json_pack("{s:s,s:s,s:s,s:O,s:O}", "key", key, "tip", tip, "errors_tip", etip,
			  "shards", byname, "agg", agg);
	snprintf(path, sizeof(path), "%s/%s", dir, STATE_FILE);
	if (!state || !(dump = json_dumps(state, JSON_COMPACT))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if ((status = write_state(path, dump, strlen(dump), err)) < 0)
		goto cleanup;
report:
	if (report)
		*report = json_pack("{s:s,s:s,s:I,s:O,s:i}", "dir", dir, "tip", tip, "tasks",
				    (json_int_t)ntasks, "written", g.written, "unchanged", (int)unchanged);
cleanup:
	free(dump);
	free(shards);
	free(needs);
	json_decref(state);
	json_decref(old);
	json_decref(agg);
	json_decref(old_last);
	json_decref(byname);
	json_decref(g.written);
	git_odb_free(odb);
	git_tree_free(shard);
	git_tree_free(root);
	git_commit_free(commit);
	return status;
}

int amp_dashboard_write(amp_store *st, const char *dir, int64_t now_ms, json_t **report,
			amp_error *err)
{
	int status;

	if (report)
		*report = NULL;
	if ((status = write_pass(st, dir, now_ms, 1, report, err)) == AMP_NOOP)
		status = write_pass(st, dir, now_ms, 0, report, err);
	return status;
}
