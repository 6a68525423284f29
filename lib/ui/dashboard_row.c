/*
 * dashboard_row.c - a task's row (dashboard_int.h dash_task_row): what the
 * overview, the filter pages and the group pages show of it, kept in the
 * dashboard's state while the task's records stay the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "protocol/protocol.h"
#include "dashboard_int.h"
#include "base/util.h"

#define str dash_str

/* The title: the first dispatch's description, its first line, cut to
 * TITLE_MAX bytes at a character's start ("..." added when cut). */
static json_t *title_of(const amp_task_log *log)
{
	char buf[TITLE_MAX + 4];
	const char *d = NULL;
	size_t i, n;

	for (i = 0; i < log->count && !d; i++)
		if (log->entries[i].kind == AMP_ENTRY_MSG && str(log->entries[i].doc, "type") &&
		    !strcmp(str(log->entries[i].doc, "type"), "task_dispatch"))
			d = str(json_object_get(log->entries[i].doc, "payload"), "description");
	if (!d)
		return json_null();
	n = amp_utf8_prefix(d, TITLE_MAX, "\n");
	memcpy(buf, d, n);
	strcpy(buf + n, d[n] ? "..." : "");
	return json_string(buf);
}

/* Who holds the ball: each holding role (task.h amp_task_holders), an
 * executor named by the lease in force ("alice@executor") when one runs
 * (coord.h; its expiry is kept: whether it ran out depends on the time). */
static json_t *holders_of(const amp_task_log *log)
{
	amp_task_state s;
	amp_holder h[AMP_MAX_HOLDERS];
	amp_leases *ls = calloc(1, sizeof(*ls));
	json_t *out = json_array();
	size_t n, i, j;

	if (!ls)
		return out;
	amp_task_state_compute(log, &s);
	n = amp_task_holders(log, &s, NULL, NULL, NULL, h);
	amp_coord_leases(log, ls);
	for (i = 0; i < n; i++) {
		int named = 0;

		for (j = 0; !strcmp(h[i].role, "executor") && j < ls->n; j++) {
			char who[AMP_AGENT_MAX + 16];

			if (ls->v[j].released)
				continue;
			snprintf(who, sizeof(who), "%s@executor", ls->v[j].agent);
			json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:I}", "who", who, "role",
				"executor", "agent", ls->v[j].agent, "until",
				(json_int_t)amp_lease_expires(&ls->v[j])));
			named = 1;
		}
		if (!named)
			json_array_append_new(out, json_pack("{s:s,s:s}", "who", h[i].role, "role", h[i].role));
	}
	amp_task_state_free(&s);
	free(ls);
	return out;
}

json_t *dash_task_row(const amp_task_log *log, const json_t *t, const char *page)
{
	json_t *row = json_object(), *subs = json_array(), *dl = json_array(), *hours = json_object(),
	       *open = json_array(), *m;
	const json_t *esc = NULL;
	size_t i;
	int64_t last = -1, first = -1, ms;
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
		if (first < 0 || ms < first)
			first = ms;
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
	json_object_set_new(row, "page", page ? json_string(page) : json_null());
	json_object_set_new(row, "title", title_of(log));
	json_object_set_new(row, "holders", holders_of(log));
	json_object_set(row, "state", json_object_get(t, "state"));
	json_object_set(row, "reject_count", json_object_get(t, "reject_count"));
	json_object_set_new(row, "messages", json_integer((json_int_t)json_array_size(json_object_get(t, "messages"))));
	json_object_set_new(row, "escalations", json_integer(nesc));
	json_object_set_new(row, "unreadable", json_integer((json_int_t)log->nbad));
	json_object_set_new(row, "subtasks", subs);
	json_object_set_new(row, "deadlines", dl);
	json_object_set_new(row, "hours", hours);
	json_object_set_new(row, "open", open);
	json_object_set_new(row, "first_ms", json_integer(first));
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
