/*
 * agents.h - the `amp agents` report, read from the SSOT's history, the
 * registry and amp status's cached summaries.
 */
#ifndef AMP_AGENTS_H
#define AMP_AGENTS_H

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"
#include "schema/schema.h"
#include "store/store.h"

/*
 * `amp agents`: every named instance seen in the SSOT's history (the
 * Amp-Agent trailer of the commits of the messages ref, read.h, and the
 * agent of claim records) or declared (amp register, registry.h), as a new
 * JSON array, by name, of {"agent", "roles" (sorted: the roles it wrote
 * as), "last_write" (the newest record time it wrote), "last_task",
 * "writes" (records), "holds" ([{"task_id", "subtask_id", "expires"}]: its
 * leases in force at now_ms), "declared" (its register record in force,
 * registry.h amp_registry_read's object, or null)}.
 * What the history says is cached in <state dir>/agents.json with the tip
 * it was read at (a newer tip walks the commits since it only); the holds
 * come from amp status's cached summaries (summary.h).  AMP_OK or AMP_EIO.
 */
int amp_agents_report(amp_store *st, amp_schema_set *set, int64_t now_ms, json_t **out,
		      amp_error *err);

#endif
