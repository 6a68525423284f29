/*
 * coord.h - coordinating many agents on one SSOT: claims with leases.
 *
 * A claim is amp's own control record (control.h, schemas/
 * control.schema.json), never an AMP/1.0 message:
 *
 *   claim    {"type":"claim", "from":"executor", "agent":NAME,
 *             "ttl_sec":N, "subtask_id":S?}  the instance NAME holds the
 *            task (or one subtask of it) for N seconds from its last write
 *   release  {"type":"release", "from":ROLE, "agent":NAME, "releases":
 *            CLAIM, "reason":TEXT?}  the lease of claim record CLAIM ends
 *            (the holder gives it up; the admin or the coordinator takes
 *            it back; system, from amp watch, when it expired)
 *
 * The leases of a task are replayed from its records alone, in order, so
 * every clone that holds the same records agrees on them:
 *   - a claim whose timestamp falls inside another instance's lease of the
 *     same subtask (or of the whole task; a whole-task claim conflicts with
 *     every lease) is not in force (amp refuses to write one, the hub's
 *     hook refuses it, and amp sync's join sets the later one aside);
 *   - a claim by the holder again renews its lease;
 *   - a lease is renewed (its clock starts again) by each later executor
 *     record of the task while it runs: a message or ACK from the
 *     executor, a heartbeat from the executor (naming the agent, or not);
 *     while a lease runs amp refuses executor writes to the task from any
 *     other instance (but one that holds another subtask's lease in force
 *     then: two executors on one task), so those records are the holders';
 *   - it ends with a release naming it, or with a task_result of its
 *     subtask (a whole-task lease: any task_result);
 *   - it is expired at time t when t > renewed + ttl; an expired lease is
 *     not in force (another instance may claim), and amp watch writes its
 *     release with a heartbeat_timeout escalation, once.
 *
 * A claim is decided inside the store's compare-and-swap, on the tip it
 * lands on: of N instances racing, exactly one wins; the others get
 * AMP_ECLAIMED and the winner's name.
 */
#ifndef AMP_COORD_H
#define AMP_COORD_H

#include <stdint.h>

#include "base/error.h"
#include "schema/schema.h"
#include "store/store.h"
#include "task.h"

#define AMP_CLAIM_TTL_MAX 2592000 /* 30 days, as amp.heartbeatTimeout */
#define AMP_LEASES_MAX 64         /* leases in force on one task at most */

typedef struct amp_lease {
	char subtask[128];           /* "" for the whole task */
	char agent[AMP_AGENT_MAX + 1];
	char claim[64];              /* the claim record's name */
	int64_t since_ms;            /* the claim's time */
	int64_t renewed_ms;          /* the last write that renewed it */
	int64_t ttl_ms;
	int released;                /* a release or a result ended it */
	int64_t released_ms;         /* ... at this time (-1: not released) */
	const json_t *release;       /* the release record that ended it
				      * (borrowed from the log), or NULL */
} amp_lease;

typedef struct amp_leases {
	amp_lease v[AMP_LEASES_MAX];
	size_t n;
} amp_leases;

/* The leases of a task, replayed from its log as described above
 * (released ones included, marked). */
void amp_coord_leases(const amp_task_log *log, amp_leases *out);

/* When lease l expires: renewed + ttl (it is in force up to then). */
int64_t amp_lease_expires(const amp_lease *l);

/* 1 when lease l is in force at `at`: not released, not expired. */
static inline int amp_lease_in_force(const amp_lease *l, int64_t at)
{
	return !l->released && at <= amp_lease_expires(l);
}

/* The lease of another instance than `agent` in force at `at_ms` that a
 * claim of `subtask` ("" or NULL: the whole task) conflicts with, or
 * NULL.  Borrowed from ls. */
const amp_lease *amp_coord_conflict(const amp_leases *ls, const char *subtask,
				    const char *agent, int64_t at_ms);

/* The first lease in force at at_ms (any subtask), or NULL. */
const amp_lease *amp_coord_holder(const amp_leases *ls, int64_t at_ms);

/*
 * The write-time rule of a held task: a record `from` the executor by
 * instance `agent` (NULL: unnamed) at at_ms on a task whose lease another
 * instance holds then is refused: AMP_ERULE with the reason in why.
 * AMP_OK otherwise.
 */
int amp_coord_check_write(const amp_task_log *log, const char *from, const char *agent,
			  int64_t at_ms, char *why, size_t whysz);

/*
 * The holder told (issue 33, RepoMesh ACP "recovered"): the claim record
 * name of the newest lease of instance `agent` on the task when amp watch
 * released it (a release from system: it expired) and the instance holds
 * no lease of the task in force at at_ms; NULL otherwise.  Borrowed from
 * log.  amp heartbeat tells the instance, which must claim the task again
 * before it works on it: its lease is gone and the task is re-queued.
 */
const char *amp_coord_lost_lease(const amp_task_log *log, const char *agent, int64_t at_ms);

/*
 * Issue 33, a dead executor must not overwrite the live one: a task_result
 * `msg` from the executor instance `agent` (NULL: unnamed) whose own latest
 * lease on the result's subtask (or the whole task) ended by another's
 * hand (a release by system, the coordinator or the admin) or ran out, and
 * who holds no lease again since, is refused: AMP_ERULE with why naming
 * when and by whom it was released and who claimed after it.  AMP_OK
 * otherwise (amp_coord_check_write decides a lease in force).
 */
int amp_coord_check_result(const amp_task_log *log, const json_t *msg, const char *agent,
			   char *why, size_t whysz);

