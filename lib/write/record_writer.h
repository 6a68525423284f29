/*
 * record_writer.h - the record writer: what every writer of write/ (send,
 * control, coordination, register, verdict, import, guard) and the layers
 * above (watch, sync) use to add a record to a commit, an escalation by
 * system in the same commit, and a refusal to the error log.  The bottom
 * of write/: it calls no other file of the folder.
 */
#ifndef AMP_RECORD_WRITER_H
#define AMP_RECORD_WRITER_H

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"
#include "schema/schema.h"
#include "store/store.h"
#include "protocol/protocol.h"

typedef struct amp_send_opts {
	const char *command; /* for the error log: "send", "ack", ... */
	const char *source;  /* where the bytes came from: a file, "-", "built" */
	const char *raw;     /* the bytes as received (NULL: the dump of msg) */
	size_t raw_len;
	/* The msg_id was made by amp: when taken (same type, task and
	 * millisecond), move on to the next free millisecond instead of
	 * refusing. */
	int assign_msg_id;
	/* --idempotency-key: a retry of the same key with the same content
	 * (the message but its msg_id and timestamp) returns the msg_id of
	 * the first write instead of writing again; other content under the
	 * key is refused.  NULL: none.  The key is kept in the task as a
	 * control record (type idempotency_key). */
	const char *idempotency_key;
	/* The input's size when raw is only its first bytes (a file past the
	 * size limit, amp_store_log_rejection); 0: raw_len. */
	size_t raw_total;
	/* amp send --to NAME@ROLE: the one instance of the addressee role the
	 * message is for, kept as an "address" control record in the same
	 * commit (the envelope's "to" stays the role).  NULL: every instance
	 * of the role. */
	const char *to_agent;
} amp_send_opts;

typedef struct amp_send_result {
	char msg_id[256];    /* the id the message was stored under */
	int duplicate;       /* it was already there, byte for byte */
	char escalation_id[256]; /* an escalation amp recorded ("" if none):
				  * a branch_violation or permission_denied
				  * after a refusal, or written in the same
				  * commit as the message: the
				  * hallucination_lock its rejecting verdict
				  * reaches, the ack_timeout of a late ACK */
	char escalation_type[32]; /* its escalation_type */
} amp_send_result;

/*
 * For build callbacks: adds `doc`, dumped as amp stores records, to `w` as
 * the next record of the task whose log is `log`, named after kind and id.
 */
int amp_write_add_record(amp_store_write *w, const amp_task_log *log,
			 amp_entry_kind kind, const char *id, const json_t *doc,
			 amp_error *err);

/*
 * For build callbacks: an escalation by system to the admin, written in
 * the same commit as the record that caused it.  `log` holds every record of
 * the task that commit writes before it, and gives the snapshot; the
 * msg_id is the first free one from now_ms on.  Added to w as the next
 * record (seq log->next_seq); its id and type go to res->escalation_*, and
 * the escalation itself to *out (a new reference) when out is not NULL.
 */
int amp_write_add_escalation(amp_schema_set *set, amp_store_write *w,
			     const amp_task_log *log, const char *type,
			     const char *severity, const char *description,
			     json_t *affected, json_t *suggested, int64_t now_ms,
			     amp_send_result *res, json_t **out, amp_error *err);

/*
 * For build callbacks: AMP/1.0 §05 hallucination_lock at write time.  When
 * `log` (the task with every record of this commit, the rejecting verdict
 * `verdict_id` last among them) has its rejects since the last resume at or
 * past amp.lockThreshold and no lock in force, adds the lock escalation
 * (critical, affected [verdict, latest dispatch]) to w, and to *out as
 * amp_write_add_escalation does.  `state`: log's state when the caller has
 * it (amp_task_fold_to), else NULL.
 */
int amp_write_add_lock_if_due(amp_schema_set *set, amp_store_write *w,
			      const amp_task_log *log, const amp_task_state *state,
			      const char *verdict_id, int64_t now_ms, amp_send_result *res,
			      json_t **out, amp_error *err);

/* Reports the first error of `errors` from index base on through err
 * (status `status`; "refused" when there is none), for the store: what a
 * build callback returns after a refusal it listed. */
int amp_write_first_error(amp_errlist *errors, size_t base, int status,
			  amp_error *err);

/* AMP/1.0 §05 system_state_snapshot of escalation `msg`, from `log`, the
 * task it goes into (inside the compare-and-swap): replaces the payload's
 * snapshot with the state the escalation puts the task in. */
void amp_write_fill_snapshot(json_t *msg, const amp_task_log *log);

/*
 * Writes a refused record to the error log: its raw bytes (opts->raw, or
 * the dump of msg) and the errors of `errors` from index `base` on.  When
 * the log cannot be written, says so in `errors` rather than losing it.
 */
void amp_write_log_rejection(amp_store *st, const amp_send_opts *opts,
			     const json_t *msg, int status, amp_errlist *errors,
			     size_t base);

/*
 * The write of a command's one record, then the error log of its refusal:
 * the one sequence amp's control records, coordination records and
 * register records share.  When `status` (what the command's own checks
 * decided) is AMP_OK, commits with build(ctx) on the messages ref; a
 * failure build listed no reason for (errors past base) gets the store's.
 * A refusal (AMP_ERULE, AMP_ESCHEMA: a lost race is no non-conforming
 * record) then goes to the error log as `command`'s: *built, the record of
 * the last attempt, when there is one, else asked(ctx), a new reference to
 * what was asked for; when both built and asked are NULL, nothing is
 * logged.  Returns the status (AMP_NOOP from build included).
 */
int amp_write_logged(amp_store *st, int status, const char *command,
		     amp_store_build_fn build, void *ctx, json_t *const *built,
		     json_t *(*asked)(void *ctx), amp_errlist *errors, size_t base);

#endif
