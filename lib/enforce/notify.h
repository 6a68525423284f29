/*
 * notify.h - notifications: run the admin's command once per new escalation
 * in the SSOT (and, optionally, once per new message to one role), so that
 * Telegram, Slack, mail or a desktop notification is one line of config.
 *
 * "New" means new in the SSOT since the last notified tip, whoever wrote it
 * (amp watch, amp send, amp verdict, amp ack, an agent's amp escalate, a
 * fetch).  The state is <git common dir>/amp/notify.json:
 *
 *   {"version":1, "ref":"refs/amp/messages", "tip":"<commit>",
 *    "pending":[{"kind":"escalation"|"message", "msg_id", "task_id", "type",
 *                "escalation_type", "severity" (strings, "" when absent),
 *                "path":"<record path>", "blob":"<blob id>",
 *                "attempts":<failed attempts>, "next_ms":<not before, Unix ms>,
 *                "last_error":"<why the last attempt failed>"|null}]}
 *
 * When there is none (notifications were never enabled on this store), or it
 * is unusable (not JSON, another version or ref), notifying starts from the
 * current tip: the history is not replayed, and the start is reported
 * (notify_start).  A pass adds the escalations and messages that reached the
 * SSOT between "tip" and the current tip to "pending", in SSOT order (the
 * order of the commits that brought them, then of their records), moves
 * "tip", and then tries the pending ones that are due, in order.
 *
 * A try runs `/bin/sh -c CMD` with the stored record, byte for byte, on its
 * stdin, its stdout sent to stderr (stdout is amp watch's), and the record's
 * fields in the environment only (AMP_NOTIFY_KIND, AMP_MSG_ID, AMP_TASK_ID,
 * AMP_TYPE, AMP_FROM, AMP_TO, AMP_ESCALATION_TYPE, AMP_SEVERITY,
 * AMP_NOTIFY_ATTEMPT): no value of a message is ever part of the command
 * line.  CMD runs in a process group of its own; one still running after
 * the timeout gets SIGTERM, and SIGKILL a second later.
 *
 * A try that fails (non-zero exit, killed by a signal, timed out) stays in
 * the queue with its next try at now + 1 s, doubling with each failure, at
 * most 1 h apart (measured with AMP_NOW).  After a failure the pass tries no
 * other notification (they wait, in order, for the next pass), so a broken
 * CMD costs a pass one timeout at most and never holds enforcement up for
 * long.  "pending" keeps at most max_pending notifications: beyond that the
 * oldest are dropped, each reported (notify_dropped); the escalations stay
 * in the SSOT.  State is saved after every try: a watcher killed between a
 * command's exit and the save runs that one notification again (at least
 * once, never lost).  Two watchers never notify at once: the pass holds an
 * flock on <git common dir>/amp/notify.lock, and one that finds it held
 * skips its notifications (stats->busy).
 */
#ifndef AMP_NOTIFY_H
#define AMP_NOTIFY_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "store/store.h"

#define AMP_NOTIFY_TIMEOUT_SEC      30
#define AMP_NOTIFY_TIMEOUT_SEC_MAX  3600
#define AMP_NOTIFY_MAX_PENDING      1000
#define AMP_NOTIFY_MAX_PENDING_MAX  100000
#define AMP_NOTIFY_BACKOFF_MAX_MS   3600000
#define AMP_NOTIFY_CMD_MAX          4096

typedef struct amp_notify_opts {
	char cmd[AMP_NOTIFY_CMD_MAX]; /* "" : notifications off */
	char role[32];          /* also notify messages to this role ("": no) */
	int timeout_sec;        /* 1..3600 */
	size_t max_pending;     /* 1..100000 */
	int64_t now_ms;         /* for the backoff (AMP_NOW) */
	/* Where a pass with no state to go on (no notify.json, or one that
	 * cannot be used) starts: the tip before this pass's enforcement
	 * wrote, so that the escalations it wrote are notified.  Unset
	 * (has_first_tip 0): the tip when notifying starts. */
	git_oid first_tip;
	int has_first_tip;
	/* When it becomes non-zero (a signal), a running CMD is killed, the
	 * try does not count and the pass ends.  May be NULL. */
	const volatile sig_atomic_t *cancel;
} amp_notify_opts;

/*
 * Fills o from git config: amp.notify (the command), amp.notifyRole,
 * amp.notifyTimeout (1..3600 s, default 30), amp.notifyMaxPending
 * (1..100000, default 1000); and the clock.  AMP_EUSAGE naming the key for
 * a value out of range or too long.  The role is not checked here.
 */
int amp_notify_opts_load(amp_store *st, amp_notify_opts *o, amp_error *err);

/* One thing the notifications of a pass did.  Strings are borrowed. */
typedef struct amp_notify_event {
	const char *action;     /* "notified", "notify_failed", "notify_dropped",
				 * "notify_start" */
	const char *kind;       /* "escalation" | "message" (not notify_start) */
	const char *msg_id, *task_id, *type;
	const char *escalation_type, *severity; /* "" for a message */
	int attempt;            /* which try this was (notify_dropped: the
				 * failed tries so far) */
	const char *error;      /* notify_failed: "exited 1", "was killed by
				 * signal 9", "timed out after 2 s"...;
				 * notify_dropped: why; notify_start: why */
	int64_t retry_in_ms;    /* notify_failed: until the next try */
	const char *tip;        /* notify_start: the commit notifying starts after */
} amp_notify_event;

typedef void (*amp_notify_report_fn)(const amp_notify_event *e, void *ctx);

typedef struct amp_notify_stats {
	int busy;          /* another watcher holds the lock: nothing done */
	size_t queued;     /* added to the queue by this pass */
	size_t notified;
	size_t failed;
	size_t dropped;
	size_t pending;    /* in the queue after the pass */
} amp_notify_stats;

/*
 * One pass of notifications (o->cmd not empty), after the enforcement pass.
 * Calls report (may be NULL) for each event.  A failing CMD is no error:
 * it is reported and kept.  Returns AMP_OK, or AMP_EIO when the SSOT or the
 * state cannot be read or written (in `errors`).
 */
int amp_notify_pass(amp_store *st, const amp_notify_opts *o,
		    amp_notify_report_fn report, void *ctx,
		    amp_notify_stats *stats, amp_errlist *errors);

#endif
