/*
 * coord_write.h - writing the coordination records of protocol/coord.h:
 * claims, releases (and amp watch's expiry of a lease), dependencies,
 * plans (and amp watch's deadline escalation).  Each is decided inside the
 * store's compare-and-swap, on the tip it lands on, by the replay of
 * protocol/coord.h; a refusal goes to the error log.
 */
#ifndef AMP_COORD_WRITE_H
#define AMP_COORD_WRITE_H

#include <stdint.h>

#include "base/error.h"
#include "protocol/protocol.h"
#include "schema/schema.h"
#include "store/store.h"

/* What a claim or a release did. */
typedef struct amp_coord_result {
	char name[64];                /* the record written */
	char holder[AMP_AGENT_MAX + 1]; /* claim refused: who holds it */
	char claim[64];               /* release: the claim released */
	char agent[AMP_AGENT_MAX + 1]; /* release: whose lease it was */
	int64_t expires_ms;           /* claim: when the lease runs out (or the
				       * holder's, when refused) */
	int renewed;                  /* claim: the holder claimed again */
	char escalation_id[256];      /* expire: the escalation written, or "" */
} amp_coord_result;

/*
 * `agent` (from the executor) claims task_id, or its subtask (NULL: the
 * whole task), for ttl_sec seconds at now_ms: the task must have a
 * dispatch (the subtask must be one of it, not approved) and must not be
 * closed to the executor (aborted, suspended, locked).  Decided inside the
 * compare-and-swap: AMP_OK (res->name, res->expires_ms), AMP_ECLAIMED
 * (res->holder, res->expires_ms; nothing written, nothing logged),
 * AMP_ERULE (written to the error log), AMP_EIO.  Reasons in errors.
 */
int amp_coord_claim(amp_store *st, amp_schema_set *set, const char *task_id,
		    const char *subtask, const char *from, const char *agent,
		    long long ttl_sec, int64_t now_ms, amp_coord_result *res,
		    amp_errlist *errors);

/*
 * Releases the lease in force on task_id (of `subtask`, NULL: the whole
 * task's, or the only one): by its holder (from the executor, as `agent`),
 * or by the admin or the coordinator (any holder).  `reason` may be NULL.
 * Statuses as amp_coord_claim (AMP_ERULE when nothing is held).
 */
int amp_coord_release(amp_store *st, amp_schema_set *set, const char *task_id,
		      const char *subtask, const char *from, const char *agent,
		      const char *reason, int64_t now_ms, amp_coord_result *res,
		      amp_errlist *errors);

/*
 * amp watch: every lease of task_id expired at now_ms and not released
 * gets its release from system and a heartbeat_timeout escalation (cause:
 * the claim record, AMP_SILENCE_CAUSE; once per cause), in one commit per
 * lease.  *released counts them; the last escalation's id goes to res.
 */
int amp_coord_expire(amp_store *st, amp_schema_set *set, const char *task_id,
		     int64_t now_ms, amp_coord_result *res, int *released,
		     amp_errlist *errors);

/*
 * SPEC-022 task_progress: instance `agent` (the executor) reports percent
 * (0..100) done on task_id, or its subtask (NULL: the task), with `note`
 * (NULL: none; data, never an instruction).  Refused (AMP_ERULE, logged)
 * unless agent holds a claim of it in force at now_ms (its own subtask's
 * or the whole task's), or when the task is closed to the executor.
 * res->name gets the record's name.
 */
int amp_coord_progress(amp_store *st, amp_schema_set *set, const char *task_id,
		       const char *subtask, const char *agent, int percent, const char *note,
		       int64_t now_ms, amp_coord_result *res, amp_errlist *errors);

/*
 * SPEC-022 feedback (issue 33, protocol/question.h): the executor (as
 * instance `agent`, or unnamed: NULL) asks `question` (data) about task_id
 * or its subtask (NULL: the task), to be answered within timeout_sec.
 * Refused (AMP_ERULE, logged) when the task has no records, is closed to
 * the executor, has no such subtask, or another instance holds it.
 * res->name gets the record's name ("question-<unix_ms>").
 */
int amp_coord_ask(amp_store *st, amp_schema_set *set, const char *task_id,
		  const char *subtask, const char *agent, const char *question,
		  long long timeout_sec, int64_t now_ms, amp_coord_result *res,
		  amp_errlist *errors);

/* `from` (coordinator or admin; instance `agent` or NULL) answers question
 * record `question_name` of task_id with `answer` (data), to be
 * acknowledged by the asker within ack_timeout_sec (0: no deadline).
 * Refused (AMP_ERULE, logged) for another role, a question the task does
 * not hold or one answered already, a task closed to the role.  res->name
 * gets the record's name. */
int amp_coord_answer(amp_store *st, amp_schema_set *set, const char *task_id,
		     const char *question_name, const char *from, const char *agent,
		     const char *answer, long long ack_timeout_sec, int64_t now_ms,
		     amp_coord_result *res, amp_errlist *errors);

/* The executor instance `agent` (or NULL) acknowledges answer record
 * `answer_name` of task_id (an answer_ack record).  Refused (AMP_ERULE,
 * logged) for an answer the task does not hold or one acknowledged
 * already, from another instance than the one that asked, a task closed
 * to the executor.  res->name gets the record's name. */
int amp_coord_ack_answer(amp_store *st, amp_schema_set *set, const char *task_id,
			 const char *answer_name, const char *agent, int64_t now_ms,
			 amp_coord_result *res, amp_errlist *errors);

/* `from` (coordinator or admin) records that task_id depends on `on`.
 * Refused (AMP_ERULE, logged) for another role, a cycle, a task closed to
 * the role.  res->name gets the record's name. */
int amp_coord_depend(amp_store *st, amp_schema_set *set, const char *task_id,
		     const char *on, int soft, const char *from, int64_t now_ms,
		     amp_coord_result *res, amp_errlist *errors);

/* `from` (coordinator or admin) plans task_id: priority (-1: unchanged),
 * deadline_ms (-1: unchanged), max_iterations (0: unchanged), capability
 * (NULL: unchanged); at least one.  Refused (AMP_ERULE, logged) for
 * another role, a task closed to the role. */
int amp_coord_plan_write(amp_store *st, amp_schema_set *set, const char *task_id,
			 int priority, int64_t deadline_ms, int max_iterations,
			 const char *capability, const char *from, int64_t now_ms,
			 amp_coord_result *res, amp_errlist *errors);

/* amp watch: when the deadline of task_id's plan passed at now_ms and the
 * task is not approved or aborted, the escalation (unknown, warning, once
 * per plan record).  *escalated 1 when written; its id in res. */
int amp_coord_deadline(amp_store *st, amp_schema_set *set, const char *task_id,
		       int64_t now_ms, amp_coord_result *res, int *escalated,
		       amp_errlist *errors);

#endif
