/*
 * control.h - amp's own records: instructions and facts the protocol names
 * but does not shape.  They are not AMP/1.0 messages (those stay exactly as
 * the schemas say); each is validated against schemas/control.schema.json
 * and stored as tasks/.../<seq>.ctl.<type>-<unix_ms>.json:
 *
 *   resume     the admin lifts the suspension a critical escalation put a
 *              task under, a Hallucination Lock included (AMP/1.0 §05
 *              "until Admin issues a resume instruction"); "lifts" names it
 *   approve    the admin approves a dispatch whose risk_level is in git
 *              config amp.approvalRequired (AMP/1.0 §01 "After the Admin
 *              approves the Coordinator plan"; risk_level "determines the
 *              approval path"); "approves" names it
 *   abort      the admin or the coordinator ends a task; every later write
 *              to it but the admin's is refused
 *   heartbeat  an agent proves it is alive on a task (AMP/1.0
 *              heartbeat_timeout "Agent 30min no SSOT write")
 *   idempotency_key  written by amp_send_message with a key (send.h)
 *   round, acked  written by amp_send_message and amp_send_ack for a
 *              named instance, with its dispatch or ACK (protocol/round.h)
 *   question, answer  amp ask and amp answer (coord_write.h,
 *              protocol/question.h)
 *   superseded  written by amp sync's join (sync.h), as system: the next
 *              record of the task is not in force (amp_store_read_task
 *              sets it aside)
 *
 * Each is decided by the transition table (task.h) on the tip it lands on,
 * inside the compare-and-swap, so two admins approving at once record one
 * approval.
 */
#ifndef AMP_CONTROL_H
#define AMP_CONTROL_H

#include <stdint.h>

#include "base/error.h"
#include "schema/schema.h"
#include "store/store.h"

typedef struct amp_control_result {
	char name[64];     /* the record's name, "<type>-<unix_ms>" */
	char target[256];  /* resume: the escalation lifted; approve: the
			    * dispatch approved; else "" */
	char was[32];      /* the task's state before */
	char now[32];      /* the state after */
	char escalation_id[256]; /* resume of a task whose lock was due but
				  * not recorded: the lock written with it */
	char lost[64];     /* heartbeat of a named instance whose lease amp
			    * watch released (coord.h amp_coord_lost_lease):
			    * that claim's name; else "" */
} amp_control_result;

/*
 * Writes a control record of `type` (resume, approve, abort, heartbeat) by
 * `from` on task_id at now_ms, with `text` as its reason (resume, abort;
 * required), or its reason (approve) or note (heartbeat; optional, NULL).
 * Refused (AMP_ERULE, also written to the error log) when the role may not
 * (resume and approve: the admin; abort: the admin or the coordinator;
 * heartbeat: coordinator, executor or reviewer) or the transition table
 * refuses it in the task's state.
 */
int amp_control_write(amp_store *st, amp_schema_set *set, const char *type,
		      const char *task_id, const char *from, const char *text,
		      int64_t now_ms, amp_control_result *res, amp_errlist *errors);

/* For a control record that arrives without amp (a push, a fetch): 1 when
 * `from` may write one of `type` on the task whose records before it are
 * `log` -- the role (resume and approve: the admin; abort: the admin or the
 * coordinator; heartbeat: coordinator, executor or reviewer) and the
 * transition table -- else 0 with the reason in why.  idempotency_key
 * records, and superseded markers from system (amp sync, sync.h), are
 * amp's own bookkeeping: always 1. */
int amp_control_allowed(const amp_task_log *log, const char *type, const char *from,
			char *why, size_t whysz);

#endif
