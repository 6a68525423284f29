#include "task.h"

#include <stdio.h>
#include <string.h>

#include "bounds.h"
#include "clock.h"
#include "message.h"

int64_t amp_record_time(const json_t *doc)
{
	int64_t ms;
	const char *ts = amp_json_str(doc, "timestamp");

	return ts && amp_time_parse(ts, &ms) == 0 ? ms : -1;
}

const char *amp_escalation_cause(const json_t *msg, char *buf, size_t bufsz)
{
	const json_t *p = json_object_get(msg, "payload");
	const char *d = amp_json_str(p, "description");
	const char *first = json_string_value(json_array_get(json_object_get(p, "affected_msgs"), 0));
	const char *end;
	size_t n = strlen(AMP_RECORD_CAUSE);

	if (d && !strncmp(d, AMP_RECORD_CAUSE, n) && (end = strstr(d + n, ": ")) &&
	    (size_t)(end - d) - n < bufsz) {
		snprintf(buf, bufsz, "%.*s", (int)(end - d - n), d + n);
		return buf;
	}
	if (!first || strlen(first) >= bufsz)
		return NULL;
	snprintf(buf, bufsz, "%s", first);
	return buf;
}

int amp_task_has_escalation(const amp_task_log *log, const char *type,
			    const char *from, const char *cause)
{
	char buf[1024];
	size_t i;

	for (i = 0; type && from && cause && i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *kind = amp_json_str(json_object_get(e->doc, "payload"), "escalation_type");
		const char *by = amp_json_str(e->doc, "from");
		const char *c;

		if (e->kind == AMP_ENTRY_MSG && kind && by && !strcmp(kind, type) &&
		    !strcmp(by, from) && (c = amp_escalation_cause(e->doc, buf, sizeof(buf))) &&
		    !strcmp(c, cause))
			return 1;
	}
	return 0;
}

const json_t *amp_task_ack_of(const amp_task_log *log, const char *msg_id)
{
	const amp_entry *e = amp_task_log_find(log, AMP_ENTRY_ACK, msg_id);

	return e ? e->doc : NULL;
}

static int is_acked_or_unneeded(const amp_task_log *log, const amp_entry *e)
{
	return !json_is_true(json_object_get(e->doc, "requires_ack")) ||
	       amp_task_ack_of(log, e->id);
}

int amp_task_entry_in_place(const amp_task_log *log, const amp_entry *e)
{
	const char *task, *named;
	size_t task_len;

	if (e->kind == AMP_ENTRY_CTL)
		return 1;
	if (!e->id || amp_msg_id_parse(e->id, &task, &task_len, NULL) < 0 ||
	    strlen(log->task_id) != task_len || strncmp(task, log->task_id, task_len))
		return 0;
	named = amp_json_str(e->doc, e->kind == AMP_ENTRY_ACK ? "ack_for" : "msg_id");
	return named && !strcmp(named, e->id) &&
	       amp_json_str(e->doc, "task_id") &&
	       !strcmp(amp_json_str(e->doc, "task_id"), log->task_id);
}

void amp_task_state_compute(const amp_task_log *log, amp_task_state *s)
{
	const char *dispatch_id = NULL;
	size_t i;

	memset(s, 0, sizeof(*s));
	s->flow_state = "new";
	s->last_activity_ms = -1;
	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];
		const char *type = amp_json_str(e->doc, "type");
		int64_t t = amp_record_time(e->doc);

		if (!amp_task_entry_in_place(log, e))
			continue;
		if (t > s->last_activity_ms)
			s->last_activity_ms = t;
		if (e->kind == AMP_ENTRY_ACK) {
			/* AMP/1.0 §01 ACK on Start: the executor's ACK means
			 * "received and execution started". */
			if (dispatch_id && !strcmp(e->id, dispatch_id) &&
			    !strcmp(s->flow_state, "dispatched"))
				s->flow_state = "in_progress";
			continue;
		}
		if (e->kind == AMP_ENTRY_CTL) {
			if (type && !strcmp(type, "resume")) {
				s->suspended = s->locked = 0;
				s->suspended_by = NULL;
				s->rejects_since_resume = 0;
			}
			continue;
		}
		s->messages++;
		s->last_msg_id = e->id;
		if (!type)
			continue;
		if (!strcmp(type, "task_dispatch")) {
			s->flow_state = "dispatched";
			s->last_dispatch = e->doc;
			dispatch_id = e->id;
		} else if (!strcmp(type, "task_result")) {
			s->flow_state = "submitted";
		} else if (!strcmp(type, "review_request")) {
			s->flow_state = "in_review";
		} else if (!strcmp(type, "review_verdict")) {
			const char *d = amp_json_str(json_object_get(e->doc, "payload"),
						     "decision");

			if (d && !strcmp(d, "rejected")) {
				s->flow_state = "rejected";
				s->reject_count++;
				s->rejects_since_resume++;
				continue; /* a rejection is not a success */
			}
			s->flow_state = "approved";
		} else if (!strcmp(type, "escalation")) {
			const json_t *p = json_object_get(e->doc, "payload");
			const char *sev = amp_json_str(p, "severity");
			const char *kind = amp_json_str(p, "escalation_type");

			/* AMP/1.0 §05 Critical = Suspend All. */
			if (sev && !strcmp(sev, "critical")) {
				s->suspended = 1;
				s->suspended_by = e->id;
				if (kind && !strcmp(kind, "hallucination_lock"))
					s->locked = 1;
			}
			continue;
		}
		if (is_acked_or_unneeded(log, e))
			s->last_successful_msg_id = e->id;
	}
	s->state = s->locked ? "locked" : s->suspended ? "suspended" : s->flow_state;
}

