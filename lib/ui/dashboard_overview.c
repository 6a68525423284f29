/*
 * dashboard_overview.c - the overview of the dashboard (dashboard.h):
 * what the admin wants first (open tasks, overdue ACKs, open escalations,
 * agents active in the last hour), the tasks needing the admin as cards
 * that each carry the command to run, the charts, the most recently
 * active tasks; the filter pages (one per common filter, as files, so a
 * filter is a URL without a server); the table of task rows the group
 * pages share; and the filtered, sorted listing of --serve.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/clock.h"
#include "dashboard_int.h"
#include "base/util.h"

#define str dash_str
#define ival dash_ival

/* The order of the recent list: latest activity first, then task id, then
 * shard (a hand-made tree may hold one name in two shards). */
int dash_recent_cmp(const void *a, const void *b)
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

/* The task's name, linked to its page under `up`tasks/ (or the reason it
 * has none), and its title. */
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

static void put_title(FILE *f, const json_t *row)
{
	if (!str(row, "title"))
		return;
	fputs(" <span class=\"title\">", f);
	amp_html_put(f, str(row, "title"), 0);
	fputs("</span>", f);
}

int dash_needs_admin(const json_t *row, int64_t now_ms, size_t *overdue)
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
	return dash_recent_cmp(a, b);
}

/* The static filter pages: each one a file, so that a filter is a URL a
 * browser opens without a server; what each keeps is dash_filter_match. */
const char *const dash_filters[][2] = {
	{ "needs.html", "Needs the admin" },
	{ "overdue.html", "Overdue ACKs" },
	{ "escalated.html", "Escalated" },
	{ "approval.html", "Awaiting approval" },
	{ NULL, NULL },
};

int dash_filter_match(const char *filter, const json_t *row, int64_t now_ms)
{
	size_t overdue;
	int needs = dash_needs_admin(row, now_ms, &overdue);

	if (!strcmp(filter, "overdue.html"))
		return overdue > 0;
	if (!strcmp(filter, "escalated.html"))
		return str(row, "suspended_by") != NULL;
	if (!strcmp(filter, "approval.html"))
		return str(row, "awaiting_approval") != NULL;
	return needs;
}

int dash_needs_list(const json_t *agg, int64_t now_ms, const json_t ***out, size_t *count)
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
		if (dash_needs_admin(row, now_ms, &overdue))
			v[n++] = row;
	if (n)
		qsort(v, n, sizeof(*v), needs_cmp);
	*out = v;
	*count = n;
	return 0;
}

/* The card of a row needing the admin: why, and the command to run. */
static void put_card(FILE *f, const json_t *row, int64_t now_ms)
{
	const char *id = str(row, "task_id") ? str(row, "task_id") : "";
	size_t overdue;

	dash_needs_admin(row, now_ms, &overdue);
	fputs("<div class=\"needs\"><p>", f);
	task_link(f, row, "");
	fputs(" ", f);
	dash_put_state(f, str(row, "state"));
	if (str(row, "suspended_by")) {
		fputs(" suspended by ", f);
		dash_put_escalation(f, json_object_get(row, "suspension"), str(row, "suspended_by"));
	}
	if (str(row, "awaiting_approval")) {
		fputs(" awaiting approval of ", f);
		amp_html_put(f, str(row, "awaiting_approval"), 0);
	}
	if (overdue)
		fprintf(f, " <span class=\"overdue\">%zu ACK(s) overdue</span>", overdue);
	fputs("</p>", f);
	if (str(row, "title")) {
		fputs("<p>", f);
		amp_html_put(f, str(row, "title"), 0);
		fputs("</p>", f);
	}
	/* The one command that moves it: lift the suspension (or the lock),
	 * approve the dispatch, or apply the ACK timeouts (amp watch
	 * escalates each overdue ACK once). */
	fputs("<p>Run: ", f);
	if (str(row, "suspended_by"))
		dash_put_cmd(f, "amp resume %s --from admin --reason '...'", id);
	else if (str(row, "awaiting_approval"))
		dash_put_cmd(f, "amp approve %s --from admin", id);
	else
		dash_put_cmd(f, "amp watch --once%s", "");
	fputs("</p></div>\n", f);
}

