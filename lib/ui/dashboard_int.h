/*
 * dashboard_int.h - what the files of the dashboard (dashboard.h) share:
 * the page being written, the chrome of every page, the row of a task and
 * the renderers of each page kind.  Private to lib/dashboard*.c.
 *
 *   dashboard.c           one pass: the state, the aggregate, the shards
 *   dashboard_page.c      files, page chrome, states, times in words
 *   dashboard_task.c      a task's page and its row
 *   dashboard_overview.c  the overview, needs.html, the filter pages,
 *                         the group pages' tables
 *   dashboard_charts.c    the overview's charts
 *   dashboard_views.c     the chart's windows, the static filters
 *   dashboard_agents.c    agents.html
 *   dashboard_errors.c    errors.html
 *   dashboard_serve.c     --serve, its query parameters and live refresh
 */
#ifndef AMP_DASHBOARD_INT_H
#define AMP_DASHBOARD_INT_H

#include <git2.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "dashboard.h"
#include "base/error.h"
#include "store/store.h"
#include "protocol/protocol.h"

/* The overview's activity chart: at most this many hours up to the newest
 * message (the aggregate keeps no more). */
#define CHART_HOURS 48
/* The overview shows this many tasks needing the admin (needs.html: all)
 * and this many most recently active tasks (the group pages: all). */
#define NEEDS_SHOWN 50
#define RECENT_SHOWN 100
#define HOUR_MS 3600000LL
/* A task's title: its dispatch's description, cut to this many bytes
 * (at a character's start). */
#define TITLE_MAX 80

struct gen {
	amp_store *st;
	const char *dir;
	json_t *written; /* paths under dir */
};

/* A page being built in memory (open_memstream), written by finish(). */
struct page {
	FILE *f;
	char *buf;
	size_t len;
};

/* ---- dashboard_page.c ---- */
int dash_write_file(struct gen *g, const char *rel, const char *data, size_t len, int if_changed,
		    amp_error *err);
int dash_page_open(struct page *p, amp_error *err);
/* Writes the page to dir/rel (only when its bytes changed with
 * if_changed) and frees it, also on failure. */
int dash_page_finish(struct gen *g, struct page *p, const char *rel, int if_changed, amp_error *err);
/* The top of a page; `up` is the path back to DIR ("" or "../"). */
void dash_page_head(FILE *f, const char *title, const char *up);
/* dash_page_head for a page with a task table the filter script
 * (dashboard_script.c) works on: its policy allows that script by its
 * hash. */
void dash_page_head_filtered(FILE *f, const char *title, const char *up);
/* The end of a page; now_ms >= 0 says when it was generated. */
void dash_page_tail(FILE *f, int64_t now_ms);
const char *dash_str(const json_t *o, const char *key);
long long dash_ival(const json_t *o, const char *key);
/* amp's state words, NULL-terminated. */
extern const char *const dash_states[];
void dash_put_state(FILE *f, const char *state);
/* A time as "2026-11-27 12:20 UTC" in a <time> element; "-" when ms < 0. */
void dash_put_time(FILE *f, int64_t ms);
/* A time relative to now_ms in words ("4m ago", "in 2h", "3d ago") in a
 * <time> element whose title is the date; "-" when ms < 0. */
void dash_put_ago(FILE *f, int64_t ms, int64_t now_ms);
/* A span in words: "45s", "12m", "3h", "2d". */
void dash_put_span(FILE *f, int64_t span_ms);
/* A command the admin runs, selectable as one piece. */
void dash_put_cmd(FILE *f, const char *fmt, const char *task_id);

/* favicon.svg of the site. */
extern const char dash_favicon[];

/* ---- dashboard_task.c ---- */
/* The page of a task, `row` its row (dash_task_row). */
void dash_render_task(FILE *f, const amp_task_log *log, const json_t *t, const json_t *row);
/* The task's row for the overview and the group pages (the caller owns
 * it): what they need of it without reading the task again while its
 * records stay the same. */
json_t *dash_task_row(const amp_task_log *log, const json_t *t, const char *page);
/* "<b>severity type</b> [msg_id]: description" of an escalation. */
void dash_put_escalation(FILE *f, const json_t *e, const char *msg_id);

/* ---- dashboard_feedback.c ---- */
/* The task's progress reports and its questions with their answers (issue
 * 33), as tables; nothing when it has none. */
void dash_put_feedback(FILE *f, const amp_task_log *log);

/* ---- dashboard_overview.c ---- */
/* The overview's numbers, from the pass. */
struct dash_overview {
	const json_t *agg;
	const json_t **needs;
	size_t nneeds;
	const json_t *groups;  /* [[page name, year, count]] */
	const json_t *agents;  /* {agent: [last_ms, role...]} */
	long long ntasks, nopen;
	int64_t now_ms;
};
/* The rows of the aggregate's notes that need the admin at now_ms, most
 * urgent first, into *out (the caller frees; borrowed rows); -1 when out
 * of memory. */
