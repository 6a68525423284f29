/*
 * guard.h - the work repository's guard: the pre-commit and pre-push hooks
 * that `amp hook install --work` puts in the repository a dispatch names.
 *
 * AMP/1.0 lists branch_violation as "Executor tries to operate the main
 * branch", and No Auto-Merge says the executor never merges: an agent's
 * work reaches a protected branch (main, master, git config
 * amp.protectedBranches, as Branch Validation decides) only through review
 * and a human.  So while an agent role is set (AMP_ROLE, else git config
 * amp.role of the work repository; any role but the admin, who is a human)
 * a commit on, or a push to, a protected branch is refused, and the
 * refusal is recorded as a branch_violation escalation in the SSOT, for the
 * task the agent works on.
 */
#ifndef AMP_GUARD_H
#define AMP_GUARD_H

#include "base/error.h"
#include "schema/schema.h"
#include "send.h"
#include "store/store.h"

/*
 * 1 when `ref` ("refs/heads/<branch>") names a protected branch: main,
 * master, or a name of git config amp.protectedBranches of the work
 * repository or of the SSOT (either may be NULL), as
 * amp_refname_is_protected decides.  Refs outside refs/heads/ are no
 * branch: 0.
 */
int amp_guard_is_protected(amp_store *work, amp_store *ssot, const char *ref);

/* The branch HEAD of work is on ("refs/heads/main", also when it has no
 * commit yet) into buf, or "" when HEAD is detached.  AMP_EIO when HEAD
 * cannot be read. */
int amp_guard_head(amp_store *work, char *buf, size_t bufsz, amp_error *err);

/*
 * Opens the SSOT named by git config amp.ssot of the work repository: the
 * path of a repository holding it (a local clone of the hub; relative to
 * the work tree; "file://" is allowed), which must hold the messages ref.
 * A remote URL (scheme://..., [user@]host:path) is refused: the hook writes
 * into a repository on this machine, and `amp sync` delivers from there.
 * *ssot is freed with amp_store_free.  AMP_EUSAGE when amp.ssot is unset or
 * a URL, AMP_EIO when it cannot be opened.
 */
int amp_guard_open_ssot(amp_store *work, amp_store **ssot, amp_error *err);

/*
 * The task the agent works on, into task: $AMP_TASK when set (a task id
 * that has records in the SSOT), else the task of the open dispatch for
 * this repository: the latest task_dispatch (by timestamp) whose
 * payload.repo is the work tree (compared by realpath) in a task that is
 * neither approved nor aborted.  The dispatch's msg_id (for AMP_TASK: the
 * task's latest dispatch; "" when it has none) goes to dispatch.  AMP_EUSAGE
 * when no task is found, AMP_EIO when the SSOT cannot be read.
 */
int amp_guard_find_task(amp_store *ssot, amp_store *work, char *task, size_t tasksz,
			char *dispatch, size_t dispatchsz, amp_error *err);

/*
 * Records one branch_violation escalation in task of the SSOT: by system
 * (the hook, not the agent, writes it), triggered_by `role`, severity
 * warning like the one `amp send` records for a dispatch to main (the act
 * was refused, nothing reached the branch), affecting `dispatch` (may be
 * ""), saying that `role` tried to `act` ("commit on", "push to") the
 * protected `branches` of the work tree.  Statuses and res as
 * amp_send_escalation.
 */
int amp_guard_record(amp_store *ssot, amp_schema_set *set, amp_store *work,
		     const char *task, const char *dispatch, const char *role,
		     const char *act, const char *branches, amp_send_result *res,
		     amp_errlist *errors);

#endif
