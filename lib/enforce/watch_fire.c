/*
 * watch_fire.c - what every rule of amp watch reads of a record (its
 * name, its arrival, the causes escalated already) and how it escalates
 * a cause, once (watch_fire.h).
 */
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "protocol/protocol.h"
#include "read/read.h"
#include "record/record.h"
#include "store/store.h"
#include "write/write.h"
#include "watch_fire.h"

/* ---- reading ------------------------------------------------------------ */

void amp_watch_entry_name(const amp_entry *e, char *buf, size_t bufsz)
{
	amp_store_entry_name(e->seq, e->kind, e->id, buf, bufsz);
}

/* The path of record `name` of the task, into buf. */
void amp_watch_record_path(const amp_task_log *log, const char *name, char *buf, size_t bufsz)
{
	char dir[128], shown[301];

	/* a file name is any bytes; what amp writes of it is UTF-8 */
	snprintf(shown, sizeof(shown), "%.300s", amp_json_text(name));
	if (amp_task_log_record_path(log, shown, buf, bufsz) == 0)
		return;
	amp_store_task_dir(log->layout > 0 ? log->layout : AMP_LAYOUT_FLAT, log->task_id, dir,
			   sizeof(dir));
	snprintf(buf, bufsz, "%s/%s", dir, shown);
}

/* 1 when the task already holds a system escalation of `type` for `cause`. */
int amp_watch_has_cause(const amp_task_log *log, const char *type, const char *cause)
{
	return amp_task_has_escalation(log, type, "system", cause) != NULL;
}

/* 1 when `id` is a msg_id, so it may stand in affected_msgs. */
int amp_watch_is_msg_id(const char *id)
{
	return id && amp_msg_id_parse(id, NULL, NULL, NULL) == 0;
}

int amp_watch_is_type(const json_t *doc, const char *type)
{
	const char *t = amp_json_str(doc, "type");

	return t && !strcmp(t, type);
}

/* The "arrival" of the entry of `list` whose `key` is id, or -1. */
static int64_t saved_arrival(const json_t *list, const char *key, const char *id)
{
	const json_t *v;
	size_t i;

	json_array_foreach(list, i, v) {
		const char *k = amp_json_str(v, key);

		if (k && !strcmp(k, id) && json_is_integer(json_object_get(v, "arrival")))
			return json_integer_value(json_object_get(v, "arrival"));
	}
	return -1;
}

/*
 * When the SSOT first held record e: the committer time (ms) of the commit
 * that brought it, found by this pass's walk of the new commits, else kept
 * from the last pass by the task's timers (for the messages they wait on
 * and hand-offs they time); -1 when unknown, and the timestamp alone
 * counts.
 */
int64_t amp_watch_arrival_of(const struct task_pass *t, const amp_entry *e)
{
	char name[300];
	int64_t ms;

	amp_watch_entry_name(e, name, sizeof(name));
	if ((ms = amp_record_times_get(t->w->arrivals, t->log->task_id, name)) >= 0)
		return ms;
	if (e->kind != AMP_ENTRY_MSG || !e->id)
		return -1;
	if ((ms = saved_arrival(json_object_get(t->old, "acks"), "msg", e->id)) >= 0)
		return ms;
	return saved_arrival(json_object_get(t->old, "holders"), "by", e->id);
}

const char *amp_watch_arrival_source(const struct task_pass *t, const amp_entry *e)
{
	char name[300];

	int64_t by;

	amp_watch_entry_name(e, name, sizeof(name));
	by = amp_record_times_get(t->w->vouched, t->log->task_id, name);
	return by == 1 ? "its arrival at the hub, by the hub's clock (" AMP_ARRIVALS_REF ")" :
	       by == 2 ? "no earlier than this clone's last fetch without it, by this clone's clock (" AMP_FIRST_SEEN_REF ")" :
	       "the commit that brought it, whose date its writer chose";
}

/* The time record e counts from (amp_task_trusted_time). */
int64_t amp_watch_trusted_time(const struct task_pass *t, const amp_entry *e, int *skewed)
{
	return amp_task_trusted_time(t->log, amp_record_time(e->doc), amp_watch_arrival_of(t, e), skewed);
}

/* ---- escalating ---------------------------------------------------------- */

