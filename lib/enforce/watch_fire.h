/*
 * watch_fire.h - the state of one amp watch pass, what its rules read of a
 * record, and the escalation of a cause (watch_fire.c).  Private to
 * lib/enforce/.
 */
#ifndef AMP_WATCH_FIRE_H
#define AMP_WATCH_FIRE_H

#include "base/error.h"
#include "protocol/protocol.h"
#include "record/record.h"
#include "store/store.h"
#include "watch.h"

struct watch {
	amp_store *st;
	amp_schema_set **set;
	const amp_watch_opts *o;
	amp_watch_report_fn report;
	void *ctx;
	amp_watch_stats *stats;
	amp_errlist *errors;
	json_t *state;    /* see load_state */
	git_tree *tree;   /* the tree being processed */
	amp_record_times *arrivals; /* when the commits of the range being
				     * processed first held each record */
	amp_record_times *vouched;  /* those of them a note vouches for
				     * (store/arrivals.h): 1 the hub's, 2
				     * this clone's first sight */
	int failed;       /* an escalation could not be written, or nothing
			   * could be checked: keep no state */
	int no_schemas;   /* they could not be loaded (reported once) */
	int broken;       /* tasks found unreadable for the first time */
};

/* One task being read again. */
struct task_pass {
	struct watch *w;
	const amp_task_log *log;
	const json_t *old;     /* its timers of the last pass (may be NULL) */
	amp_task_fold *fold;   /* the state before each record, in turn */
	amp_leases **leases;   /* the log's leases, once asked for (owned by
				* the pass) */
};

/* The file name of record e of its task, into buf. */
void amp_watch_entry_name(const amp_entry *e, char *buf, size_t bufsz);

/* The path of record `name` of the task, into buf. */
void amp_watch_record_path(const amp_task_log *log, const char *name, char *buf,
			   size_t bufsz);

/* 1 when the task already holds a system escalation of `type` for `cause`. */
int amp_watch_has_cause(const amp_task_log *log, const char *type, const char *cause);

/* 1 when `id` is a msg_id, so it may stand in affected_msgs. */
int amp_watch_is_msg_id(const char *id);

/* 1 when doc is a message of `type`. */
int amp_watch_is_type(const json_t *doc, const char *type);

/* When the SSOT first held record e (ms), -1 when unknown. */
int64_t amp_watch_arrival_of(const struct task_pass *t, const amp_entry *e);

/* Who vouches for the arrival of record e, in words: the hub's arrival
 * notes, this clone's first-seen notes, or the commit date its writer
 * chose. */
const char *amp_watch_arrival_source(const struct task_pass *t, const amp_entry *e);

/* The time record e counts from (amp_task_trusted_time). */
int64_t amp_watch_trusted_time(const struct task_pass *t, const amp_entry *e, int *skewed);

/* Loads the schemas on first use: AMP_OK, or a failure reported once (the
 * pass then checks nothing that needs them). */
int amp_watch_need_schemas(struct watch *w);

/* Reports task `task` as unreadable (once per reason) and skips it. */
void amp_watch_task_broken(struct watch *w, const char *task, const amp_error *err);

/* 1 when an escalation into `task` failed because its directory cannot be
 * read (then reported as amp_watch_task_broken does), else 0. */
int amp_watch_escalation_broke_task(struct watch *w, const char *task);

/* Escalates one cause as system, once: AMP_OK when the escalation is in
 * the SSOT (written now or before), else the failure, in w->errors. */
int amp_watch_fire(struct watch *w, const char *task, const char *type, const char *severity,
		   json_t *affected, json_t *suggested, const char *description,
		   const char *cause);

#endif
