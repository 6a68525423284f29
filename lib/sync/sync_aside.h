/*
 * sync_aside.h - the place of a local record on a joined history, and the
 * state of a replay (sync_aside.c).  Private to lib/sync/.
 */
#ifndef AMP_SYNC_ASIDE_H
#define AMP_SYNC_ASIDE_H

#include "base/clock.h"
#include "schema/schema.h"
#include "sync_index.h"

/*
 * What a replay needs beyond the trees.  Records of a task the remote
 * wrote since the two histories parted ("contested") are checked again in
 * their new place, after the remote's; a record a rule refuses there is
 * set aside: committed after a "superseded" marker (control.h), kept but
 * in force nowhere.  A task only one side wrote keeps its order, but rules
 * reach across tasks (a dependency cycle, a context_ref to a record of
 * another task that was set aside), so a clone's join checks every record
 * too (`all`): a record the hub's hook would refuse is set aside here,
 * and the rest is delivered, instead of a push the hub refuses at every
 * sync (issue 30).
 */
struct replay_ctx {
	amp_store *st;
	amp_schema_set *set;
	json_t *contested;     /* task id -> index into logs + 1, or 0: not read yet */
	amp_task_log *logs;    /* of the contested tasks, as built so far */
	size_t nlogs;
	char now[AMP_TIME_BUFSZ];
	int64_t now_ms;        /* the same time */
	struct updates u;      /* of the commit being replayed */
	char trailers[4096];   /* Amp-Superseded: lines of that commit */
	unsigned long superseded; /* records set aside, in all */
	size_t escalation_files; /* of r->u: the join's own escalations
				  * (sync_escalate.h), not replayed */
	char agent[AMP_AGENT_MAX + 1]; /* the Amp-Agent of the commit being
					* replayed: who wrote its records */
	json_t *renamed;       /* local id -> the id the join gave it */
	json_t *kept;          /* local id -> itself: a signed record the
				* join set aside rather than rename, whose
				* id names another record in force */
	json_t *refused;       /* records a rule set aside: {task, kind, id,
				* reason, blob}, for amp_sync to log and
				* escalate (NULL: nobody asks) */
	json_t *aside;         /* blob id -> reason: records the hub's hook
				* refused, set aside wherever they land
				* (NULL: none) */
	git_tree *local_tree;  /* the local tip's */
	int layout;            /* of the remote's tip: where records go */
	json_t *sigs;          /* record blob id -> its signature's blob id
				* (recsig.h), of the commit being replayed:
				* a record re-committed byte for byte keeps
				* its author's signature beside it */
};

/* Adds record `name` (blob) of task `dir` (its id) to the commit being built
 * (r->u), at its place in the remote's layout, with its signature when
 * r->sigs has one for that blob. */
int amp_sync_add_update(struct replay_ctx *r, const char *dir, const char *name,
			const git_oid *blob, amp_error *err);

/*
 * Decides the place of one local record of a contested task on the joined
 * history `log`: appended as it is (AMP_OK, *aside 0), or set aside (*aside
 * 1).  AMP_ESCHEMA when it is not a well-formed record in that place (left
 * to the caller), AMP_EIO.
 */
int amp_sync_place_record(struct replay_ctx *r, amp_task_log *log, git_tree *base,
			  const char *dir, amp_entry_kind kind, const char *id,
			  const git_oid *blob, const char *name, int *aside, amp_error *err);

/*
 * Sets local record `id` (blob, of `kind`) of task `dir` aside on `log`
 * as it is, byte for byte (its signature beside it), for `reason`: a
 * marker, the record, its escalation (sync_escalate.h), noted in
 * r->refused.  For what the join cannot place without new bytes.
 */
int amp_sync_set_aside_as_is(struct replay_ctx *r, amp_task_log *log, const char *dir,
			     amp_entry_kind kind, const char *id, const git_oid *blob,
			     const char *reason, amp_error *err);

#endif
