/*
 * watch_deps.h - amp watch's rule for a hard dependency on an aborted task
 * (watch_deps.c).  Private to lib/enforce/.
 */
#ifndef AMP_WATCH_DEPS_H
#define AMP_WATCH_DEPS_H

#include "protocol/protocol.h"
#include "watch_fire.h"

/*
 * Task t->log (state s) was read again: escalates each of its hard
 * dependencies (coord.h amp depend) on a task that is aborted, and, when
 * it is aborted itself, each task of the state's "deps" that depends on it
 * hard; once per dependent and abort record.  Keeps the task's hard
 * dependencies not approved in the state's "deps" for the next passes.
 */
void amp_watch_check_deps(const struct task_pass *t, const amp_task_state *s);

#endif