/* The first `limit` of the rows needing the admin, as cards. */
static void render_needs(FILE *f, const json_t **rows, size_t n, size_t limit, int64_t now_ms)
{
	size_t i;

	for (i = 0; i < n && i < limit; i++)
		put_card(f, rows[i], now_ms);
	if (!n)
		fputs("<p>Nothing: no task is suspended, locked, awaiting approval or overdue.</p>\n", f);
}

/* The next ACK deadline of a row in words: "due in 4m", "overdue 12m";
 * a date when now_ms < 0. */
static void put_deadline(FILE *f, const json_t *row, int64_t now_ms)
{
	const json_t *d;
	int64_t next = -1;
	size_t j, open = 0;

	json_array_foreach(json_object_get(row, "deadlines"), j, d) {
		open++;
		if (next < 0 || (int64_t)json_integer_value(d) < next)
			next = json_integer_value(d);
	}
	if (!open) {
		fputs("-", f);
		return;
	}
	if (now_ms < 0) {
		fprintf(f, "%zu open, next ", open);
		dash_put_time(f, next);
		return;
	}
	if (now_ms > next) {
		fputs("<span class=\"overdue\">overdue ", f);
		dash_put_span(f, now_ms - next);
		fputs("</span>", f);
	} else {
		fputs("due in ", f);
		dash_put_span(f, next - now_ms);
	}
	if (open > 1)
		fprintf(f, " (%zu open)", open);
}

/* Who holds the task; at now_ms (>= 0), a lease that ran out names its
 * role only, with whose lease it was. */
static void put_holders(FILE *f, const json_t *row, int64_t now_ms)
{
	const json_t *h;
	size_t i;

	json_array_foreach(json_object_get(row, "holders"), i, h) {
		fputs(i ? ", " : "", f);
		if (now_ms >= 0 && json_is_integer(json_object_get(h, "until")) && ival(h, "until") < now_ms) {
			amp_html_put(f, str(h, "role"), 0);
			fputs(" <span class=\"meta\">(", f);
			amp_html_put(f, str(h, "agent"), 0);
			fputs("'s lease ran out)</span>", f);
			continue;
		}
		amp_html_put(f, str(h, "who"), 0);
	}
	if (!json_array_size(json_object_get(row, "holders")))
		fputs("-", f);
}

/* The columns of the task tables: header, the key --serve sorts by. */
static const char *const columns[][2] = {
	{ "task", "task" }, { "state", "state" }, { "held by", "holder" }, { "subtasks", NULL },
	{ "rejects", "rejects" }, { "next ACK deadline", "deadline" }, { "last activity", "last" },
};

void dash_render_rows(FILE *f, const char *table_id, const json_t *rows, const char *up,
		      int64_t now_ms, const char *sort_base)
{
	const json_t *row, *s;
	size_t i, j;

	/* A static page's headers ("#") are the filter script's sort links. */
	int scripted = sort_base && sort_base[0] == '#';

	fprintf(f, "<div class=\"wrap\"><table id=\"%s\"%s", table_id, scripted ? " class=\"filtered\"" : "");
	if (now_ms >= 0)
		fprintf(f, " data-now=\"%lld\"", (long long)now_ms);
	fputs("><tr>", f);
	for (i = 0; i < sizeof(columns) / sizeof(columns[0]); i++) {
		fprintf(f, "<th scope=\"col\"%s>", i == 6 ? " class=\"hide-s\"" : "");
		if (sort_base && columns[i][1]) {
			fprintf(f, "<a%s%s%s href=\"", scripted ? " data-sort=\"" : "",
				scripted ? columns[i][1] : "", scripted ? "\"" : "");
			amp_html_put(f, sort_base, 0);
			fprintf(f, "sort=%s\">%s</a></th>", columns[i][1], columns[i][0]);
		} else {
			fprintf(f, "%s</th>", columns[i][0]);
		}
	}
	fputs("</tr>\n", f);
	json_array_foreach(rows, i, row) {
		dash_put_row_marks(f, row);
		fputs("<td>", f);
		task_link(f, row, up);
		put_title(f, row);
		fputs("</td><td>", f);
		dash_put_state(f, str(row, "state"));
		fputs("</td><td>", f);
		put_holders(f, row, now_ms);
		fputs("</td><td>", f);
		json_array_foreach(json_object_get(row, "subtasks"), j, s) {
			amp_html_put(f, json_string_value(json_array_get(s, 0)), 0);
			fputs(" ", f);
			dash_put_state(f, json_string_value(json_array_get(s, 1)));
			fputs("<br>", f);
		}
		fprintf(f, "</td><td>%lld</td><td>", ival(row, "reject_count"));
		put_deadline(f, row, now_ms);
		fputs("</td><td class=\"hide-s\">", f);
		if (now_ms >= 0)
			dash_put_ago(f, ival(row, "last_ms"), now_ms);
		else
			dash_put_time(f, ival(row, "last_ms"));
		if (ival(row, "unreadable"))
			fputs(" (unreadable records)", f);
		fputs("</td></tr>\n", f);
	}
	fputs("</table></div>\n", f);
}

