/*
 * inbox.h - what waits for a role: the messages of the SSOT addressed to it
 * that it has not ACKed, and a way to wait until there is one.
 *
 * The answer comes from a derived file, <git common dir>/amp/inbox.json,
 * that holds every message of the SSOT without an ACK (whoever it is for)
 * and is keyed by the commit it was built from:
 *
 *   {"version":1, "ref":"refs/amp/messages",
 *    "policy":{"lock_threshold","max_clock_skew_ms","approval_levels"},
 *    "tip":"<commit>",
 *    "tasks":{"<task_id>":[{"msg_id","task_id","type","from","to",
 *                           "timestamp","requires_ack","deadline","path",
 *                           "agent"}]},
 *    "broken":{"<task_id>":"<why its directory cannot be read>"}}
 *   {"<task_id>":{"task_id","progress","questions","released"}}
 *
 * ("deadline": the ACK deadline in Unix ms, amp_task_ack_deadline, or
 * null; "agent": the named instance that wrote it, from the Amp-Agent
 * trailer of the commit that added it, or null -- found once, when the
 * record enters the file, by walking the history from the tip only until
 * the commits of the new records are found.)  On the line after it: what
 * the team reports on each task not finished (inbox_team.h), kept with
 * the tasks a diff touches, so that a warm `amp inbox coordinator` reads
 * no other file, and parsed only for the roles it is for.  The tip is
 * always read from the ref first: an unchanged ref is
 * answered from the file without reading any git object; a moved ref
 * (amp send, a fetch, a plain `git update-ref`) is caught up by diffing
 * the cached tip's tree against the new one and re-reading only the task
 * directories that differ; a file that is missing, unreadable, of another
 * version, ref or policy, or whose tip cannot be read is rebuilt from the
 * SSOT.  It is written to a temporary file and renamed, so racing readers
 * see a whole file, and any of the racers' files is right.
 */
#ifndef AMP_INBOX_H
#define AMP_INBOX_H

#include <git2.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>

#include "base/human.h"
#include "store/store.h"

/* How an answer was found, for benchmarks and tests. */
typedef enum {
	AMP_INBOX_HIT,      /* the cache was of the tip: no object read */
	AMP_INBOX_UPDATED,  /* the cache was caught up by a tree diff */
	AMP_INBOX_REBUILT,  /* the cache was built from the whole SSOT */
	AMP_INBOX_UNCACHED, /* --all: read from the SSOT, cache untouched */
} amp_inbox_source;

typedef struct amp_inbox {
	char tip[GIT_OID_HEXSZ + 1]; /* the commit the answer was read from */
	json_t *messages;   /* owned array, oldest first (timestamp, then
			     * msg_id): {"msg_id","task_id","type","from",
			     * "to","timestamp","requires_ack","deadline"
			     * (Unix ms or null),"acked","path","agent"
			     * (the Amp-Agent of the commit that added it,
			     * or null)} */
	amp_inbox_source source;
	json_t *team;       /* what the team reports (inbox_team.h), owned;
			     * NULL: not asked */
	json_t *reports;    /* the team's reports (inbox_team.h), from
			     * inbox.json or, with all, the records; owned;
			     * NULL: not for this role */
} amp_inbox;

/*
 * The messages addressed to `role` (their envelope's "to") that have no
 * ACK, of every task or of `task` only (NULL: all), at the tip of the
 * messages ref; with `all`, the ACKed ones too (read from the SSOT, not
 * from the cache: the cache holds only what waits).  A missing ref, a tip
 * that cannot be read or a task directory that cannot be read (one that
 * could hold the answer) is AMP_EIO: never an empty inbox.  A cache that
 * cannot be written is not an error.  Free with amp_inbox_free.
 */
int amp_inbox_read(amp_store *st, const char *role, const char *task, int all,
		   amp_inbox *out, amp_error *err);
void amp_inbox_free(amp_inbox *in);

/* Returned (positive) by amp_inbox_wait. */
#define AMP_INBOX_TIMEOUT 1 /* the timeout passed first */
#define AMP_INBOX_STOPPED 2 /* *stop was set by a signal handler */

/*
 * Blocks until amp_inbox_read(st, role, task, 0) is not empty, and fills
 * *out with it (AMP_OK).  It reads again on every change of the ref the
 * kernel reports (inotify on the directory of the loose ref file and on the
 * git common dir for packed-refs); where inotify is unavailable (or
 * $AMP_WAIT_POLL is set, for tests) it polls, every 10 ms at first and
 * doubling to once a second.  `timeout_ms` < 0 waits for ever; it is
 * measured on the monotonic clock (AMP_NOW does not shorten it).  Signals
 * are taken only while blocked, with `waitmask` as the signal mask
 * (pselect): a handler that sets *stop ends the wait with
 * AMP_INBOX_STOPPED.  Returns AMP_OK, AMP_INBOX_TIMEOUT, AMP_INBOX_STOPPED
 * or an error (amp_inbox_read's).
 */
int amp_inbox_wait(amp_store *st, const char *role, const char *task,
		   int64_t timeout_ms, const sigset_t *waitmask,
		   volatile sig_atomic_t *stop, amp_inbox *out, amp_error *err);

/*
 * The answer as `amp inbox` prints it, as of now_ms, in a string the caller
 * frees (NULL when out of memory).  With `json`, the documented object, on
 * one indented document and a newline: {"role","tip","ref","messages":
 * [{"msg_id","task_id","type","from","to","timestamp","requires_ack",
 * "deadline" (ISO 8601 or null),"due_seconds" (whole seconds until the
 * deadline, rounded down: negative when overdue; or null),"acked","path"}]}.
 * Else one line per message ("<time> <type> <from> -> <to> <task_id>
 * <msg_id> <due in 4m | overdue 12m | awaiting the admin's approval | no ACK
 * required | acked>"), then "as of <short commit> (<ref>)", or for none
 * "nothing for <role> as of <short commit> (<ref>)"; every
 * message-derived string escaped by amp_term, the time as amp_human_time
 * shows it in h's zone, columns aligned, overdue in red with h->color.
 */
char *amp_inbox_render(const amp_inbox *in, const char *role, const char *ref,
		       int64_t now_ms, int json, const amp_human *h);

#endif
