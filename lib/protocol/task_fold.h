/*
 * task_fold.h - the state of a task after each of its records in turn, in
 * one pass (issue 35: amp watch's first pass computed the state before each
 * record from the task's start, 10,000 records in 4 minutes).
 *
 * amp_task_state_compute applies each record with lookups into the whole
 * log, so a record can change what an earlier one did: an ACK makes the
 * message before it successful, a message arriving after its own ACK, after
 * the approval of it or after a verdict naming it changes what that record
 * applied.  The fold applies each new record once, with lookups into the
 * records so far, and keeps what a fold alone cannot decide: the messages
 * that would be the last successful one once ACKed, and the ids an approve
 * or a verdict named.  A record that would change an earlier one's effect
 * otherwise (a message after its ACK or named before) makes it apply every
 * record again, with lookups into the records so far: the state is always
 * the one amp_task_state_compute gives for the same records.
 */
#ifndef AMP_TASK_FOLD_H
#define AMP_TASK_FOLD_H

#include <stddef.h>

#include "task.h"

typedef struct amp_task_fold {
	amp_task_state s;  /* of entries [0, upto) */
	size_t upto;
	size_t alloc;      /* s.subtasks' room */
	size_t *pending;   /* messages awaiting their ACK to be the last
			    * successful one, in order (entry indexes) */
	size_t npending, palloc;
	const char **named; /* ids approves and verdicts named (borrowed
			     * from their records): a set, open addressing */
	size_t nnamed, nslots;
	size_t last_success; /* entry index + 1 of s.last_successful_msg_id */
	unsigned long refolds; /* records applied again, when a record changed
				* what an earlier one did */
} amp_task_fold;

/* An empty fold (of no record). */
void amp_task_fold_init(amp_task_fold *f);

/*
 * The state of the first n records of log (n <= log->count), what
 * amp_task_state_compute gives for a view of them: borrowed from f (valid
 * until the next call), its pointers borrowed from the log.  Every call
 * on one fold names the same log (or views of it, or a copy of it with
 * records appended, as a write's log of what it adds) and an n no
 * smaller than the last; a smaller n starts again from the first record.
 * NULL when out of memory.
 */
const amp_task_state *amp_task_fold_to(amp_task_fold *f, const amp_task_log *log, size_t n);

void amp_task_fold_free(amp_task_fold *f);

#endif
