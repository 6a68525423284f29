/*
 * read.h - reading the SSOT back: one message by its msg_id, the chain of
 * messages it refers to, and the audit trail of the messages ref, record by
 * record (amp show, amp log).
 *
 * Nothing here reads more than it must: a message is found in its own task
 * directory (the task id is part of the msg_id), and the audit trail
 * compares each commit with its first parent path by path, skipping every
 * subtree whose id did not change.
 */
#ifndef AMP_READ_H
#define AMP_READ_H

#include <git2.h>
#include <jansson.h>
#include <stdint.h>

#include "record/record.h"
#include "base/error.h"
#include "store/store.h"

/* What a lookup of a msg_id found. */
typedef enum {
	AMP_STORED_OK,         /* a JSON object at its place */
	AMP_STORED_MISSING,    /* no such message in the SSOT (or no msg_id) */
	AMP_STORED_UNREADABLE, /* there, but not a JSON object, too large, or
				* its blob or task directory cannot be read */
} amp_stored_state;

/* One message of the SSOT, looked up by msg_id. */
typedef struct amp_stored_msg {
	char msg_id[AMP_MSG_ID_MAX_LEN + 1]; /* what was asked (cut if longer) */
	amp_stored_state state;
	char path[AMP_PATH_MAX]; /* its path in the tree; "" when missing */
	char *raw;               /* the blob's bytes exactly as stored, or NULL
				  * when it cannot be read; owned */
	size_t len;
	json_t *doc;             /* the record parsed, when state is OK; owned */
	char reason[AMP_MSG_MAX]; /* why it is missing or unreadable */
	char referenced_by[AMP_MSG_ID_MAX_LEN + 1]; /* context: the first message
						     * that named it ("" for the
						     * message asked) */
} amp_stored_msg;

/*
 * Looks msg_id up in `root` (a tip tree), reading its task directory and
 * nothing else: the directory's entry "<seq>.msg.<msg_id>.json".  Fills
 * *out (free with amp_stored_msg_free); a message that is missing or
 * unreadable is not an error but a state, with the reason.  Returns AMP_OK,
 * or AMP_EIO when out of memory.
 */
int amp_read_message(amp_store *st, git_tree *root, const char *msg_id,
		     amp_stored_msg *out, amp_error *err);
void amp_stored_msg_free(amp_stored_msg *m);

/* The most messages amp_read_context follows from one message. */
#define AMP_CONTEXT_MAX 1000

/*
 * The messages `msg` (state OK) points to, transitively: its context_ref,
 * and its payload's original_dispatch_ref, task_result_ref and
 * affected_msgs, in any task, each once, at most `cap` of them (*truncated
 * set to 1 when more were named).  The message itself is not included.
 * Sorted oldest first: by the unix_ms of the msg_id, then by msg_id.  A
 * message named but missing or unreadable is in the list with its state.
 * The caller frees the array and its items (amp_stored_msgv_free).
 */
int amp_read_context(amp_store *st, git_tree *root, const amp_stored_msg *msg,
		     size_t cap, amp_stored_msg **out, size_t *count,
		     int *truncated, amp_error *err);
void amp_stored_msgv_free(amp_stored_msg *v, size_t count);

/*
 * The entry of msg_id in its task's `amp status --json` messages[] (ACK
 * state, deadline, ACK by whom and when) at now_ms -- or, for a message
 * amp sync set aside, its entry in superseded[] (it has "kind") -- or NULL
 * when the task cannot be read (reason in err) or does not list it.  `cache` (a JSON
 * object the caller owns) keeps each task's status by task id, so a chain
 * of messages of one task reads its directory once.  Borrowed from cache.
 */
const json_t *amp_read_ack_state(amp_store *st, git_tree *root,
				 const char *msg_id, int64_t now_ms,
				 json_t *cache, amp_error *err);

/* 1 when `type` is a record type amp log can filter on: a message type,
 * "ack", or a control record type (control.schema.json). */