void dash_render_group(FILE *f, const char *key, const json_t *rows)
{
	char where[700];

	/* The shard's directory, shown: a key of any length fits. */
	snprintf(where, sizeof(where), "tasks/%.600s/", key);
	dash_page_head_filtered(f, where, "../");
	fprintf(f, "<p class=\"meta\">%zu task(s) of the SSOT's directory ", json_array_size(rows));
	amp_html_put(f, where, 0);
	fputs("</p>\n", f);
	dash_put_static_filters(f, "../");
	dash_render_rows(f, "tasks", rows, "../", -1, "#");
	dash_put_filter_script(f);
	dash_page_tail(f, -1);
}

/* Splits a shard's key, <YYYY>/<S> (layout 1) or <YYYY>/<A>/<B> (layout
 * 2, store.h "Layout"), all digits and short, into its year's length and
 * its part S: A and B joined again, B alone when A is layout 2's "0" for
 * none, so a group keeps its page name and label when amp gc --migrate
 * moves the SSOT to layout 2.  0 for any other key. */
static int group_parts(const char *key, int *year_len, char part[40])
{
	const char *slash = strchr(key, '/'), *second, *p;

	if (!slash || slash == key || !slash[1] || strlen(key) >= 40)
		return 0;
	for (p = key; *p; p++)
		if (*p != '/' && (*p < '0' || *p > '9'))
			return 0;
	second = strchr(slash + 1, '/');
	if (second && (second == slash + 1 || !second[1] || strchr(second + 1, '/')))
		return 0;
	*year_len = (int)(slash - key);
	if (!second)
		snprintf(part, 40, "%s", slash + 1);
	else if (second - slash == 2 && slash[1] == '0')
		snprintf(part, 40, "%s", second + 1);
	else
		snprintf(part, 40, "%.*s%s", (int)(second - slash - 1), slash + 1, second + 1);
	return 1;
}

void dash_group_name(const char *key, char buf[AMP_DASHBOARD_NAME_MAX])
{
	char part[40];
	int year_len;

	if (!group_parts(key, &year_len, part)) {
		amp_dashboard_page_name(key, buf);
		return;
	}
	snprintf(buf, AMP_DASHBOARD_NAME_MAX, "%.*s-%s.html", year_len, key, part);
}

void dash_group_label(const char *key, char *buf, size_t bufsz)
{
	const char *slash = strchr(key, '/');
	char part[40];
	int year_len;

	if (group_parts(key, &year_len, part))
		snprintf(buf, bufsz, "%.*s part %s", year_len, key, part);
	else
		snprintf(buf, bufsz, "%.*s part %s", slash ? (int)(slash - key) : 0, key,
			 slash ? slash + 1 : key);
}

