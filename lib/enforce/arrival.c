/*
 * arrival.c - the hub's hook as the team's clock (arrival.h).
 */
#include <string.h>

#include "base/clock.h"
#include "arrival.h"

int amp_hook_note_arrival(amp_store *st, const git_oid *tip, amp_error *err)
{
	int64_t now;
	int status;

	if ((status = amp_clock_now_ms(&now, err)) < 0)
		return status;
	return amp_arrivals_note(amp_store_repo(st), tip, now, err);
}

int amp_hook_watch(amp_store *st, amp_schema_set **set, amp_watch_report_fn report, void *ctx,
		   int *ran, amp_errlist *errors)
{
	amp_watch_opts o;
	amp_watch_stats stats;
	amp_error err;
	git_oid tip;
	int status, on;

	*ran = 0;
	if ((status = amp_store_config_bool(st, "amp.hookWatch", 0, &on, &err)) < 0)
		return amp_errlist_add(errors, status, err.path, "%s", err.message);
	if (!on)
		return AMP_OK;
	*ran = 1;
	if ((status = amp_watch_opts_load(st, &o, &err)) < 0)
		return amp_errlist_add(errors, status, err.path, "%s", err.message);
	status = amp_watch_pass(st, set, &o, report, ctx, &stats, errors);
	/* The escalations reached the hub now, as a push would have. */
	if (stats.escalated &&
	    git_reference_name_to_id(&tip, amp_store_repo(st), amp_store_messages_ref(st)) == 0 &&
	    amp_hook_note_arrival(st, &tip, &err) < 0)
		amp_errlist_add(errors, err.status, err.path, "%s", err.message);
	git_error_clear();
	return status;
}
