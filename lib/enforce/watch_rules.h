/*
 * watch_rules.h - the rules amp watch checks each new record against
 * (watch_rules.c).  Private to lib/enforce/.
 */
#ifndef AMP_WATCH_RULES_H
#define AMP_WATCH_RULES_H

#include "protocol/protocol.h"
#include "watch_fire.h"

/* Escalates record `name` of the task as unknown (No Silent Failure),
 * once; `id` goes to affected_msgs when it names a message.  Returns 1. */
int amp_watch_escalate_unknown(struct watch *w, const amp_task_log *log, const char *id,
			       const char *name, const char *what);

/* The rules for message i of a task, new since the last pass: 1 when the
 * record was escalated as unknown. */
int amp_watch_check_message(const struct task_pass *t, size_t i);

/* The rules for ACK i of a task, new since the last pass: 1 when the
 * record was escalated as unknown. */
int amp_watch_check_ack(const struct task_pass *t, size_t i);

/* Escalates record e as unknown when its timestamp is further than
 * amp.maxClockSkew from the commit that brought it. */
void amp_watch_check_clock(const struct task_pass *t, const amp_entry *e, const char *name);

/* Writes the hallucination_lock of a task due to lock (s->lock_due). */
void amp_watch_check_lock(struct watch *w, const amp_task_log *log, const amp_task_state *s);

#endif
