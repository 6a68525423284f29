/*
 * round.h - who started a round and who ACKed it, when several agent
 * instances share a role (issue 33, scenarios 1 and 2).
 *
 * AMP/1.0's envelope names a role, never an instance, and its schemas are
 * closed; so a named instance (amp --agent) that writes a task_dispatch
 * or an ACK writes, in the same commit, one control record
 * (control.schema.json) naming itself:
 *
 *   round  {"type":"round", "from":coordinator|admin, "msg_id":DISPATCH,
 *           "agent":NAME}  the dispatch starts a round, by NAME
 *   acked  {"type":"acked", "from":ROLE, "ack_for":MSG, "agent":NAME}
 *           the ACK of MSG is NAME's
 *
 * The rules (rules.h) then refuse
 *   - a task_dispatch from a coordinator instance while a subtask of the
 *     task is in a round another coordinator instance started (or an
 *     unnamed one, when that round names its starter) and not yet approved
 *     or rejected: "someone who did not start that round" (the admin, the
 *     sole arbiter, may always dispatch);
 *   - a task_result while nobody holds a claim of its subtask (coord.h)
 *     from another executor instance than the one that ACKed the round's
 *     dispatch.
 * A round or acked record arriving (the hook, amp sync's join, amp fsck)
 * must name the record before it in its commit and its writer (the
 * commit's Amp-Agent, coord.h amp_coord_record_instance).
 */
#ifndef AMP_ROUND_H
#define AMP_ROUND_H

#include <jansson.h>

#include "store/store.h"
#include "task.h"

/* The instance the round record of dispatch msg_id names, or NULL.
 * Borrowed from log. */
const char *amp_round_starter(const amp_task_log *log, const char *dispatch_id);

/* The instance the acked record of the ACK of msg_id names, or NULL.
 * Borrowed from log. */
const char *amp_round_acker(const amp_task_log *log, const char *msg_id);

/* 1 when the log holds a round or an acked record (the writer of a
 * dispatch or a result matters to the rules above). */
int amp_round_named(const amp_task_log *log);

/*
 * The two rules above for `msg` (a task_dispatch or a task_result; other
 * types pass) written by instance `agent` (NULL: unnamed) on the task of
 * `log`, whose state is s.  AMP_OK, or AMP_ERULE with the reason in why.
 */
int amp_round_check_message(const amp_task_log *log, const amp_task_state *s,
			    const json_t *msg, const char *agent, char *why, size_t whysz);

/*
 * For a round or acked record `doc` that arrives (a push, a fetch, a
 * join) after `before`: the record it names is in before, of the same
 * role (`from`), with no round or acked record naming it yet; a round
 * record names the task's latest dispatch.  AMP_OK or AMP_ERULE with why.
 * Other records pass.
 */
int amp_round_check_record(const amp_task_log *before, const json_t *doc,
			   char *why, size_t whysz);

/* The record a round, acked or address record names (its kind into
 * *kind), or NULL for any other record: it must be in the same commit. */
const char *amp_round_names(const json_t *doc, amp_entry_kind *kind);

#endif
