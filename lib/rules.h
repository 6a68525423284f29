/*
 * rules.h - the AMP/1.0 rules a schema cannot express, checked when a
 * message is about to enter the SSOT.
 */
#ifndef AMP_RULES_H
#define AMP_RULES_H

#include <jansson.h>

#include "store.h"
#include "task.h"

/*
 * Checks a schema-valid message against the SSOT at `tip`, given the log
 * of its own task.  Appends one error per broken rule (JSON pointer of the
 * field, and the rule) and returns AMP_OK or AMP_ERULE (AMP_EIO when the
 * SSOT cannot be read).  Who may write each type to whom is the schema's
 * (message.schema.json), checked before this.  The rules:
 *   - msg_id is "{type}-{task_id}-{unix_ms}" of this very message;
 *   - Context Completeness: context_ref, original_dispatch_ref and
 *     task_result_ref name messages in the SSOT, and the payload's
 *     references belong to the envelope's task;
 *   - a task_result answers a subtask of a dispatch of its task, with one
 *     criteria_met entry per acceptance criterion of that dispatch;
 *   - Critical = Suspend All: while a critical escalation is in force, only
 *     the admin (and escalations to the admin) may write to the task;
 *   - review_request: reject_count equals the SSOT's count, "Lock is
 *     approaching" in coordinator_notes when it is >= 2, and no failed CI.
 */
int amp_rules_check_send(amp_store *st, git_tree *tip, const amp_task_log *log,
			 const json_t *msg, amp_errlist *errors);

/* AMP/1.0 §01 Branch Validation: 1 when msg is a task_dispatch whose
 * payload branch is "main" or "master". */
int amp_rules_is_protected_branch(const json_t *msg);

#endif
