/*
 * progress.h - SPEC-022 task_progress in the SSOT: "progress" control
 * records (control.schema.json; amp progress, write/coord_write.h), each
 * {"agent", "subtask_id"?, "percent" 0..100, "note"?} by the executor
 * instance that holds the task.  A later report of the same instance and
 * subtask replaces an earlier one.
 */
#ifndef AMP_PROGRESS_H
#define AMP_PROGRESS_H

#include <jansson.h>

#include "store/store.h"

/* The latest report of each (agent, subtask) of the task, oldest first:
 * [{"agent", "subtask_id" (or null), "percent", "note" (or null),
 * "timestamp", "record"}].  New reference. */
json_t *amp_progress_json(const amp_task_log *log);

#endif
