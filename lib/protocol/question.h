/*
 * question.h - SPEC-022 feedback between the executor and the coordinator
 * (issue 33): clarification questions and their answers, as control
 * records (control.schema.json) beside AMP/1.0's five message types:
 *
 *   question  {"type":"question", "from":"executor", "agent":NAME?,
 *              "subtask_id":S?, "question":TEXT, "ack_timeout_sec":N}
 *              the executor asks; the coordinator owes an answer within
 *              N seconds (its ACK deadline)
 *   answer    {"type":"answer", "from":coordinator|admin, "agent":NAME?,
 *              "answers":"question-<unix_ms>", "answer":TEXT,
 *              "ack_timeout_sec":N?}
 *              the answer, at most one per question; the asker owes its
 *              acknowledgement within N seconds
 *   answer_ack {"type":"answer_ack", "from":"executor", "agent":NAME?,
 *              "acks":"answer-<unix_ms>"}
 *              the asker (the instance the question names) acknowledges
 *              the answer, once (amp ask --ack)
 */
#ifndef AMP_QUESTION_H
#define AMP_QUESTION_H

#include <jansson.h>
#include <stdint.h>

#include "store/store.h"

#define AMP_QUESTION_TIMEOUT_DEFAULT 3600 /* an hour to answer */

/* The questions of the task, oldest first: [{"task_id", "record", "agent"
 * (or null), "subtask_id" (or null), "question", "asked", "answer_due",
 * "answer" (null, or {"record", "from", "agent" (or null), "answer",
 * "timestamp", "ack_due" (or null), "acked" (the answer_ack's time, or
 * null)})}], times as ISO 8601.  New reference. */
json_t *amp_questions_json(const amp_task_log *log);

/* For an answer record `doc` that arrives or is written after `before`:
 * AMP_OK when it answers a question of before that has no answer yet; for
 * an answer_ack, when it acknowledges an answer of before not acknowledged
 * yet, as the instance that asked; else AMP_ERULE with the reason in why.
 * Other records pass. */
int amp_question_check_record(const amp_task_log *before, const json_t *doc,
			      char *why, size_t whysz);

#endif
