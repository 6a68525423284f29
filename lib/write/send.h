/*
 * send.h - the message path: a message (or an ACK) goes through the
 * schema, then the protocol rules, then into the SSOT; whatever is rejected
 * goes to the error log with its reasons.
 */
#ifndef AMP_SEND_H
#define AMP_SEND_H

#include <jansson.h>

#include "base/error.h"
#include "schema/schema.h"
#include "store/store.h"
#include "record_writer.h"

/*
 * Validates and commits `msg` (modified in place when its msg_id is
 * reassigned).  Returns AMP_OK (stored, or an identical duplicate),
 * AMP_ESCHEMA or AMP_ERULE (every reason in `errors`, the message logged on
 * the errors ref), or AMP_EIO (the reason in errors too).
 *
 * The schema comes first: nothing is written for a message that fails
 * it, except that a dispatch whose only fault is a protected branch
 * (AMP/1.0 §01 Branch Validation: main, master, git config
 * amp.protectedBranches) is refused with AMP_ERULE and a branch_violation
 * escalation is recorded by system.  A dispatch's repo is checked on this
 * machine unless git config amp.checkRepo is false.  A timestamp further
 * than amp.maxClockSkew from this machine's clock is refused.  A rejecting
 * verdict that brings the task's rejects since the last resume to
 * amp.lockThreshold is committed with the hallucination_lock escalation
 * (res->escalation_id): the task is locked the instant the verdict lands.
 * A task_result for a dispatch awaiting the admin's approval is refused
 * and a permission_denied escalation recorded.
 */
int amp_send_message(amp_store *st, amp_schema_set *set, json_t *msg,
		     const amp_send_opts *opts, amp_send_result *res,
		     amp_errlist *errors);

/*
 * Writes the ACK of msg_id by role `from` at now_ms.  Only the addressee
 * may ACK; a second ACK is a no-op (res->duplicate); an unknown msg_id is
 * refused, and so is the ACK of a dispatch awaiting the admin's approval
 * (a permission_denied escalation is recorded, once per dispatch).  An ACK
 * after its deadline is the truth: it is written, with the ack_timeout
 * escalation in the same commit unless the message has one already.
 * Statuses as amp_send_message.
 */
int amp_send_ack(amp_store *st, amp_schema_set *set, const char *msg_id,
		 const char *from, int64_t now_ms, amp_send_result *res,
		 amp_errlist *errors);

/*
 * Reads the JSON document a command was handed (a --payload or --envelope
 * file, "-" for stdin).  Returns AMP_OK with *doc (the caller frees it) and,
 * when `raw` is not NULL, the bytes as read in *raw / *raw_len (the caller
 * frees them).  Otherwise the reason is in `errors`: AMP_EIO when the file
 * cannot be read; AMP_ESCHEMA when it is not JSON or is past the size or
 * depth bound (bounds.h; read no further than one byte past the size
 * limit), named at `pointer` or below it, and its bytes go to the error log
 * like any rejected message.
 */
int amp_send_read_json(amp_store *st, const char *command, const char *file,
		       const char *pointer, json_t **doc, char **raw,
		       size_t *raw_len, amp_errlist *errors);

/*
 * amp import's step (import.h): `rec`, a whole message envelope or an ACK
 * record (type "ack", exactly as amp ack writes it), checked and added to
 * `w` as amp send --envelope or amp ack would write it on `tip` (the tree
 * the records before it left), with its own timestamp as the commit's
 * author time: the schema, the bounds, every write-time rule, the lock,
 * conflict and ack_timeout escalations amp adds in the same commit.  What
 * differs from a send: the clock-skew rule is replaced by "no later than
 * now_ms + amp.maxClockSkew, and no earlier than any record of its task";
 * a refusal records nothing (no error log, no escalation); `check_repo` is
 * git config amp.checkRepo.  Returns AMP_OK (w filled), AMP_NOOP (already
 * in the SSOT as it is: res->duplicate), or the status of the first
 * failure with its reasons in `errors`.
 */
int amp_send_import_record(amp_store *st, amp_schema_set *set, git_tree *tip,
			   json_t *rec, int check_repo, int64_t now_ms,
			   amp_store_write *w, amp_send_result *res,
			   amp_errlist *errors, amp_error *err);

/* What amp_send_escalation needs; the snapshot is taken from the SSOT. */
typedef struct amp_escalation {
	const char *task_id;
	const char *from;           /* the role writing it */
	const char *escalation_type;
	const char *severity;       /* critical | warning | info */
	const char *triggered_by;   /* NULL: same as from (system for admin) */
	const char *description;
	json_t *affected_msgs;      /* borrowed array of msg_ids */
	json_t *suggested_actions;  /* borrowed array, or NULL */
	int auto_suspended;         /* -1: for the system, true when critical
				     * (amp suspends the task then only); for
				     * an agent, true unless severity is info */
	/* Fire once per cause: do nothing when the task already holds an
	 * escalation of this type from the same role with the same cause
	 * (amp_escalation_cause: the record named by the description, else
	 * the first affected message).  Checked inside the compare-and-swap,
	 * so two watchers racing still record one. */
	int once;
} amp_escalation;

/*
 * Builds an escalation to the admin and sends it like amp_send_message,
 * timestamped with the clock (amp_clock_now_ms, AMP_NOW when set) at the
 * write, whatever the caller was doing before;
 * its system_state_snapshot (task_status, reject_count,
 * last_successful_msg_id) is read from the SSOT inside the
 * compare-and-swap, so it is the state the escalation is committed on.  `extra_trailers` (may be NULL) are
 * added to the commit, e.g. "Amp-Cause: ..." lines for the watcher.
 */
int amp_send_escalation(amp_store *st, amp_schema_set *set,
			const amp_escalation *e, const char *extra_trailers,
			amp_send_result *res, amp_errlist *errors);
#endif
