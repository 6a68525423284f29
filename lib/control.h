/*
 * control.h - admin control records: instructions of the Admin that the
 * protocol names but does not shape.  So far one: resume, which lifts the
 * suspension a critical escalation put a task under (AMP/1.0 §05 Critical =
 * Suspend All: "must not perform any new operations until Admin issues a
 * resume instruction"), a Hallucination Lock included.
 *
 * A resume is stored as tasks/.../<seq>.ctl.resume-<unix_ms>.json and
 * validated against schemas/control.schema.json:
 *   {"protocol_version":"AMP/1.0","type":"resume","task_id":..,
 *    "from":"admin","timestamp":..,"reason":..,"lifts":<escalation msg_id>}
 */
#ifndef AMP_CONTROL_H
#define AMP_CONTROL_H

#include <stdint.h>

#include "error.h"
#include "schema.h"
#include "store.h"

#define AMP_SCHEMA_CONTROL AMP_SCHEMA_BASE "control.schema.json"

typedef struct amp_resume_result {
	char name[64];     /* the control record's name, "resume-<unix_ms>" */
	char lifts[256];   /* msg_id of the escalation it lifted */
	char was[32];      /* the state before: "suspended" or "locked" */
	char now[32];      /* the state after */
} amp_resume_result;

/*
 * Records an admin resume of task_id at now_ms.  Refused (AMP_ERULE, the
 * refusal also written to the error log) unless `from` is admin and the
 * task is suspended or locked at the tip; both are decided inside the
 * compare-and-swap, so two admins resuming at once record one resume.
 */
int amp_control_resume(amp_store *st, amp_schema_set *set, const char *task_id,
		       const char *from, const char *reason, int64_t now_ms,
		       amp_resume_result *res, amp_errlist *errors);

#endif