int amp_log_type_valid(const char *type);

/* What `amp log` lists; a NULL or default member does not filter. */
typedef struct amp_log_filter {
	const char *task;   /* only this task's directory is compared */
	const char *type;   /* the record's "type" */
	const char *from;
	const char *to;
	const char *grep;   /* a substring of the record's bytes as stored */
	int64_t since_ms;   /* INT64_MIN: no bound; inclusive */
	int64_t until_ms;   /* INT64_MAX: no bound; inclusive */
	long long limit;    /* at most this many records; 0: all */
	const git_oid *stop; /* not NULL: only the commits this one (an
			      * ancestor of the tip) does not reach */
	int names_only;      /* 1: the records are not read (doc, raw NULL):
			      * who added what, at the cost of the tree diffs */
	int release_packs;   /* 1: the caller holds no git_revwalk and no
			      * borrowed git_odb of the store, so that a walk
			      * of the whole history may let go of the packs
			      * every AMP_STORE_RELEASE_EVERY commits (store.h
			      * amp_store_release_packs) */
} amp_log_filter;

/* One record that a commit of the messages ref added. */
typedef struct amp_log_record {
	git_oid commit;
	const char *path;      /* tasks/<YYYY>/<S>/<task>/<name>, or
				* agents/<agent>/<name> (registry.h) */
	const char *task_id;   /* the task directory's name; "" for a
				* register record (no task) */
	amp_entry_kind kind;
	const char *id;        /* msg_id (message, ACK) or control name, from
				* the file name */
	const json_t *doc;     /* the record, or NULL when unreadable */
	const char *reason;    /* why it is unreadable, else NULL */
	const char *raw;       /* its bytes as stored, or NULL */
	size_t len;
	const char *agent;     /* the named instance that wrote the commit
				* (its Amp-Agent trailer), or NULL */
} amp_log_record;

/* Called for each record that passes the filter, newest first; returns 0
 * to go on, anything else to stop the walk. */
typedef int (*amp_log_fn)(const amp_log_record *rec, void *ctx);

/*
 * The audit trail: walks the messages ref from its tip along first parents
 * and, for each commit, the records it added or changed compared with its
 * parent (newest first, the last record of a commit first), calling `fn`
 * for each one that passes `f`.  A subtree that cannot be read is passed
 * over and noted in `problems` (commit and path), and the walk goes on.
 * Returns AMP_OK, or AMP_EIO when the ref or a commit cannot be read.
 */
int amp_log_walk(amp_store *st, const amp_log_filter *f, amp_log_fn fn,
		 void *ctx, amp_errlist *problems, amp_error *err);

/*
 * The `amp log --json` object of a record: commit, time, task_id, kind,
 * type, from, to, id, path, unreadable, agent (the instance that wrote
 * it, or null), record (and reason when unreadable).  The caller owns it.
 */
json_t *amp_log_record_json(const amp_log_record *rec);

/* The named instance that wrote commit c (its Amp-Agent trailer, store.h)
 * into buf; "" when none or not a valid name. */
void amp_commit_agent(const git_commit *c, char *buf, size_t bufsz);

/*
 * The named instance that wrote record `id` of `kind` in task `task`: the
 * Amp-Agent trailer of the commit that added it, found by walking the
 * history from the tip and comparing only that task's directory, newest
 * first, until it is found.  1 with agent[0..agentsz) filled ("" when the
 * commit names none), 0 when no commit adds it, or AMP_EIO.
 */
int amp_read_writer(amp_store *st, const char *task, amp_entry_kind kind, const char *id,
		    char *agent, size_t agentsz, amp_error *err);

/* "msg", "ack" or "ctl". */
const char *amp_entry_kind_name(amp_entry_kind kind);


/* The rest of the read/ layer's public interface. */
#include "agents.h"
#include "inbox.h"
#include "inbox_agent.h"
#include "summary.h"

#endif
