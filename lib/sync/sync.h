/*
 * sync.h - one SSOT shared through an ordinary git remote.
 *
 * amp_sync fetches the remote's refs/amp/... with the user's own `git` (its
 * transports, credentials, insteadOf and proxies) into a private mirror,
 * refs/amp-sync/<remote>/..., that local history never lives in; joins the
 * mirror with the local messages ref; and pushes the result, non-forced,
 * retrying when someone pushed in between.
 *
 * The join is a union of records.  Records are one file per msg_id (or
 * control name), named <seq>.<kind>.<id>.json, and <seq> is per clone: a
 * record is identified by its task, kind and id.  Local commits the remote
 * does not have are replayed, oldest first, onto the remote's tip, each as
 * a new commit with the same author, author time and message, its records
 * given the task's next free seq there.  A record the remote already holds
 * with the same content is skipped; with other content it is a conflict,
 * and the whole sync is refused (AMP_ERULE), logged, and (a message)
 * escalated to the admin in the local SSOT.
 *
 * Order matters to some rules, so the local records of a task the remote
 * also wrote since the histories parted are checked again in their new
 * place, after the remote's (amp_hook_check_record, the check of the
 * hub's hook; and "once per cause" for system's escalations).  One that is
 * refused there (a second verdict on one review_request, a second ACK of
 * one message, a second escalation of one cause, a result for a subtask
 * the remote's records moved on) is set aside: committed right after a
 * "superseded" marker (control.h) naming it, the record in force instead
 * and the reason, with an "Amp-Superseded:" trailer on the commit.  It is
 * kept byte for byte, and in force nowhere (amp_store_read_task).
 */
#ifndef AMP_SYNC_H
#define AMP_SYNC_H

#include "base/error.h"
#include "enforce/enforce.h"
#include "schema/schema.h"
#include "store/store.h"

/* The private namespace the remote's refs/amp/... are fetched into. */
#define AMP_SYNC_NAMESPACE "refs/amp-sync/"

#define AMP_SYNC_RETRIES_DEFAULT 10
#define AMP_SYNC_RETRIES_MAX     100

typedef struct amp_sync_result {
	char remote[256];        /* the remote synced with */
	unsigned long fetched;   /* records the local SSOT got from the remote */
	unsigned long replayed;  /* local records re-committed onto the
				  * remote's tip (in the last join) */
	unsigned long superseded; /* of those, the records set aside */
	int did_push;            /* 1 when the remote was behind and got
				  * the local history */
	unsigned long pushed;    /* records that push delivered */
	unsigned retries;        /* pushes refused because someone pushed
				  * first, and fetches or pushes the server
				  * reset, each followed by a new fetch */
	char tip[GIT_OID_HEXSZ + 1]; /* the messages ref, local and remote */
	int errors_synced;       /* 1: the errors ref was joined too (by a
				  * union of its files, always, when the
				  * sync succeeds) */
	int inbox;               /* 1: amp.syncPush inbox */
	int pending;             /* inbox: the push went to the inbox, and
				  * the hub's join under way had not taken
				  * it by the last fetch (nothing lost: the
				  * next sync sees it joined) */
	unsigned refetched;      /* inbox: fetches again for that join */
} amp_sync_result;

/*
 * The remote to sync with into buf: `given` when not NULL, else git config
 * amp.remote, else "origin".  AMP_EUSAGE when it is empty, starts with "-"
 * (it would be read as an option) or does not fit.
 */
int amp_sync_remote(amp_store *st, const char *given, char *buf, size_t bufsz,
		    amp_error *err);

/*
 * Fetches, joins and pushes as described above, for at most amp.syncRetries
 * (git config, 1..100, default 10) refused pushes, with jittered
 * exponential backoff between them.  A push the hub's amp hook refuses
 * for records it names ("amp hook: refused <ref>: commit <id>: <record
 * path>: <reason>" on git's stderr: what only the hub's settings refuse)
 * has those records set aside by a join, logged and escalated once, and
 * the rest pushed again, for at most 100 such rounds, each setting aside
 * a record not set aside before.  Returns AMP_OK with *res filled;
 * AMP_ERULE for a conflicting record (named in err; logged on the errors
 * ref, nothing moved); AMP_EIO when git fails (its own reason went to
 * stderr) or the retries run out; AMP_EUSAGE for a bad setting.  `set`
 * holds the schemas the re-check and the escalation need.  Local
 * history is never lost: the local ref only ever moves to a commit that
 * contains every record it had.
 */