static json_t *message_json(const amp_task_log *log, const amp_entry *e,
			    int64_t now_ms)
{
	const json_t *ack = amp_task_ack_of(log, e->id);
	int64_t deadline = amp_message_ack_deadline(e->doc);
	int64_t sent = amp_record_time(e->doc);
	char when[AMP_TIME_BUFSZ];
	json_t *m;

	m = json_pack("{s:s,s:O?,s:O?,s:O?,s:O?,s:b,s:b}", "msg_id", e->id,
		      "type", json_object_get(e->doc, "type"),
		      "from", json_object_get(e->doc, "from"),
		      "to", json_object_get(e->doc, "to"),
		      "timestamp", json_object_get(e->doc, "timestamp"),
		      "requires_ack", json_is_true(json_object_get(e->doc, "requires_ack")),
		      "acked", ack != NULL);
	if (!m)
		return NULL;
	json_object_set_new(m, "acked_at", ack ? json_incref(json_object_get(ack, "timestamp"))
					       : json_null());
	json_object_set_new(m, "acked_by", ack ? json_incref(json_object_get(ack, "from"))
					       : json_null());
	json_object_set_new(m, "ack_deadline",
			    deadline >= 0 ? json_string(amp_time_format(deadline, when))
					  : json_null());
	if (ack) {
		int64_t at = amp_record_time(ack);

		json_object_set_new(m, "ack_state", json_string("acked"));
		json_object_set_new(m, "ack_seconds",
				    at >= 0 && sent >= 0 ? json_integer((at - sent) / 1000)
							 : json_null());
	} else if (deadline < 0) {
		json_object_set_new(m, "ack_state", json_string("not_required"));
		json_object_set_new(m, "ack_seconds", json_null());
	} else {
		/* Seconds left (pending) or past (overdue), rounded toward
		 * the deadline. */
		json_object_set_new(m, "ack_state",
				    json_string(now_ms > deadline ? "overdue" : "pending"));
		json_object_set_new(m, "ack_seconds",
				    json_integer(now_ms > deadline ? (now_ms - deadline) / 1000
								   : (deadline - now_ms) / 1000));
	}
	return m;
}

json_t *amp_task_status_json(const amp_task_log *log, int64_t now_ms)
{
	amp_task_state s;
	json_t *out, *msgs, *escalations, *controls;
	size_t i;

	amp_task_state_compute(log, &s);
	msgs = json_array();
	escalations = json_array();
	controls = json_array();
	for (i = 0; i < log->count; i++) {
		const amp_entry *e = &log->entries[i];

		if (e->kind == AMP_ENTRY_CTL) {
			json_array_append(controls, e->doc);
			continue;
		}
		if (e->kind != AMP_ENTRY_MSG)
			continue;
		json_array_append_new(msgs, message_json(log, e, now_ms));
		if (!strcmp(amp_json_str(e->doc, "type") ? amp_json_str(e->doc, "type") : "",
			    "escalation")) {
			const json_t *p = json_object_get(e->doc, "payload");

			json_array_append_new(escalations,
				json_pack("{s:s,s:O?,s:O?,s:O?,s:O?,s:O?,s:O?,s:O?}",
					  "msg_id", e->id,
					  "timestamp", json_object_get(e->doc, "timestamp"),
					  "from", json_object_get(e->doc, "from"),
					  "escalation_type", json_object_get(p, "escalation_type"),
					  "severity", json_object_get(p, "severity"),
					  "description", json_object_get(p, "description"),
					  "affected_msgs", json_object_get(p, "affected_msgs"),
					  "auto_suspended", json_object_get(p, "auto_suspended")));
		}
	}
	out = json_pack("{s:s,s:s,s:i,s:b,s:b}", "task_id", log->task_id,
			"state", s.state, "reject_count", s.reject_count,
			"suspended", s.suspended, "locked", s.locked);
	json_object_set_new(out, "suspended_by",
			    s.suspended_by ? json_string(s.suspended_by) : json_null());
	json_object_set_new(out, "last_successful_msg_id",
			    s.last_successful_msg_id ? json_string(s.last_successful_msg_id)
						     : json_null());
	json_object_set_new(out, "messages", msgs);
	{
		json_t *bad = json_array();

		for (i = 0; i < log->nbad; i++)
			json_array_append_new(bad, json_pack("{s:s,s:s}",
				"name", log->bad[i].name, "reason", log->bad[i].reason));
		json_object_set_new(out, "unreadable", bad);
	}
	json_object_set_new(out, "escalations", escalations);
	json_object_set_new(out, "controls", controls);
	return out;
}