int amp_watch_need_schemas(struct watch *w)
{
	amp_error err;

	if (*w->set)
		return AMP_OK;
	/* Said once: a pass over 200,000 records said it 200,000 times, in
	 * 400 MB of error list. */
	if (w->no_schemas)
		return AMP_EIO;
	if (amp_schema_set_load_amp(w->set, NULL, &err) < 0) {
		/* Nothing can be checked: the pass fails and keeps no state,
		 * so the next one checks these records (No Silent Failure). */
		w->no_schemas = w->failed = 1;
		return amp_errlist_add(w->errors, AMP_EIO, err.path, "%s", err.message);
	}
	return AMP_OK;
}

/*
 * A task whose directory cannot be read (its tree is missing or corrupt) is
 * skipped, so that the other tasks are still enforced.  No escalation can be
 * written into it (that needs its tree), so it is reported on stderr, once:
 * the pass that first finds it (or finds a new reason) fails with exit 4,
 * and watch.json remembers it under "broken"; each later pass reads it
 * again, silently, until it can be read, and then checks all its records.
 * The caller drops the task's timers.
 */
void amp_watch_task_broken(struct watch *w, const char *task, const amp_error *err)
{
	json_t *broken = json_object_get(w->state, "broken");
	const char *before = amp_json_str(broken, task);

	if (before && !strcmp(before, err->message))
		return;
	json_object_set_new(broken, task, json_string(err->message));
	amp_errlist_add(w->errors, AMP_EIO, err->path,
			"%s; task %s is skipped until it can be read", err->message, task);
	w->broken++;
}

/* After an escalation into `task` failed: 1 when the reason is that the
 * task's directory cannot be read (it broke after its timers were set),
 * which task_broken then reports, 0 when the failure is another one. */
int amp_watch_escalation_broke_task(struct watch *w, const char *task)
{
	git_tree *tip = NULL;
	amp_task_log log;
	amp_error err;
	int broke = 0;

	if (amp_store_tip(w->st, amp_store_messages_ref(w->st), NULL, &tip, &err) < 0)
		return 0;
	if (amp_store_read_task(w->st, tip, task, &log, &err) < 0) {
		amp_watch_task_broken(w, task, &err);
		broke = 1;
	} else {
		amp_task_log_free(&log);
	}
	git_tree_free(tip);
	return broke;
}

/*
 * Escalates one cause as system, once.  `cause` is what the report and the
 * commit name; NULL means the first affected message (the once-check inside
 * the compare-and-swap derives the cause from the escalation itself, see
 * amp_escalation_cause).  Returns AMP_OK when the escalation is in the SSOT (written now or
 * before), else the failure, recorded in w->errors.
 */
int amp_watch_fire(struct watch *w, const char *task, const char *type,
		   const char *severity, json_t *affected, json_t *suggested,
		   const char *description, const char *cause)
{
	amp_escalation e = { 0 };
	amp_send_result res;
	amp_errlist errs = { 0 };
	amp_watch_action a;
	const char *first = json_string_value(json_array_get(affected, 0));
	char trailers[1100];
	int status;

	if ((status = amp_watch_need_schemas(w)) < 0) {
		w->failed = 1;
		return status;
	}
	e.task_id = task;
	e.from = "system";
	e.escalation_type = type;
	e.severity = severity;
	e.triggered_by = "system";
	e.description = description;
	e.affected_msgs = affected;
	e.suggested_actions = suggested;
	e.auto_suspended = -1;
	e.once = 1;
	if (!cause)
		cause = first;
	snprintf(trailers, sizeof(trailers), "Amp-Cause: %s %s\n", type, cause ? cause : "-");
	status = amp_send_escalation(w->st, *w->set, &e, trailers, &res, &errs);
	if (status < 0 && amp_watch_escalation_broke_task(w, task)) {
		/* reported by task_broken; the other tasks go on */
	} else if (status < 0) {
		amp_errlist_add(w->errors, AMP_EIO, "", "cannot escalate %s on %s (%s): %s",
				type, task, cause ? cause : "-",
				errs.count ? errs.items[0].message : "unknown error");
		w->failed = 1;
	} else if (!res.duplicate) {
		w->stats->escalated++;
		if (w->report) {
			a.action = "escalated";
			a.escalation_type = type;
			a.severity = severity;
			a.task_id = task;
			a.cause = first ? first : cause ? cause : "";
			a.msg_id = res.msg_id;
			w->report(&a, w->ctx);
		}
	}
	amp_errlist_free(&errs);
	return status;
}