int amp_sync(amp_store *st, amp_schema_set *set, const char *remote,
	     amp_sync_result *res, amp_error *err);

/* The namespace a hub takes clones' pushes in: AMP_SYNC_INBOX
 * (record/names.h). */

typedef struct amp_sync_absorbed {
	git_oid tip;              /* the ref after the join */
	unsigned long replayed;   /* records re-committed onto it */
	unsigned long superseded; /* of those, the ones set aside */
	long long waited_ms;      /* waiting for the other joins (the lock) */
	long long joined_ms;      /* the join itself, under the lock */
} amp_sync_absorbed;

/*
 * The hub's side of amp.syncPush inbox (post-receive): joins the history
 * `from` (a clone's, pushed to its inbox) into `ref` (the messages ref:
 * every record of `from` that `ref` lacks is replayed onto its tip and
 * checked again in its place, set aside when a rule refuses it, as the
 * clone's own join does; the errors ref: a union of files).  The ref
 * moves by compare-and-swap, starting over when another join moved it;
 * a ref the hub does not have yet is created at `from`.  Each record set
 * aside is then logged on the errors ref (its source `inbox`, the inbox
 * ref's name) and escalated once to the admin, as amp_sync does.  AMP_OK,
 * AMP_ERULE for a conflicting record (nothing moved), AMP_EIO.
 */
int amp_sync_absorb(amp_store *st, amp_schema_set *set, const char *ref, const git_oid *from,
		    const char *inbox, amp_sync_absorbed *out, amp_error *err);

/* One inbox a join of amp_sync_join_inboxes took. */
typedef struct amp_sync_inbox_joined {
	const char *inbox;      /* refs/amp-in/<id>/<name> */
	const char *target;     /* refs/amp/<name> */
	int status;             /* amp_sync_absorb's */
	const amp_error *err;   /* why, when status is not AMP_OK */
	amp_sync_absorbed out;  /* when it is */
} amp_sync_inbox_joined;

typedef void (*amp_sync_joined_fn)(const amp_sync_inbox_joined *j, void *ctx);

/* What amp_sync_join_inboxes did in this process. */
enum {
	AMP_SYNC_JOIN_LEFT,  /* another join was under way: it takes them */
	AMP_SYNC_JOIN_RAN,   /* joined what was pending */
	AMP_SYNC_JOIN_CHILD  /* this is the detached process that went on:
			      * the caller exits at once */
};

/*
 * The hub's join (post-receive): when no other join is under way, joins
 * every inbox whose tip is not joined yet (amp_sync_absorb), calling fn
 * after each; then, the lock let go, again only when a push raised the
 * flag <state dir>/join.wanted meanwhile (each push raises it before it
 * tries the lock, the join clears it before each look: sync_hub.c), so
 * the inboxes are listed once a push.  When inboxes are pending in a
 * later look, the rest goes on in a detached child (*ran
 * AMP_SYNC_JOIN_CHILD there), so the push that started it returns.  When another join is under way it returns at once (*ran
 * AMP_SYNC_JOIN_LEFT): that join takes this push's inbox.
 * Each inbox's marker, refs/amp-joined/<id>/<name>, then says its tip was
 * joined, or (AMP_ERULE) why it was refused; a join that failed for the
 * hub's own reason (AMP_EIO) leaves it pending for the next join.  AMP_OK
 * (whatever each inbox's join did) or AMP_EIO.
 */
int amp_sync_join_inboxes(amp_store *st, amp_schema_set *set, amp_sync_joined_fn fn,
			  void *ctx, int *ran, amp_error *err);

/*
 * After amp_sync_join_inboxes said AMP_SYNC_JOIN_LEFT: marks the inbox
 * `inbox` (refs/amp-in/<id>/<name>) at `tip` as left to the join under
 * way, refs/amp-joined/<id>/<name> -> a blob "left <tip>\n", unless its
 * marker says that tip is joined or refused already; by compare-and-swap,
 * so a join that marks it meanwhile keeps its word.  The clone's sync
 * fetches the marker and fetches again while it says so (amp-sharing(7),
 * INBOX MODE).  A ref that is no inbox of this hub is passed over.
 * AMP_OK or AMP_EIO.
 */
int amp_sync_mark_left(amp_store *st, const char *inbox, const git_oid *tip, amp_error *err);

#endif
