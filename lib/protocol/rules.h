/*
 * rules.h - the AMP/1.0 rules a schema cannot express, checked when a
 * message is about to enter the SSOT.
 */
#ifndef AMP_RULES_H
#define AMP_RULES_H

#include <jansson.h>

#include "store/store.h"
#include "task.h"

/* How far the unix_ms of a msg_id may be from its timestamp. */
#define AMP_RULES_MSG_ID_SKEW_MS 60000

/*
 * Checks a schema-valid message against the SSOT at `tip`, given the log
 * of its own task.  Appends one error per broken rule (JSON pointer of the
 * field, and the rule) and returns AMP_OK or AMP_ERULE (AMP_EIO when the
 * SSOT cannot be read).  Who may write each type to whom is the schema's
 * (message.schema.json), checked before this.  The rules:
 *   - msg_id is "{type}-{task_id}-{unix_ms}" of this very message, its
 *     unix_ms within AMP_RULES_MSG_ID_SKEW_MS of the timestamp;
 *   - Context Completeness: context_ref, original_dispatch_ref and
 *     task_result_ref name messages in the SSOT, and the payload's
 *     references belong to the envelope's task;
 *   - a task_dispatch has unique subtask_ids;
 *   - the transition table (task.h): every subtask a dispatch lists may be
 *     dispatched; a task_result answers a subtask that takes one (its
 *     dispatch ACKed and approved when it had to be; not in review,
 *     approved or rejected), with one criteria_met entry per acceptance
 *     criterion of that dispatch; a review_request names the current round
 *     of a submitted subtask (its dispatch, its latest result, complete),
 *     and asks for an incremental review only of a subtask that had a
 *     verdict before;
 *     a review_verdict answers an open review_request (named in
 *     context_ref, or the only one open), with one criteria_results entry
 *     per acceptance criterion of the dispatch under review;
 *   - an aborted task takes only the admin's writes (and system's
 *     escalations), and the admin's dispatch reopens it (task.h); a task
 *     due to lock (amp.lockThreshold reached) is treated as locked;
 *   - an escalation's affected_msgs are in the SSOT and its snapshot is
 *     the SSOT's (reject_count, last_successful_msg_id; task_status the
 *     task's state, or suspended/locked when it is critical);
 *   - Critical = Suspend All: while a critical escalation is in force, only
 *     the admin (and escalations to the admin) may write to the task;
 *   - review_request: reject_count equals the SSOT's count, "Lock is
 *     approaching" in coordinator_notes when it is >= 2, and no failed CI
 *     (amp_rules_ci_failed);
 *   - a task another instance holds takes no executor message but its
 *     holder's (amp_coord_check_write): `agent` is the named instance that
 *     writes msg (NULL: an unnamed one) -- the writer's own for amp send,
 *     the Amp-Agent trailer of the commit that brought it for a record
 *     written elsewhere, never the reader's; and a task_result from an
 *     instance whose lease someone else released is refused until it
 *     claims again (amp_coord_check_result).
 * It does not look at the file system: the watcher runs it on messages
 * fetched from other machines.  Repository existence is amp_rules_check_repo.
 */
int amp_rules_check_send(amp_store *st, git_tree *tip, const amp_task_log *log,
			 const json_t *msg, const char *agent, amp_errlist *errors);
/* The same with log's state when the caller has it (NULL: computed). */
int amp_rules_check_send_in(amp_store *st, git_tree *tip, const amp_task_log *log,
			    const amp_task_state *state, const json_t *msg, const char *agent,
			    amp_errlist *errors);

/*
 * amp_rules_check_send for a message written elsewhere (a push, a fetch, a
 * join): the same rules but one.  An escalation's system_state_snapshot
 * says what its writer's SSOT was; it is checked when the escalation is
 * written, and records another clone wrote meanwhile may come before it
 * here without making it false.  `state`: before's state when the
 * caller has it (amp_task_fold_to), else NULL.
 */
int amp_rules_check_replayed(amp_store *st, git_tree *tree, const amp_task_log *before,
			     const amp_task_state *state, const json_t *msg, const char *agent,
			     amp_errlist *errors);

/*
 * Issue 33, abort mid-review: when `msg` (by a role other than the admin or
 * system) is refused because its task is aborted, the escalation the admin
 * gets once (a `conflict` from system): its description into desc and the
 * msg_id of the task's last dispatch, its cause (the admin hears once per
 * abort, whoever keeps writing), into cause.  Returns 1, or 0 when msg is
 * not refused for that.
 */
int amp_rules_aborted_refusal(const amp_task_log *log, const json_t *msg,
			      char *desc, size_t descsz, char *cause, size_t causesz);

/*
 * The rules `amp ack` applies, for an ACK record that is entry i of `log`
 * (a fetched or pushed one): it is in its place (amp_task_entry_in_place),
 * acknowledges a message that is in the SSOT before it, comes from that
 * message's addressee, and is the first ACK of it.  Appends one error (JSON
 * pointer and reason) per broken rule; AMP_OK or AMP_ERULE.  The approval
 * path is amp_rules_unapproved_dispatch's.
 */
int amp_rules_check_ack(const amp_task_log *log, size_t i, amp_errlist *errors);

/*
 * AMP/1.0 §01 risk_level "determines the approval path": the msg_id of the
 * dispatch awaiting the admin's approval that `msg` (a task_result) or an
 * ACK of `ack_for` (when not NULL) acts on; or, for `msg` a task_dispatch
 * not by the admin at a risk level that needs no approval, the current
 * dispatch of one of its subtasks whose level needs it (the re-dispatch
 * would lower the level out of the approval path).  NULL when none.  Such
 * an act is beyond what the task's risk level allows (permission_denied).
 * `state` is the log's state when the caller has it (NULL: computed here).
 * Returns static storage.
 */
const char *amp_rules_unapproved_dispatch(const amp_task_log *log, const amp_task_state *state,
					  const json_t *msg, const char *ack_for);

/*
 * AMP/1.0 §01 repo "must exist .git": for a task_dispatch, its repo is a
 * directory on this machine holding .git (a directory or a gitfile).
 * AMP_OK (also for other types) or AMP_ERULE with the reason in errors.
 */
int amp_rules_check_repo(const json_t *msg, amp_errlist *errors);

/*
 * AMP/1.0 §01 Branch Validation: 1 when msg is a task_dispatch whose
 * payload branch is a valid git branch name that spells main, master or a
 * name of git config amp.protectedBranches (read from st when not NULL),
 * as amp_refname_is_protected decides.
 */
int amp_rules_is_protected_branch(amp_store *st, const json_t *msg);

/*
 * The schema comes before any rule, with one exception: 1 when msg is a
 * dispatch to a protected branch (amp_rules_is_protected_branch) whose
 * schema errors, those of `schema_errors` from index `base` on, are all
 * at /payload/branch (the schema states main/master too).  Such a message
 * gets the Branch Validation refusal and escalation; any other schema
 * error makes it a non-conforming message, which no rule looks at.
 */
int amp_rules_branch_refusal(amp_store *st, const json_t *msg,
			     const amp_errlist *schema_errors, size_t base);

/*
 * AMP/1.0 §03 CI Gating: 1 when a ci_status value means the CI failed:
 * after trimming whitespace, one of fail, failed, failure, failing, error,
 * errored, broken, timed_out, timedout, timeout, ignoring case.
 */
int amp_rules_ci_failed(const char *state);

#endif
