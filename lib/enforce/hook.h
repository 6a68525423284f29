/*
 * hook.h - what a git hook checks before history reaches a shared SSOT:
 * the server's pre-receive and the client's pre-push run the same check on
 * every update of a ref under refs/amp/.
 *
 * The SSOT is append-only, so an update of an amp ref is refused when it
 *   - deletes the ref, or is not a fast-forward (old must be an ancestor
 *     of new);
 *   - brings a merge commit (the SSOT keeps a linear history), or a commit
 *     that modifies or deletes a file, or adds anything but a regular file;
 * and, on the messages ref (git config amp.ref), when a new commit adds
 *   - a file that is not "AMP" or a record named
 *     tasks/<YYYY>/<S>/<task_id>/<seq>.<msg|ack|ctl>.<id>.json in its
 *     task's directory, with a sequence number above every older record of
 *     the task;
 *   - a record that is not a JSON object;
 *   - a message that is out of its place (msg_id and task_id not its name
 *     and directory), dispatches to a protected branch
 *     (amp_rules_is_protected_branch), is not schema-valid, reuses a
 *     msg_id, or breaks a write-time rule (amp_rules_check_send) on the
 *     task's history before it, as `amp watch` checks a fetched message;
 *   - an ACK that is not schema-valid, not in place, not by the addressee
 *     of a message already in the SSOT, a second ACK, or an ACK of a
 *     dispatch awaiting the admin's approval;
 *   - a control record that fails the control schema or names another task,
 *     or that the transition table refuses; a round, acked or address
 *     record (protocol/round.h) that names a record its commit does not
 *     write, or that names another instance than the commit's Amp-Agent;
 *   - a superseded marker (amp sync) that does not name the record
 *     committed right after it, in the same commit; the record it sets
 *     aside is checked for its form only (schema and place; a dispatch
 *     set aside is no dispatch, so a protected branch does not refuse it:
 *     amp sync sets aside what only the hub protects).
 * The commits are checked oldest first, each on the history it lands on;
 * the check stops at the first commit refused.
 */
#ifndef AMP_HOOK_H
#define AMP_HOOK_H

#include <git2.h>

#include "base/error.h"
#include "schema/schema.h"
#include "store/store.h"

/*
 * Makes the objects of a push that git holds in quarantine (pre-receive:
 * GIT_QUARANTINE_PATH, given as GIT_OBJECT_DIRECTORY) visible to st's
 * repository, which amp_store_open opened without them.  A no-op when
 * neither is set.
 */
int amp_hook_use_quarantine(amp_store *st, amp_error *err);

/*
 * Checks the update of `ref` from `old_hex` to `new_hex` (40 hex digits;
 * all zeros: the ref is created, or deleted) as described above.  Refs
 * outside refs/amp/ pass.  Appends each problem of the first commit refused
 * to `errors`, its path being the place: "commit <short>: <file>:
 * <JSON pointer>" (or less, for a problem of the ref or the commit), its
 * message the reason.  Returns AMP_OK, AMP_ERULE (refused), AMP_EUSAGE
 * (an id that is no object id) or AMP_EIO (the repository cannot be read).
 * In strict mode a commit below where trust starts on `new_hex` (sign.h,
 * amp_trust) is not refused for its signature.
 */
int amp_hook_check_update(amp_store *st, amp_schema_set *set, const char *ref,
			  const char *old_hex, const char *new_hex,
			  amp_errlist *errors);

/*
 * Checks one commit of `ref` against its first parent (none: the root) as
 * the hook checks each pushed commit, without stopping at the first
 * problem.  Appends each problem to `errors`: its path the file it is
 * about ("" for the commit itself), its message the reason (after the JSON
 * pointer of the value, "<pointer>: <reason>", when there is one), its
 * status AMP_ESCHEMA for a problem of form, which no history makes right
 * (a merge commit, a file modified, deleted or renamed, a file out of its
 * place or not a regular file, a record that is not a well-formed record
 * in its place, a sequence number not above the task's older records, a
 * superseded marker that does not name the record committed after it),
 * AMP_ERULE for a protocol rule that refuses a record on the history
 * before it -- and, when git config amp.allowedSigners is set, a commit
 * that strict mode would refuse (sign.h: not signed, or not by a key of
 * the role it was written as) -- AMP_EIO for what cannot be read.  Returns
 * AMP_OK (no problem), AMP_ERULE (problems appended) or AMP_EIO.
 * `trust` (sign.h; NULL: none) is where trust starts on the ref: a
 * commit below it is not refused for its signature.
 */
