/*
 * sync_escalate.h - the escalation of a record a join set aside, written
 * by the join right after that record (sync_escalate.c).  Private to
 * lib/sync/.
 *
 * Written in the join's own commit, at the task's next seq, the place of
 * the escalation depends only on the records the join replays, not on
 * which clone joins them first or in how many syncs: every rejoin order of
 * a partition ends with the same tree (test/32-partitions2.bats).  An
 * escalation written after the whole join would land after every record
 * that join replayed, and a clone joining fewer of them would place it
 * elsewhere.
 */
#ifndef AMP_SYNC_ESCALATE_H
#define AMP_SYNC_ESCALATE_H

#include "sync_aside.h"

/* The description of the escalation of a record set aside, into buf: "a
 * join set aside <kind> <id>: <reason>. It is kept, ...".  It names no
 * joiner (a clone's sync, a remote's name there, a hub's join of an
 * inbox): one record set aside is the same escalation, byte for byte,
 * whoever joins it (the errors ref's log names the source). */
void amp_sync_aside_description(char *buf, size_t bufsz, const char *kind, const char *id,
				const char *reason);

/* 1 when record doc is itself a join's escalation (a conflict escalation
 * by system): set aside, it is logged, not escalated again. */
int amp_sync_aside_told_again(const json_t *doc);

/*
 * Adds to the commit being built (r->u, r->trailers: Amp-Escalation:) the
 * escalation of record `id` (`kind`: "message", "ack", "control"; its
 * document `doc`) that the join just set aside in `log` for `reason`: a
 * conflict escalation (warning, from system, naming a message or an ACK
 * in affected_msgs) at the log's next seq, appended to log; signed in
 * strict mode by this clone's key.  None (*written 0) when nobody asked
 * (r->refused NULL), when doc is such an escalation itself, or when the
 * task holds one for that cause already (AMP/1.0 "once per cause"), or in
 * strict mode when this clone's key may not write as system.
 * AMP_EIO, or the status of a schema's refusal.
 */
int amp_sync_escalate_aside(struct replay_ctx *r, amp_task_log *log, const char *kind,
			    const char *id, const json_t *doc, const char *reason, int *written,
			    amp_error *err);

#endif
