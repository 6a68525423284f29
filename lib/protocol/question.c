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

/* The answer record of question `name` in log, or NULL. */
static const amp_entry *answer_of(const amp_task_log *log, const char *name)
{
	size_t i;

	for (i = 0; i < log->count; i++)
		if (is_ctl(&log->entries[i], "answer") &&
		    !strcmp(amp_or_none(amp_json_str(log->entries[i].doc, "answers")), name))
			return &log->entries[i];
	return NULL;
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
			answer = json_pack("{s:s,s:s?,s:s?,s:s?,s:s?}", "record", a->id,
					   "from", amp_json_str(a->doc, "from"),
					   "agent", amp_json_str(a->doc, "agent"),
					   "answer", amp_json_str(a->doc, "answer"),
					   "timestamp", amp_json_str(a->doc, "timestamp"));
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

int amp_question_check_record(const amp_task_log *before, const json_t *doc,
			      char *why, size_t whysz)
{
	const char *type = amp_json_str(doc, "type"), *name = amp_json_str(doc, "answers");
	const amp_entry *q, *a;

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
