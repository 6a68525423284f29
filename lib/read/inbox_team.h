/*
 * inbox_team.h - what a team reports to a role beside its messages (issue
 * 33): the coordinator's inbox shows the executors' progress reports
 * (SPEC-022 task_progress, amp progress) and their clarification questions
 * not answered yet (amp ask), each with its answer deadline; the
 * executor's inbox shows the answers to its questions (amp answer).  All
 * are control records, not AMP/1.0 messages, so they need no ACK.
 */
#ifndef AMP_INBOX_TEAM_H
#define AMP_INBOX_TEAM_H

#include <stdint.h>

#include "base/error.h"
#include "store/store.h"
#include "inbox.h"

/*
 * Fills in->team for `role` at in->tip, from the tasks not finished (or
 * task `task` only, when not NULL): from in->reports, the open tasks'
 * reports amp_inbox_read kept (in inbox.json, for each task not finished
 * that reports anything, amp_summary_team_reports of the log it read
 * when the task changed: task id -> {"task_id", "progress", "questions",
 * "released"}; with --all, from the logs it read); with `task`, one they
 * hold nothing of from that task's records alone.  The status cache is
 * not read: the inbox's one cache of the reports is inbox.json.
 *   - coordinator: {"progress": [{"task_id", "agent", "subtask_id",
 *     "percent", "note", "timestamp", "record"}] (each holder's latest),
 *     "questions": [{"task_id", "record", "agent", "subtask_id",
 *     "question", "asked", "answer_due", "due_seconds"}] (unanswered)};
 *   - executor: {"answers": [a question object with its "answer"]}: the
 *     questions answered, those asked by instance `agent` only when it is
 *     not NULL; "released": [coord.h amp_coord_released_json]: the
 *     leases someone else released and their holder (`agent`, when not
 *     NULL) did not claim again (the holder told at release time);
 *   - other roles: in->team stays NULL.
 * AMP_OK, or AMP_EIO with err filled.
 */
int amp_inbox_team(amp_store *st, const char *role, const char *agent, const char *task,
		   int64_t now_ms, amp_inbox *in, amp_error *err);

/* Whether the team reports anything to `role` (coordinator, executor). */
int amp_inbox_team_role(const char *role);

/* The team's reports as inbox.json keeps them (`text`: a JSON object, see
 * amp_inbox_team above), parsed: a new object, or NULL when text is
 * NULL or does not read back as one. */
json_t *amp_inbox_team_load(const char *text);

#endif
