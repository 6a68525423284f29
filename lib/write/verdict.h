/*
 * verdict.h - a review_verdict (AMP/1.0 §04) from the reviewer to the
 * coordinator, answering a review_request found in the SSOT.
 */
#ifndef AMP_VERDICT_H
#define AMP_VERDICT_H

#include <jansson.h>
#include <stdint.h>

#include "send.h"

typedef struct amp_verdict_fields {
	const char *task_id;
	const char *from;        /* NULL: reviewer */
	const char *decision;    /* NULL: the payload's */
	double confidence;       /* < 0: the payload's */
	const char *architecture_notes; /* NULL: the payload's, if any */
	json_t *payload;         /* borrowed; criteria_results, issues,
				  * direct_fixes, architecture_notes; may be NULL */
	const char *context_ref; /* the review_request; NULL: the one awaiting a
				  * verdict (else the task's latest, which the
				  * rules then refuse, saying why) */
	const char *idempotency_key; /* see amp_send_opts; NULL: none */
	int64_t now_ms;
} amp_verdict_fields;

/*
 * Builds the verdict and sends it like amp_send_message (statuses and
 * errors alike).  The review_request it answers goes in context_ref; one
 * that is missing or not a review_request of the task is AMP_ERULE.  When
 * the payload has no criteria_results, there is one per acceptance
 * criterion of the request's original dispatch, with passed null ("not
 * assessed") and empty evidence.  AMP/1.0 §04 Direct Fix Scope is the
 * schema's: direct_fixes outside typo/lint/whitespace/import_order or with
 * diff_lines >= 5 are refused (AMP_ESCHEMA, exit 1).
 */
int amp_verdict_send(amp_store *st, amp_schema_set *set,
		     const amp_verdict_fields *f, amp_send_result *res,
		     amp_errlist *errors);

#endif
