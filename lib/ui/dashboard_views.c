/*
 * dashboard_views.c - what lets an admin choose a view of a static page
 * without a script and without a server (dashboard_int.h): the activity
 * chart's windows, and the filters of a task table by state and by role.
 * Each choice is a fragment of the page's URL (index.html#hours-24,
 * groups/2026-0.html#state-rejected), so it can be bookmarked; the
 * stylesheet (dashboard_page.c) shows what the fragment names (:target).
 */
#include <stdio.h>
#include <string.h>

#include "dashboard_int.h"

#define str dash_str

/* The windows an admin may choose, in hours (CHART_HOURS at most: the
 * aggregate keeps no more). */
static const int windows[] = { 6, 12, 24, 48, 0 };

/* The roles that hold a task (the holders' "role"). */
static const char *const roles[] = { "admin", "coordinator", "executor", "reviewer", NULL };

void dash_put_windows(FILE *f, const json_t *agg)
{
	size_t i;

	fputs("<p class=\"filters\">Window: <a href=\"#hours-fit\">the hours with activity</a>", f);
	for (i = 0; windows[i]; i++)
		fprintf(f, "<a href=\"#hours-%d\">last %dh</a>", windows[i], windows[i]);
	fputs("</p>\n<div class=\"wins\">\n", f);
	/* The one that fits the data last: a chosen one before it hides it
	 * (the stylesheet's .win:target ~ .fit). */
	for (i = 0; windows[i]; i++) {
		fprintf(f, "<div class=\"win\" id=\"hours-%d\">", windows[i]);
		dash_activity_svg(f, agg, windows[i]);
		fputs("</div>\n", f);
	}
	fputs("<div class=\"win fit\" id=\"hours-fit\">", f);
	dash_activity_svg(f, agg, 0);
	fputs("</div></div>\n", f);
}

void dash_put_static_filters(FILE *f, const char *up)
{
	size_t i;

	fputs("<p class=\"filters\">State: <a href=\"#all\">any</a>", f);
	for (i = 0; dash_states[i]; i++)
		fprintf(f, "<a href=\"#state-%s\">%s</a>", dash_states[i], dash_states[i]);
	fputs("<br>Held by: ", f);
	for (i = 0; roles[i]; i++)
		fprintf(f, "<a href=\"#role-%s\">%s</a>", roles[i], roles[i]);
	fputs("<br>More: <a href=\"#overdue=1\">overdue</a><a href=\"#escalated=1\">escalated</a>", f);
	fprintf(f, "</p>\n<p class=\"meta\">Any filter is a URL: <code>#q=text&amp;holder=alice&amp;"
		"overdue=1&amp;escalated=1&amp;state=rejected&amp;sort=deadline&amp;desc=1</code> "
		"(with scripts on; <code>amp dashboard --serve</code>'s "
		"<a href=\"%stasks.html\">tasks.html</a> takes the same as query parameters).</p>\n", up);
	/* The fragments' targets, siblings before the table. */
	for (i = 0; dash_states[i]; i++)
		fprintf(f, "<span class=\"anchor\" id=\"state-%s\"></span>", dash_states[i]);
	for (i = 0; roles[i]; i++)
		fprintf(f, "<span class=\"anchor\" id=\"role-%s\"></span>", roles[i]);
	fputs("\n", f);
}

/* One attribute, its value escaped (a task id or an agent's name is
 * message text). */
static void put_attr(FILE *f, const char *name, const char *value)
{
	fprintf(f, " data-%s=\"", name);
	amp_html_put(f, value ? value : "", 0);
	fputs("\"", f);
}

void dash_put_row_marks(FILE *f, const json_t *row)
{
	const json_t *h, *d;
	long long due = -1;
	size_t i;

	fputs("<tr class=\"task\"", f);
	put_attr(f, "state", str(row, "state"));
	fputs(" data-roles=\"", f);
	json_array_foreach(json_object_get(row, "holders"), i, h) {
		fputs(i ? " " : "", f);
		amp_html_put(f, str(h, "role") ? str(h, "role") : "", 0);
	}
	/* What the filter script (dashboard_script.c) matches and sorts by:
	 * each holder as --serve's holder= names it (who, role, agent), the
	 * first one's name, the next ACK deadline and the last record (ms). */
	fputs("\" data-holders=\"", f);
	json_array_foreach(json_object_get(row, "holders"), i, h) {
		fputs(i ? " " : "", f);
		amp_html_put(f, str(h, "who"), 0);
		fputs(" ", f);
		amp_html_put(f, str(h, "role"), 0);
		if (str(h, "agent")) {
			fputs(" ", f);
			amp_html_put(f, str(h, "agent"), 0);
		}
	}
	fputs("\"", f);
	put_attr(f, "task", str(row, "task_id"));
	put_attr(f, "holder", str(json_array_get(json_object_get(row, "holders"), 0), "who"));
	json_array_foreach(json_object_get(row, "deadlines"), i, d)
		if (due < 0 || json_integer_value(d) < due)
			due = json_integer_value(d);
	if (due >= 0)
		fprintf(f, " data-due=\"%lld\"", due);
	fprintf(f, " data-rejects=\"%lld\" data-last=\"%lld\" data-escalated=\"%d\">",
		dash_ival(row, "reject_count"), dash_ival(row, "last_ms"), str(row, "suspended_by") != NULL);
}
