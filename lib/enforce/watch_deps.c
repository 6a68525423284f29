/*
 * watch_deps.c - a hard dependency on an aborted task (issue 33, scenario
 * 6).  A dispatch of a task that depends hard on another (amp depend) is
 * refused until the other is approved; an aborted task is never approved
 * (only the admin may write to it), so the dependent is blocked for good,
 * and nobody hears of it (AMP/1.0 "No Silent Failure").  amp watch
 * escalates it once per dependent and abort, naming both tasks, to the
 * admin, who can act: make the dependency soft, reopen the aborted task or
 * abort the dependent too.
 */
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "protocol/protocol.h"
#include "record/record.h"
#include "store/store.h"
#include "watch_deps.h"

/* The path of the abort record of a task (state s, its log), into buf;
 * NULL when it is not aborted. */
static const char *abort_path(const amp_task_log *log, const amp_task_state *s, char *buf,
			      size_t bufsz)
{
	char name[300];
	size_t i;

	for (i = 0; s->aborted && i < log->count; i++)
		if (log->entries[i].doc == s->aborted) {
			amp_watch_entry_name(&log->entries[i], name, sizeof(name));
			amp_watch_record_path(log, name, buf, bufsz);
			return buf;
		}
	return NULL;
}

/* Escalates the hard dependency of `dependent` on `on` (aborted: its log
 * and state), once per abort record (AMP_BLOCKED_CAUSE). */
static void fire(struct watch *w, const char *dependent, const amp_task_log *on_log,
		 const amp_task_state *on)
{
	char path[512], description[1400];
	json_t *affected, *suggested;

	if (!abort_path(on_log, on, path, sizeof(path)))
		return;
	snprintf(description, sizeof(description),
		 AMP_BLOCKED_CAUSE "%s: %s depends hard on %s, which was aborted by the %.20s at %.40s (\"%.300s\"): no dispatch of %s is accepted until %s is approved, and an aborted task is never approved, so %s is blocked for good.",
		 path, dependent, on_log->task_id,
		 amp_or_none(amp_json_str(on->aborted, "from")),
		 amp_or_none(amp_json_str(on->aborted, "timestamp")),
		 amp_or_none(amp_json_str(on->aborted, "reason")),
		 dependent, on_log->task_id, dependent);
	affected = json_array();
	suggested = json_pack("[o,o,o]",
		json_sprintf("Make the dependency soft: amp depend %s --on %s --soft", dependent,
			     on_log->task_id),
		json_sprintf("Reopen %s: the admin dispatches it again (a new round)", on_log->task_id),
		json_sprintf("Abort %s too: amp abort %s", dependent, dependent));
	amp_watch_fire(w, dependent, "unknown", "warning", affected, suggested, description, path);
	json_decref(affected);
	json_decref(suggested);
}

/* Reads task `id` from the tree of the pass and escalates `dependent`'s
 * hard dependency on it when it is aborted. */
static void check_one(struct watch *w, const char *dependent, const char *id)
{
	amp_task_log log;
	amp_task_state s;
	amp_error err;

	if (amp_store_read_task(w->st, w->tree, id, &log, &err) < 0)
		return; /* an unreadable task is escalated when it is read */
	amp_task_state_compute(&log, &s);
	if (s.aborted)
		fire(w, dependent, &log, &s);
	amp_task_state_free(&s);
	amp_task_log_free(&log);
}

void amp_watch_check_deps(const struct task_pass *t, const amp_task_state *s)
{
	struct watch *w = t->w;
	json_t *deps = json_object_get(w->state, "deps"), *hard = json_array(), *on;
	const char *task = t->log->task_id, *dependent;
	amp_dep d[AMP_DEPS_MAX];
	size_t i, n = amp_coord_deps(t->log, d);

	if (!json_is_object(deps) || !hard) {
		json_decref(hard);
		return;
	}
	for (i = 0; i < n; i++)
		if (!d[i].soft && !s->aborted && strcmp(s->state, "approved")) {
			json_array_append_new(hard, json_string(d[i].on));
			check_one(w, task, d[i].on);
		}
	if (json_array_size(hard))
		json_object_set(deps, task, hard);
	else
		json_object_del(deps, task);
	json_decref(hard);
	if (!s->aborted)
		return;
	json_object_foreach(deps, dependent, on) {
		json_t *x;

		json_array_foreach(on, i, x)
			if (json_string_value(x) && !strcmp(json_string_value(x), task))
				fire(w, dependent, t->log, s);
	}
}