/*
 * The holder told at release time (issue 33): each lease of the task that
 * someone else than its holder released (amp watch's system when it
 * expired, the coordinator, the admin) and that its holder did not claim
 * again since (no later lease of the same instance and subtask), as a new
 * JSON array of {"task_id", "agent", "claim", "subtask_id" (or null),
 * "by" (the release's role), "at" (its timestamp), "reason" (or null),
 * "record" (the release record)}.  Time-free: the status cache keeps it,
 * and the holder's inbox shows it.
 */
json_t *amp_coord_released_json(const amp_task_log *log);

/* The instance a record says wrote it: the "agent" of a claim, a
 * heartbeat or the holder's own release (the admin's or the coordinator's
 * names the holder it takes the lease from); NULL for any other record.
 * Borrowed from doc. */
const char *amp_coord_record_instance(const json_t *doc);

/*
 * For a claim or release record that arrives without amp (a push, a
 * fetch, amp sync's join): AMP_OK when it is in force where it stands
 * after `before` (the task's records before it); AMP_ECLAIMED (a claim
 * inside another instance's lease) or AMP_ERULE with the reason in why.
 * The role was checked by amp_control_allowed.
 */
int amp_coord_check_record(const amp_task_log *before, const json_t *doc,
			   char *why, size_t whysz);

/* The `amp status --json` "claims" array of a task at now_ms: its leases
 * not released, [{agent, subtask_id|null, claim, since, expires, expired}],
 * times as ISO 8601.  New reference. */
json_t *amp_coord_claims_json(const amp_task_log *log, int64_t now_ms);

/* ---- dependencies -------------------------------------------------------
 *
 *   depend   {"type":"depend", "from":coordinator|admin, "on":OTHER,
 *             "soft":BOOL}  a dispatch of the task waits for OTHER to be
 *            approved: refused (hard) or warned (soft) until then.  A
 *            later depend record on the same OTHER replaces the earlier
 *            (soft or hard); a task depends on at most AMP_DEPS_MAX others.
 * Cycles are refused when written (amp depend) and when they arrive (the
 * hub's hook, amp fsck).
 */
#define AMP_DEPS_MAX 64
#define AMP_DEPS_WALK_MAX 200000 /* tasks a cycle check reads at most: a chain
				     * of 100,000 links is checked whole */

typedef struct amp_dep {
	const char *on; /* borrowed from the log */
	int soft;
} amp_dep;

/* The dependencies of the task of `log`, at most AMP_DEPS_MAX, into out;
 * returns how many. */
size_t amp_coord_deps(const amp_task_log *log, amp_dep out[AMP_DEPS_MAX]);

/*
 * What the task of `log` waits for on tip tree `tip`: a new JSON array
 * (*out) of {"task_id", "soft", "state"} for each dependency not approved
 * (state "new" for a task with no records).  AMP_OK or AMP_EIO.
 */
int amp_coord_waits(amp_store *st, git_tree *tip, const amp_task_log *log, json_t **out,
		    amp_error *err);

/* For a depend record that arrives (the hook, fsck) or is written: AMP_OK,
 * or AMP_ERULE with why (a task depending on itself; a cycle through the
 * tasks of `tip`), or AMP_EIO. */
int amp_coord_check_depend(amp_store *st, git_tree *tip, const char *task_id,
			   const char *on, char *why, size_t whysz, amp_error *err);

/* ---- plans -----------------------------------------------------------------
 *
 *   plan     {"type":"plan", "from":coordinator|admin, "priority":"P0".."P3"?,
 *             "deadline":TIME?, "max_iterations":N?, "capability":C?}  at
 *            least one; each field of the latest plan record that has it
 *            is in force.  max_iterations is this task's Hallucination
 *            Lock threshold (task.h, instead of amp.lockThreshold); amp
 *            watch escalates a deadline passed before the task is approved,
 *            once per plan record (cause: its path, AMP_DEADLINE_CAUSE).
 */
#define AMP_PRIORITY_DEFAULT 2 /* P2 */

typedef struct amp_plan {
	int priority;            /* 0..3 (P0 first); AMP_PRIORITY_DEFAULT */
	int64_t deadline_ms;     /* -1: none */
	int max_iterations;      /* 0: none */
	const char *capability;  /* borrowed, NULL: none */
	const char *deadline_record; /* the name of the plan record that set
				      * the deadline (borrowed), or NULL */
} amp_plan;

/* The plan of the task of `log`. */
void amp_coord_plan(const amp_task_log *log, amp_plan *out);

/*
 * Orders `messages` (an amp inbox array of {"task_id", ...}, oldest first)
 * in place: messages of tasks nobody holds at now_ms first, then by their
 * task's priority (P0 first), keeping the order within each (stable).
 * Each task is read once from the tip.  AMP_OK or AMP_EIO.
 */
int amp_coord_order_inbox(amp_store *st, json_t *messages, int64_t now_ms, amp_error *err);

/* ---- ready ----------------------------------------------------------------
 *
 * `amp ready`: the tasks nobody holds (no lease in force at now_ms), not
 * approved, aborted or suspended, whose dependencies are all approved (and
 * whose plan's capability is `capability`, when not NULL; and, when `can`
 * is not NULL, whose plan requires no capability or one of the strings of
 * array `can`: what an agent declared, registry.h), as a new JSON array of
 * {"task_id", "state", "priority", "deadline", "capability", "since"}
 * (since: the task's first record), by priority, then oldest first.
 */
int amp_coord_ready(amp_store *st, git_tree *tip, int64_t now_ms, const char *capability,
		    const json_t *can, json_t **out, amp_error *err);

#endif