int dash_needs_list(const json_t *agg, int64_t now_ms, const json_t ***out, size_t *count);
/* 1 when the row needs the admin at now_ms; *overdue: its overdue ACKs. */
int dash_needs_admin(const json_t *row, int64_t now_ms, size_t *overdue);
int dash_recent_cmp(const void *a, const void *b);
void dash_render_index(FILE *f, const struct dash_overview *o);
/* A listing page: needs.html and the filter pages. */
void dash_render_filter_page(FILE *f, const char *filter, const json_t **rows, size_t n,
			     int64_t now_ms);
/* tasks.html as a file: the form --serve answers, the filter pages, the
 * pages of all tasks. */
void dash_render_tasks_static(FILE *f, const json_t *groups);
/* The static filter pages: file name and title. */
extern const char *const dash_filters[][2];
int dash_filter_match(const char *filter, const json_t *row, int64_t now_ms);
/* A table of task rows; times in words relative to now_ms, or as dates
 * when now_ms < 0 (a page that does not depend on the time).  `sort_base`
 * (may be NULL): the URL the column headers link to with &sort=. */
void dash_render_rows(FILE *f, const char *table_id, const json_t *rows, const char *up,
		      int64_t now_ms, const char *sort_base);
void dash_group_name(const char *key, char buf[AMP_DASHBOARD_NAME_MAX]);
/* Fills buf with the label of the group of shard `key` ("2026 part 12"),
 * the part as dash_group_name names the page. */
void dash_group_label(const char *key, char *buf, size_t bufsz);
/* A shard's group page: its rows, filterable by state and role. */
void dash_render_group(FILE *f, const char *key, const json_t *rows);
/* The query of --serve: the rows of every task matching it, sorted, as a
 * page. */
struct dash_query {
	const char *state, *holder, *text, *sort;
	int overdue, escalated, desc;
};
void dash_render_query(FILE *f, json_t *rows, const struct dash_query *q, int64_t now_ms);

/* ---- dashboard_charts.c ---- */
/* `hours`: the window (at most CHART_HOURS), 0 for the one that fits the
 * data. */
void dash_activity_svg(FILE *f, const json_t *agg, int hours);
/* The age of the open tasks (firsts: their first records' times) at now. */
void dash_age_svg(FILE *f, const json_t *firsts, int64_t now_ms);

/* ---- dashboard_views.c ---- */
/* The activity chart over each window the admin may choose (6, 12, 24,
 * 48 hours, and the one that fits the data, shown unless another is
 * chosen), each a fragment of the page (#hours-24) that the stylesheet
 * shows, no script. */
void dash_put_windows(FILE *f, const json_t *agg);
/* The filters of a static page's task table by state and by the role
 * holding the task: links to fragments (#state-rejected, #role-executor)
 * that the stylesheet turns into filters, no script; before the table.
 * `up`: the path back to DIR. */
void dash_put_static_filters(FILE *f, const char *up);
/* "<tr class=\"task\" data-state=... data-roles=...>": the marks the
 * static filters select rows by. */
void dash_put_row_marks(FILE *f, const json_t *row);

/* ---- dashboard_agents.c ---- */
/* agents.html from amp_coord_agents' list, and the {agent: [last_ms,
 * role...]} kept for the overview into *brief. */
int dash_render_agents(amp_store *st, FILE *f, int64_t now_ms, json_t **brief, amp_error *err);

/* ---- dashboard_errors.c ---- */
int dash_render_errors(amp_store *st, const char *dir, FILE *f, amp_error *err);

/* ---- dashboard_script.c ---- */
extern const char dash_filter_js[];
/* "sha256-<base64>" of dash_filter_js, for a policy's script-src (a
 * static buffer, computed once). */
const char *dash_filter_hash(void);
/* The table's count of shown rows and the script, inline. */
void dash_put_filter_script(FILE *f);

/* ---- dashboard_live.c ---- */
extern const char dash_live_js[];
extern const size_t dash_live_js_len;
/* The policy --serve sends: the static one plus its own origin's scripts
 * and fetches, and the filter script by its hash (a static buffer). */
const char *dash_live_csp(void);
/* The page as --serve sends it: its policy allowing the server's own
 * scripts, live.js loaded at its end, into *out (the caller frees). */
int dash_live_page(const char *html, size_t len, char **out, size_t *outlen);
/* The value of query parameter `name` as it came (percent-encoded), or
 * NULL. */
typedef const char *(*dash_arg_fn)(void *ctx, const char *name);
/* tasks.html of --serve: every task of the site in dir filtered and sorted
 * by the query's parameters, into *body (the caller frees); -1 when out of
 * memory. */
int dash_serve_query(amp_store *st, const char *dir, dash_arg_fn arg, void *ctx, int64_t now_ms,
		     char **body, size_t *len);

#endif