/* The links to the filter pages, the current one marked. */
static void put_filters(FILE *f, const char *current)
{
	size_t i;

	fputs("<p class=\"filters\">Show: <a href=\"index.html\"", f);
	fputs(!current ? " aria-current=\"page\">" : ">", f);
	fputs("Recently active</a>", f);
	for (i = 0; dash_filters[i][0]; i++)
		fprintf(f, "<a href=\"%s\"%s>%s</a>", dash_filters[i][0],
			current && !strcmp(current, dash_filters[i][0]) ? " aria-current=\"page\"" : "",
			dash_filters[i][1]);
	fputs("</p>\n", f);
}

/* The admin's numbers at now: open tasks, overdue ACKs, open escalations
 * (tasks suspended or locked), agents whose last write is within the
 * hour. */
static void put_stats(FILE *f, const struct dash_overview *o)
{
	size_t i, overdue, late = 0, esc = 0, active = 0;
	const char *k;
	json_t *v;

	for (i = 0; i < o->nneeds; i++) {
		dash_needs_admin(o->needs[i], o->now_ms, &overdue);
		late += overdue;
		esc += str(o->needs[i], "suspended_by") != NULL;
	}
	json_object_foreach((json_t *)o->agents, k, v)
		if (json_integer_value(json_array_get(v, 0)) > o->now_ms - HOUR_MS)
			active++;
	fprintf(f, "<ul class=\"stats\"><li><b>%lld</b> open task(s) of %lld</li>"
		"<li><a href=\"overdue.html\"><b>%zu</b> overdue ACK(s)</a></li>"
		"<li><a href=\"escalated.html\"><b>%zu</b> open escalation(s)</a></li>"
		"<li><a href=\"agents.html\"><b>%zu</b> agent(s) active in the last hour</a></li></ul>\n",
		o->nopen, o->ntasks, late, esc, active);
}

static void put_form(FILE *f, const struct dash_query *q);

/* Links to the pages of all tasks (one per shard of the task tree, named
 * by its year and part, not by its path). */
static void put_groups(FILE *f, const json_t *groups)
{
	const json_t *g;
	size_t i;

	fputs("<p class=\"groups\">", f);
	json_array_foreach(groups, i, g) {
		fputs(i ? " &middot; " : "", f);
		fputs("<a href=\"groups/", f);
		amp_html_put(f, json_string_value(json_array_get(g, 0)), 0);
		fputs("\">", f);
		amp_html_put(f, json_string_value(json_array_get(g, 1)), 0);
		fprintf(f, " (%lld)</a>", (long long)json_integer_value(json_array_get(g, 2)));
	}
	fputs(json_array_size(groups) ? "</p>\n" : "No task yet.</p>\n", f);
}

void dash_render_tasks_static(FILE *f, const json_t *groups)
{
	struct dash_query q;

	memset(&q, 0, sizeof(q));
	dash_page_head(f, "amp dashboard: tasks", "");
	put_form(f, &q);
	fputs("<p>Filtering and sorting every task by state, holder and text is done by "
	      "<code>amp dashboard --serve</code>, which answers this page's query parameters "
	      "(<code>tasks.html?state=rejected&amp;holder=executor&amp;q=login&amp;sort=deadline</code>). "
	      "Without a server, each common filter is a page of its own:</p>\n", f);
	put_filters(f, "tasks.html");
	fputs("<h2>All tasks</h2>\n", f);
	put_groups(f, groups);
	dash_page_tail(f, -1);
}

void dash_render_index(FILE *f, const struct dash_overview *o)
{
	dash_page_head_filtered(f, "amp dashboard", "");
	put_stats(f, o);
	fputs("<h2>Needs the admin</h2>\n", f);
	render_needs(f, o->needs, o->nneeds, NEEDS_SHOWN, o->now_ms);
	if (o->nneeds > NEEDS_SHOWN)
		fprintf(f, "<p><a href=\"needs.html\">All %zu tasks needing the admin</a></p>\n", o->nneeds);
	fputs("<h2>Recently active</h2>\n", f);
	put_filters(f, NULL);
	fprintf(f, "<p class=\"meta\">The %d tasks with the latest records; every task is on the "
		"pages of all tasks below.</p>\n", RECENT_SHOWN);
	dash_put_static_filters(f, "");
	dash_render_rows(f, "recent", json_object_get(o->agg, "recent"), "", o->now_ms, "#");
	dash_put_filter_script(f);
	fputs("<h2>Messages per hour, open escalations</h2>\n", f);
	dash_put_windows(f, o->agg);
	fputs("<h2>Age of the open tasks</h2>\n", f);
	dash_age_svg(f, json_object_get(o->agg, "firsts"), o->now_ms);
	fputs("<h2>All tasks</h2>\n", f);
	put_groups(f, o->groups);
	dash_page_tail(f, o->now_ms);
}

