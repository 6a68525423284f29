/*
 * arrival.h - the hub's post-receive hook as a clock the team trusts
 * (issue 32): it notes when each update of refs/amp/<ref> reached the hub
 * (store/arrivals.h), and, where the hub is told to (git config
 * amp.hookWatch true), runs one amp watch pass so that what arrived late by
 * the hub's clock is escalated on the hub itself.
 */
#ifndef AMP_ARRIVAL_H
#define AMP_ARRIVAL_H

#include <git2.h>

#include "base/error.h"
#include "schema/schema.h"
#include "store/store.h"
#include "watch.h"

/* Notes that commit `tip` arrived now (amp_clock_now_ms, the hub's clock).
 * AMP_OK, or AMP_EIO (err filled). */
int amp_hook_note_arrival(amp_store *st, const git_oid *tip, amp_error *err);

/*
 * With git config amp.hookWatch true: one amp watch pass on the hub
 * (amp_watch_pass, report and stats as there; the escalations are written
 * as the hub's amp.signingKey allows, and their commit is noted as arrived
 * now).  Without it: nothing, AMP_OK and *ran 0.  Returns what the pass
 * returns, failures in `errors`.
 */
int amp_hook_watch(amp_store *st, amp_schema_set **set, amp_watch_report_fn report, void *ctx,
		   int *ran, amp_errlist *errors);

#endif
