/*
 * dashboard_agents.c - agents.html (dashboard.h): every named agent
 * instance (read/agents.h amp_agents_report): its roles, what it holds,
 * its last write (a heartbeat is one) and the task of it, its last
 * heartbeat, how many records it wrote, what it declared, and its recent
 * messages.  Written when the SSOT moved, at that time.
 */
#include <stdio.h>
#include <string.h>

#include "record/record.h"
#include "base/clock.h"
#include "protocol/protocol.h"
#include "read/read.h"
#include "dashboard_int.h"
#include "schema/schema.h"

#define str dash_str

/* A task id linked to its page. */
static void put_task(FILE *f, const char *task)
{
	char name[AMP_DASHBOARD_NAME_MAX];

	if (!task) {
		fputs("-", f);
		return;
	}
	amp_dashboard_page_name(task, name);
	fprintf(f, "<a href=\"tasks/%s\">", name);
	amp_html_put(f, task, 0);
	fputs("</a>", f);
}

/* A record time of the report as a date ("-" when none); its ms, or -1. */
static int64_t put_when(FILE *f, const char *iso)
{
	int64_t ms = -1;

	if (iso && amp_time_parse(iso, &ms) < 0)
		ms = -1;
	dash_put_time(f, ms);
	return ms;
}

/* The instance's newest messages (the report's "recent"): when, the
 * type, the task, the message id and its text for a glance -- data from
 * the SSOT, escaped like every other field. */
static void put_recent(FILE *f, const json_t *a)
{
	const json_t *m;
	size_t i;

	if (!json_array_size(json_object_get(a, "recent")))
		return;
	fputs("<section class=\"round\"><h3>", f);
	amp_html_put(f, str(a, "agent"), 0);
	fputs("</h3>\n<ol class=\"tl\">\n", f);
	json_array_foreach(json_object_get(a, "recent"), i, m) {
		fputs("<li>", f);
		put_when(f, str(m, "time"));
		fputs(" <b>", f);
		amp_html_put(f, str(m, "type") ? str(m, "type") : "?", 0);
		fputs("</b> on ", f);
		put_task(f, str(m, "task_id"));
		fputs(" <span class=\"meta\">", f);
		amp_html_put(f, str(m, "msg_id"), 0);
		fputs("</span>", f);
		if (str(m, "text")) {
			fputs(": ", f);
			amp_html_put(f, str(m, "text"), 0);
		}
		fputs("</li>\n", f);
	}
	fputs("</ol></section>\n", f);
}

static void put_agent(FILE *f, const json_t *a, json_t *brief)
{
	const json_t *v, *d = json_object_get(a, "declared");
	json_t *b;
	size_t j;
	int64_t last = -1;

	fputs("<tr class=\"agent\"><td class=\"who\">", f);
	amp_html_put(f, str(a, "agent"), 0);
	fputs("</td><td>", f);
	json_array_foreach(json_object_get(a, "roles"), j, v) {
		fputs(j ? ", " : "", f);
		amp_html_put(f, json_string_value(v), 0);
	}
	if (!json_array_size(json_object_get(a, "roles")))
		fputs("-", f);
	fputs("</td><td>", f);
	json_array_foreach(json_object_get(a, "holds"), j, v) {
		fputs(j ? ", " : "", f);
		put_task(f, str(v, "task_id"));
		if (str(v, "subtask_id")) {
			fputs(" ", f);
			amp_html_put(f, str(v, "subtask_id"), 0);
		}
	}
	if (!json_array_size(json_object_get(a, "holds")))
		fputs("-", f);
	fputs("</td><td>", f);
	last = put_when(f, str(a, "last_write"));
	fputs("</td><td>", f);
	put_task(f, str(a, "last_task"));
	fputs("</td><td>", f);
	put_when(f, str(a, "last_heartbeat"));
	fprintf(f, "</td><td class=\"hide-s\">%lld</td><td class=\"hide-s\">", dash_ival(a, "writes"));
	json_array_foreach(json_object_get(d, "capabilities"), j, v) {
		fputs(j ? ", " : "", f);
		amp_html_put(f, json_string_value(v), 0);
	}
	fputs(json_is_object(d) ? "" : "not declared", f);
	fputs("</td></tr>\n", f);
	if (str(a, "agent") && (b = json_pack("[I]", (json_int_t)last))) {
		json_array_foreach(json_object_get(a, "roles"), j, v)
			json_array_append(b, (json_t *)v);
		json_object_set_new(brief, str(a, "agent"), b);
	}
}

int dash_render_agents(amp_store *st, FILE *f, int64_t now_ms, json_t **brief, amp_error *err)
{
	amp_schema_set *set = NULL;
	json_t *list = NULL;
	const json_t *a;
	size_t i, wrote;
	int status;

	*brief = json_object();
	if ((status = amp_schema_set_load_amp(&set, NULL, err)) < 0 ||
	    (status = amp_agents_report(st, set, now_ms, &list, err)) < 0)
		goto cleanup;
	dash_page_head(f, "amp dashboard: agents", "");
	fputs("<p>Every named agent instance the SSOT has seen (<code>amp agents</code>): its roles, "
	      "the leases it holds, its last write (a heartbeat is one) and the task of it, its last "
	      "heartbeat, and below, its recent messages.</p>\n<div class=\"wrap\"><table id=\"agents\"><tr><th scope=\"col\">agent</th>"
	      "<th scope=\"col\">roles</th><th scope=\"col\">holds</th><th scope=\"col\">last write</th>"
	      "<th scope=\"col\">on task</th><th scope=\"col\">last heartbeat</th>"
	      "<th scope=\"col\" class=\"hide-s\">records</th>"
	      "<th scope=\"col\" class=\"hide-s\">declared capabilities</th></tr>\n", f);
	json_array_foreach(list, i, a)
		put_agent(f, a, *brief);
	fputs("</table></div>\n", f);
	fputs("<h2>Recent messages</h2>\n<p>The newest messages each instance wrote (at most "
	      "five), newest first.</p>\n", f);
	wrote = 0;
	json_array_foreach(list, i, a) {
		put_recent(f, a);
		wrote += json_array_size(json_object_get(a, "recent")) > 0;
	}
	if (!wrote && json_array_size(list))
		fputs("<p>None has written a message yet (ACKs, claims and heartbeats are not "
		      "messages).</p>\n", f);
	if (!json_array_size(list))
		fputs("<p>No named agent yet: agents name themselves with <code>--agent NAME</code> "
		      "(or <code>amp register</code>).</p>\n", f);
	dash_page_tail(f, -1);
cleanup:
	json_decref(list);
	amp_schema_set_free(set);
	return status;
}