void dash_render_filter_page(FILE *f, const char *filter, const json_t **rows, size_t n,
			     int64_t now_ms)
{
	const char *title = "Needs the admin";
	char head[128];
	size_t i, shown = 0;

	for (i = 0; dash_filters[i][0]; i++)
		if (!strcmp(dash_filters[i][0], filter))
			title = dash_filters[i][1];
	snprintf(head, sizeof(head), "amp dashboard: %s", title);
	if (!strcmp(filter, "needs.html"))
		snprintf(head, sizeof(head), "amp dashboard: needs the admin");
	dash_page_head(f, head, "");
	put_filters(f, filter);
	for (i = 0; i < n; i++)
		shown += dash_filter_match(filter, rows[i], now_ms);
	fprintf(f, "<p class=\"meta\">%zu task(s)</p>\n", shown);
	for (i = 0; i < n; i++)
		if (dash_filter_match(filter, rows[i], now_ms))
			put_card(f, rows[i], now_ms);
	if (!shown)
		render_needs(f, rows, 0, 0, now_ms);
	dash_page_tail(f, -1);
}

/* ---- --serve's listing ------------------------------------------------------ */

static const struct dash_query *sort_q;

static long long next_deadline(const json_t *row)
{
	const json_t *d;
	size_t j;
	long long next = -1;

	json_array_foreach(json_object_get(row, "deadlines"), j, d)
		if (next < 0 || json_integer_value(d) < next)
			next = json_integer_value(d);
	return next < 0 ? (1LL << 62) : next;
}

static const char *holder_text(const json_t *row)
{
	return str(json_array_get(json_object_get(row, "holders"), 0), "who");
}

static int query_cmp(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	const char *k = sort_q->sort ? sort_q->sort : "last";
	long long c = 0;

	if (!strcmp(k, "task"))
		c = strcmp(str(x, "task_id") ? str(x, "task_id") : "", str(y, "task_id") ? str(y, "task_id") : "");
	else if (!strcmp(k, "state"))
		c = strcmp(str(x, "state") ? str(x, "state") : "", str(y, "state") ? str(y, "state") : "");
	else if (!strcmp(k, "holder"))
		c = strcmp(holder_text(x) ? holder_text(x) : "~", holder_text(y) ? holder_text(y) : "~");
	else if (!strcmp(k, "rejects"))
		c = ival(y, "reject_count") - ival(x, "reject_count");
	else if (!strcmp(k, "deadline"))
		c = next_deadline(x) < next_deadline(y) ? -1 : next_deadline(x) > next_deadline(y);
	if (sort_q->desc)
		c = -c;
	return c < 0 ? -1 : c > 0 ? 1 : dash_recent_cmp(a, b);
}

/* 1 when hay holds needle, ASCII letters in either case. */
static int contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return 1;
	return !n;
}

