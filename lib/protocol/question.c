#include "question.h"

#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/util.h"
#include "record/record.h"
#include "task.h"

/* 1 when control record e is of `type`. */
static int is_ctl(const amp_entry *e, const char *type)
{
	const char *t = amp_json_str(e->doc, "type");

	return e->kind == AMP_ENTRY_CTL && t && !strcmp(t, type);
}

/* The control record of `type` whose `field` names `name` in log (an
 * answer of a question, the answer_ack of an answer), or NULL. */
static const amp_entry *naming(const amp_task_log *log, const char *type, const char *field,
			       const char *name)
{
	size_t i;

	for (i = 0; i < log->count; i++)
		if (is_ctl(&log->entries[i], type) &&
		    !strcmp(amp_or_none(amp_json_str(log->entries[i].doc, field)), name))
			return &log->entries[i];
	return NULL;
}

#define answer_of(log, name) naming((log), "answer", "answers", (name))
#define ack_of(log, name) naming((log), "answer_ack", "acks", (name))

/* The answer object of amp_questions_json for answer record a. */
static json_t *answer_json(const amp_task_log *log, const amp_entry *a)
{
	const amp_entry *k = ack_of(log, a->id);
	json_t *timeout = json_object_get(a->doc, "ack_timeout_sec");
	int64_t at = amp_record_time(a->doc);
	char due[AMP_TIME_BUFSZ];

	return json_pack("{s:s,s:s?,s:s?,s:s?,s:s?,s:s?,s:s?}", "record", a->id,
			 "from", amp_json_str(a->doc, "from"),
			 "agent", amp_json_str(a->doc, "agent"),
			 "answer", amp_json_str(a->doc, "answer"),
			 "timestamp", amp_json_str(a->doc, "timestamp"),
			 "ack_due", json_is_integer(timeout) && at >= 0 ?
				amp_time_format(at + json_integer_value(timeout) * 1000, due) : NULL,
			 "acked", k ? amp_json_str(k->doc, "timestamp") : NULL);
}

json_t *amp_questions_json(const amp_task_log *log)
{
	json_t *out = json_array();
	size_t i;

	for (i = 0; out && i < log->count; i++) {
		const amp_entry *e = &log->entries[i], *a;
		int64_t asked = amp_record_time(e->doc);
		json_t *timeout = json_object_get(e->doc, "ack_timeout_sec"), *answer = json_null();
		char due[AMP_TIME_BUFSZ];

		if (!is_ctl(e, "question") || asked < 0 || !json_is_integer(timeout) ||
		    !amp_json_str(e->doc, "question"))
			continue;
		if ((a = answer_of(log, e->id)))
			answer = answer_json(log, a);
		json_array_append_new(out, json_pack("{s:s,s:s,s:s?,s:s?,s:s,s:s?,s:s,s:o}",
			"task_id", log->task_id, "record", e->id,
			"agent", amp_json_str(e->doc, "agent"),
			"subtask_id", amp_json_str(e->doc, "subtask_id"),
			"question", amp_json_str(e->doc, "question"),
			"asked", amp_json_str(e->doc, "timestamp"),
			"answer_due", amp_time_format(asked + json_integer_value(timeout) * 1000, due),
			"answer", answer ? answer : json_null()));
	}
	return out;
}

/* amp_question_check_record for an answer_ack: it acknowledges an answer
 * of the task not acknowledged yet, by the instance that asked (when the
 * question names one). */
static int check_ack(const amp_task_log *before, const json_t *doc, char *why, size_t whysz)
{
	const char *name = amp_json_str(doc, "acks"), *asker, *agent = amp_json_str(doc, "agent");
	const amp_entry *a = name ? amp_task_log_find(before, AMP_ENTRY_CTL, name) : NULL, *q, *k;

	if (!a || !is_ctl(a, "answer")) {
		snprintf(why, whysz, "task %s holds no answer %s", before->task_id, amp_or_none(name));
		return AMP_ERULE;
	}
	if ((k = ack_of(before, name))) {
		snprintf(why, whysz, "answer %s of task %s is acknowledged already (%s)", name,
			 before->task_id, k->id);
		return AMP_ERULE;
	}
	q = amp_task_log_find(before, AMP_ENTRY_CTL, amp_or_none(amp_json_str(a->doc, "answers")));
	asker = q ? amp_json_str(q->doc, "agent") : NULL;
	if (asker && (!agent || strcmp(agent, asker))) {
		snprintf(why, whysz, "answer %s of task %s is acknowledged by %s, who asked, not %s",
			 name, before->task_id, asker, agent ? agent : "an unnamed executor");
		return AMP_ERULE;
	}
	return AMP_OK;
}

int amp_question_check_record(const amp_task_log *before, const json_t *doc,
			      char *why, size_t whysz)
{
	const char *type = amp_json_str(doc, "type"), *name = amp_json_str(doc, "answers");
	const amp_entry *q, *a;

	if (type && !strcmp(type, "answer_ack"))
		return check_ack(before, doc, why, whysz);
	if (!type || strcmp(type, "answer"))
		return AMP_OK;
	q = name ? amp_task_log_find(before, AMP_ENTRY_CTL, name) : NULL;
	if (!q || !is_ctl(q, "question")) {
		snprintf(why, whysz, "task %s asked no question %s", before->task_id,
			 amp_or_none(name));
		return AMP_ERULE;
	}
	if ((a = answer_of(before, name))) {
		snprintf(why, whysz, "question %s of task %s is answered already (%s)", name,
			 before->task_id, a->id);
		return AMP_ERULE;
	}
	return AMP_OK;
}
