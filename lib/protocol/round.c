#include "round.h"

#include <stdio.h>
#include <string.h>

#include "coord.h"
#include "base/util.h"
#include "record/record.h"

/* 1 when control record e is of `type`. */
static int is_ctl(const amp_entry *e, const char *type)
{
	const char *t = amp_json_str(e->doc, "type");

	return e->kind == AMP_ENTRY_CTL && t && !strcmp(t, type);
}

/* The agent of the first record of `type` whose `field` is id, or NULL. */
static const char *named_by(const amp_task_log *log, const char *type, const char *field,
			    const char *id)
{
	size_t i;

	for (i = 0; id && i < log->count; i++)
		if (is_ctl(&log->entries[i], type) &&
		    !strcmp(amp_or_none(amp_json_str(log->entries[i].doc, field)), id))
			return amp_json_str(log->entries[i].doc, "agent");
	return NULL;
}

const char *amp_round_starter(const amp_task_log *log, const char *dispatch_id)
{
	return named_by(log, "round", "msg_id", dispatch_id);
}

const char *amp_round_acker(const amp_task_log *log, const char *msg_id)
{
	return named_by(log, "acked", "ack_for", msg_id);
}

int amp_round_named(const amp_task_log *log)
{
	size_t i;

	for (i = 0; i < log->count; i++)
		if (is_ctl(&log->entries[i], "round") || is_ctl(&log->entries[i], "acked"))
			return 1;
	return 0;
}

/* A round still open: its subtask is neither approved nor rejected. */
static int open_round(const amp_subtask *sub)
{
	return sub->dispatch && strcmp(sub->state, "approved") && strcmp(sub->state, "rejected");
}

/* Scenario 1: a coordinator's dispatch into an open round another
 * instance of its role started. */
static int check_dispatch(const amp_task_log *log, const amp_task_state *s, const json_t *msg,
			  const char *agent, char *why, size_t whysz)
{
	const char *from = amp_json_str(msg, "from");
	size_t i;

	/* AMP/1.0 §05: the Admin is the sole arbiter; it may always dispatch. */
	if (!from || strcmp(from, "coordinator"))
		return AMP_OK;
	for (i = 0; i < s->nsubtasks; i++) {
		const amp_subtask *sub = &s->subtasks[i];
		const char *id = amp_json_str(sub->dispatch, "msg_id"), *starter;

		if (!open_round(sub) || strcmp(amp_or_none(amp_json_str(sub->dispatch, "from")), from) ||
		    !(starter = amp_round_starter(log, id)) || (agent && !strcmp(agent, starter)))
			continue;
		snprintf(why, whysz,
			 "task %s is in a round coordinator instance %s started (%s; subtask %s is %s): a dispatch from %s%s would start another while it is open (two coordinators, one task); %s dispatches the next round, or the admin does",
			 log->task_id, starter, id, sub->id, sub->state,
			 agent ? "instance " : "an unnamed coordinator", agent ? agent : "", starter);
		return AMP_ERULE;
	}
	return AMP_OK;
}

/* Scenario 2: while nobody holds a claim of the result's subtask, the
 * result is the instance's that ACKed the round's dispatch. */
static int check_result(const amp_task_log *log, const amp_task_state *s, const json_t *msg,
			const char *agent, char *why, size_t whysz)
{
	const char *sid = amp_json_str(json_object_get(msg, "payload"), "subtask_id");
	const amp_subtask *sub = amp_task_subtask(s, sid);
	const char *id, *acker;
	int64_t at = amp_record_time(msg);
	amp_leases ls;
	size_t i;

	if (!sub || !sub->dispatch || !(id = amp_json_str(sub->dispatch, "msg_id")) ||
	    !(acker = amp_round_acker(log, id)) || (agent && !strcmp(agent, acker)))
		return AMP_OK;
	amp_coord_leases(log, &ls);
	for (i = 0; i < ls.n; i++)
		if (amp_lease_in_force(&ls.v[i], at) &&
		    (!ls.v[i].subtask[0] || !strcmp(ls.v[i].subtask, sub->id)))
			return AMP_OK; /* the holder's: amp_coord_check_write */
	snprintf(why, whysz,
		 "nobody holds a claim of subtask %s of task %s, and executor instance %s ACKed its round (%s): a task_result comes from %s, or from an instance that claims it first (amp claim), not from %s%s",
		 sub->id, log->task_id, acker, id, acker, agent ? "instance " : "an unnamed executor",
		 agent ? agent : "");
	return AMP_ERULE;
}

int amp_round_check_message(const amp_task_log *log, const amp_task_state *s,
			    const json_t *msg, const char *agent, char *why, size_t whysz)
{
	const char *type = amp_json_str(msg, "type"), *from = amp_json_str(msg, "from");

	if (!type)
		return AMP_OK;
	if (!strcmp(type, "task_dispatch"))
		return check_dispatch(log, s, msg, agent, why, whysz);
	if (!strcmp(type, "task_result") && from && !strcmp(from, "executor"))
		return check_result(log, s, msg, agent, why, whysz);
	return AMP_OK;
}

const char *amp_round_names(const json_t *doc, amp_entry_kind *kind)
{
	const char *type = amp_json_str(doc, "type");

	if (!type)
		return NULL;
	*kind = AMP_ENTRY_MSG;
	if (!strcmp(type, "round") || !strcmp(type, "address"))
		return amp_json_str(doc, "msg_id");
	*kind = AMP_ENTRY_ACK;
	if (!strcmp(type, "acked"))
		return amp_json_str(doc, "ack_for");
	return NULL;
}

int amp_round_check_record(const amp_task_log *before, const json_t *doc,
			   char *why, size_t whysz)
{
	const char *type = amp_json_str(doc, "type"), *from = amp_json_str(doc, "from");
	amp_entry_kind kind;
	const char *id = amp_round_names(doc, &kind), *other;
	const amp_entry *e;
	size_t i;

	if (!id || strcmp(type, "address") == 0)
		return AMP_OK;
	e = amp_task_log_find(before, kind, id);
	if (!e || strcmp(amp_or_none(amp_json_str(e->doc, "from")), amp_or_none(from))) {
		snprintf(why, whysz, "names %s %s, which is not %s's %s in force before it",
			 kind == AMP_ENTRY_ACK ? "the ACK of" : "dispatch", id, amp_or_none(from),
			 kind == AMP_ENTRY_ACK ? "ACK" : "task_dispatch");
		return AMP_ERULE;
	}
	if ((other = kind == AMP_ENTRY_ACK ? amp_round_acker(before, id) :
					     amp_round_starter(before, id))) {
		snprintf(why, whysz, "%s is named by instance %s already", id, other);
		return AMP_ERULE;
	}
	/* A round starts with the task's latest dispatch. */
	for (i = 0; kind == AMP_ENTRY_MSG && i < before->count; i++)
		if (before->entries[i].seq > e->seq && before->entries[i].kind == AMP_ENTRY_MSG &&
		    !strcmp(amp_or_none(amp_json_str(before->entries[i].doc, "type")), "task_dispatch")) {
			snprintf(why, whysz, "names dispatch %s, but %s came after it", id,
				 before->entries[i].id);
			return AMP_ERULE;
		}
	return AMP_OK;
}