/* 1 when the row passes every filter of q. */
static int query_match(const json_t *row, const struct dash_query *q, int64_t now_ms)
{
	const json_t *h;
	size_t i, overdue;
	int held = 0;

	dash_needs_admin(row, now_ms, &overdue);
	if (q->state && *q->state && (!str(row, "state") || strcmp(str(row, "state"), q->state)))
		return 0;
	if (q->overdue && !overdue)
		return 0;
	if (q->escalated && !str(row, "suspended_by"))
		return 0;
	json_array_foreach(json_object_get(row, "holders"), i, h)
		held |= str(h, "who") && (!strcmp(str(h, "who"), q->holder ? q->holder : "") ||
					 !strcmp(str(h, "role"), q->holder ? q->holder : "") ||
					 (str(h, "agent") && !strcmp(str(h, "agent"), q->holder ? q->holder : "")));
	if (q->holder && *q->holder && !held)
		return 0;
	if (q->text && *q->text && !contains_ci(str(row, "task_id") ? str(row, "task_id") : "", q->text) &&
	    !contains_ci(str(row, "title") ? str(row, "title") : "", q->text))
		return 0;
	return 1;
}

/* The query's form: each filter a GET parameter, so that every filter is
 * a URL. */
static void put_form(FILE *f, const struct dash_query *q)
{
	size_t i;

	fputs("<form class=\"q\" method=\"get\" action=\"tasks.html\"><label>state <select name=\"state\">"
	      "<option value=\"\">any</option>", f);
	for (i = 0; dash_states[i]; i++)
		fprintf(f, "<option%s>%s</option>", q->state && !strcmp(q->state, dash_states[i]) ? " selected" : "",
			dash_states[i]);
	fputs("</select></label><label>held by <input name=\"holder\" size=\"12\" value=\"", f);
	amp_html_put(f, q->holder, 0);
	fputs("\"></label><label>text <input name=\"q\" size=\"16\" value=\"", f);
	amp_html_put(f, q->text, 0);
	fprintf(f, "\"></label><label><input type=\"checkbox\" name=\"overdue\" value=\"1\"%s> overdue"
		"</label><label><input type=\"checkbox\" name=\"escalated\" value=\"1\"%s> escalated"
		"</label><button>Filter</button></form>\n", q->overdue ? " checked" : "",
		q->escalated ? " checked" : "");
}

/* name=value& with value percent-encoded but for letters, digits, "-",
 * "_", "." and "@" (so that a value a URL carries cannot end it). */
static void put_param(FILE *m, const char *name, const char *value)
{
	const unsigned char *p;

	if (!value || !*value)
		return;
	fprintf(m, "%s=", name);
	for (p = (const unsigned char *)value; *p; p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || *p == '_' || *p == '.' || *p == '@')
			fputc(*p, m);
		else
			fprintf(m, "%%%02X", *p);
	fputc('&', m);
}

/* The URL of this query without its sort, ending in "&" or "?", for the
 * column headers. */
static char *sort_base(const struct dash_query *q)
{
	char *s = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&s, &len);

	if (!m)
		return NULL;
	fputs("tasks.html?", m);
	put_param(m, "state", q->state);
	put_param(m, "holder", q->holder);
	put_param(m, "q", q->text);
	put_param(m, "overdue", q->overdue ? "1" : NULL);
	put_param(m, "escalated", q->escalated ? "1" : NULL);
	fclose(m);
	return s;
}

void dash_render_query(FILE *f, json_t *rows, const struct dash_query *q, int64_t now_ms)
{
	json_t *keep = json_array(), *row;
	const json_t **v;
	size_t i, n = 0;
	char *base = sort_base(q);

	json_array_foreach(rows, i, row)
		if (query_match(row, q, now_ms))
			json_array_append(keep, row);
	if ((v = malloc((json_array_size(keep) + 1) * sizeof(*v)))) {
		json_array_foreach(keep, i, row)
			v[n++] = row;
		sort_q = q;
		if (n)
			qsort(v, n, sizeof(*v), query_cmp);
		json_array_clear(keep);
		for (i = 0; i < n; i++)
			json_array_append(keep, (json_t *)v[i]);
		free(v);
	}
	dash_page_head(f, "amp dashboard: tasks", "");
	put_form(f, q);
	fprintf(f, "<p class=\"meta\">%zu of %zu task(s)</p>\n", json_array_size(keep), json_array_size(rows));
	dash_render_rows(f, "tasks", keep, "", now_ms, base ? base : "tasks.html?");
	dash_page_tail(f, now_ms);
	free(base);
	json_decref(keep);
}