int amp_hook_check_commit(amp_store *st, amp_schema_set *set, const char *ref,
			  git_commit *commit, amp_trust *trust, amp_errlist *errors);

/*
 * Checks record i of `log` (read from `tree`, the tip it is in) on the
 * records before it, as the hook checks each record a commit adds: AMP_OK;
 * AMP_ESCHEMA (problems appended to errors) when it is not a well-formed
 * record in its place, whatever came before it (its schema, its msg_id or
 * ack_for and task_id against its name and directory, a dispatch to a
 * protected branch, a reused msg_id); AMP_ERULE when a rule refuses it on
 * that history (amp_rules_check_send, amp_rules_check_ack, the approval
 * path, amp_control_allowed); AMP_EIO when the SSOT cannot be read.  amp
 * sync sets aside what a rule refuses after a join (sync.h).  `agent` is
 * the named instance that wrote the record (the Amp-Agent trailer of the
 * commit that added it; NULL or "": unnamed): a message, an ACK or a
 * heartbeat from the executor on a task another instance holds is refused
 * (coord.h), and a claim, a heartbeat or an executor's release naming
 * another instance than its writer is refused.
 */
int amp_hook_check_record(amp_store *st, amp_schema_set *set, git_tree *tree,
			  const amp_task_log *log, size_t i, const char *agent,
			  amp_errlist *errors);

/* The namespace a hub takes clones' pushes in is AMP_SYNC_INBOX
 * (record/names.h): amp sync pushes there; the hook checks what arrives. */

/* Inbox ref `name` (AMP_SYNC_INBOX "<id>/<ref>", <id> of [A-Za-z0-9_-]
 * {1,64}): the ref of st it takes, refs/amp/<ref> (cut to 200 bytes of
 * <ref>), into target: 0; -1 when name is no inbox ref, -2 when target is
 * neither st's messages ref nor its errors ref.  What the hook admits and
 * the hub's join takes. */
#define AMP_INBOX_TARGET_MAX 300
int amp_hook_inbox_target(amp_store *st, const char *name, char target[AMP_INBOX_TARGET_MAX]);

/* The first line after "#!/bin/sh" of every hook amp installs, followed by
 * ": <command>" (the amp-hook command it runs): how amp_hook_install knows
 * a hook is its own, and which. */
#define AMP_HOOK_MARKER "# Installed by amp hook install"

/*
 * Installs the hook that runs `amp-hook <command>`: "pre-receive" and
 * "pre-push" (the SSOT's check), "pre-commit", "pre-merge-commit" and
 * "work-pre-push" (the work repository's guard, installed as pre-commit,
 * pre-merge-commit and pre-push), in the
 * hooks directory of st's repository (git config core.hooksPath, else
 * <git dir>/hooks): a sh script that runs `program hook command` with the
 * hook's arguments and stdin, `program` being the absolute path of the amp
 * driver (bin/amp, built or installed: the amp-<name> links live in
 * <prefix>/libexec/amp once installed, never next to it).  A hook
 * already there that is not amp's, or is amp's running another command, is
 * kept as <name>.amp-chained and runs first, on the same stdin; when it
 * fails, the hook fails.  Installing again rewrites amp's script only (it
 * never chains to itself).  The script's path goes to path (of pathsz
 * bytes); *chained is set to 1 when a hook is chained.  AMP_EUSAGE for an
 * unknown command; AMP_EIO when a file cannot be written, or when a hook to
 * chain and an .amp-chained one are both there (moving one would lose the
 * other).
 */
int amp_hook_install(amp_store *st, const char *command, const char *program,
		     char *path, size_t pathsz, int *chained, amp_error *err);

#endif
