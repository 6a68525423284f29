/*
 * watch_timers.h - the timers of amp watch (watch_timers.c).  Private to
 * lib/enforce/.
 */
#ifndef AMP_WATCH_TIMERS_H
#define AMP_WATCH_TIMERS_H

#include "protocol/protocol.h"
#include "watch_fire.h"

/* The timers of a task from its whole log (state s), a new object; NULL
 * when it runs no clock. */
json_t *amp_watch_derive_timers(const struct task_pass *t, const amp_task_state *s);

/* Remembers the newest write of each holder (task, role, instance) for
 * the heartbeats. */
void amp_watch_note_write(const struct task_pass *t, const amp_entry *e, const char *name);

/* Escalates every timer of the state that ran out; *fired counts them. */
void amp_watch_evaluate_timers(struct watch *w, int *fired);

#endif
