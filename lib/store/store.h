/*
 * store.h - the SSOT: AMP messages, ACKs and admin control records committed
 * to a dedicated ref of a git repository, append-only.
 *
 * Layout of the tree at the tip of the messages ref (default
 * refs/amp/messages, git config amp.ref):
 *
 *   AMP                                  format marker ("AMP/1.0 store 1")
 *   tasks/<YYYY>/<S>/<task_id>/          one directory per task, where S is
 *                                        the task number without its last two
 *                                        digits ("0" for T-2026-044), so no
 *                                        shard holds more than 100 tasks
 *     <seq>.msg.<msg_id>.json            a message
 *     <seq>.ack.<msg_id>.json            the ACK of that message
 *     <seq>.ctl.<name>.json              an admin control record (resume)
 *   agents/<agent>/register-<ms>-<blob12>.json  what an agent instance
 *                                        declared (registry.h): no task's
 *
 * <seq> is a 6-digit per-task sequence number, so a directory lists in
 * commit order.  Reading one task reads one directory and nothing else.
 *
 * Rejected messages go to a second ref (default refs/amp/errors, git config
 * amp.errorsRef) so that garbage never bloats the message history.
 *
 * Writers never touch the user's branches, index or working tree.
 */
#ifndef AMP_STORE_H
#define AMP_STORE_H

#include <git2.h>
#include <jansson.h>

#include "base/error.h"
#include "record/record.h" /* AMP_AGENT_MAX, amp_agent_valid */

#define AMP_STORE_DEFAULT_REF        "refs/amp/messages"
#define AMP_STORE_DEFAULT_ERRORS_REF "refs/amp/errors"

/* Returned (positive) by a build callback that finds nothing to write,
 * e.g. a message that is already in the store byte for byte. */
#define AMP_NOOP 1

typedef struct amp_store amp_store;

/* ==== The task log (tasklog.c) ============================================== */

/*
 * The protocol's data model as the store reads it: the records of one
 * task in order (amp_task_log), and the settings every rule applies
 * (amp_policy).  Filled by the reads (records.c), read by protocol/ and
 * every layer above it; none of it needs a repository.
 */

/* Risk levels of a dispatch (AMP/1.0 §01 risk_level), as bits. */
#define AMP_RISK_LOW    1u
#define AMP_RISK_MEDIUM 2u
#define AMP_RISK_HIGH   4u

/* The protocol settings of a repository (git config), read and checked once
 * when the store is opened, so every command applies the same ones. */
typedef struct amp_policy {
	int lock_threshold;        /* amp.lockThreshold: rejects since the last
				    * resume that lock a task, 1..1000 (3) */
	int64_t heartbeat_ms;      /* amp.heartbeatTimeout, 1..2592000 s (1800) */
	int64_t max_clock_skew_ms; /* amp.maxClockSkew, 1..86400 s (300): how far
				    * a written timestamp may be from the
				    * writer's clock */
	unsigned approval_levels;  /* amp.approvalRequired: the risk levels
				    * whose dispatch waits for the admin's
				    * approval (AMP_RISK_* bits; "high") */
} amp_policy;

#define AMP_POLICY_LOCK_THRESHOLD     3
#define AMP_POLICY_LOCK_THRESHOLD_MAX 1000
#define AMP_POLICY_HEARTBEAT_SEC      1800
#define AMP_POLICY_HEARTBEAT_SEC_MAX  2592000
#define AMP_POLICY_CLOCK_SKEW_SEC     300
#define AMP_POLICY_CLOCK_SKEW_SEC_MAX 86400

/* The defaults, for a log read without a store. */
extern const amp_policy amp_policy_default;

/* The risk level bit of a risk_level string, 0 when it is none. */
unsigned amp_risk_bit(const char *risk_level);

/* One record of a task directory. */
typedef enum { AMP_ENTRY_MSG = 'm', AMP_ENTRY_ACK = 'a', AMP_ENTRY_CTL = 'c' } amp_entry_kind;

typedef struct amp_entry {
	int seq;
	amp_entry_kind kind;
	char *id;   /* msg_id (message, ACK) or control name; owned */
	json_t *doc; /* parsed record; owned */
} amp_entry;

/* A record whose content is not a JSON object, or whose blob cannot be read
 * (missing or corrupt in the object database).  amp never writes one, but a
 * fetch, a hand-made commit or a damaged disk can bring one in, and an
 * append-only store keeps it forever: it is reported, not allowed to block
 * the task. */
typedef struct amp_bad_record {
	int seq;
	amp_entry_kind kind;
	char *id;        /* owned */
	char *name;      /* file name in the task directory; owned */
	char *reason;    /* why it is unreadable; owned */
} amp_bad_record;

typedef struct amp_task_log {
	char task_id[64];
	amp_entry *entries; /* in sequence order */
	size_t count;
	int next_seq;       /* what the next record of the task gets */
	amp_bad_record *bad; /* unreadable records, in sequence order */
	size_t nbad;
	amp_entry *superseded; /* records set aside, in sequence order */
	size_t nsuperseded;
	const amp_policy *policy; /* the store's settings (borrowed) */
	int layout; /* of the tree it was read from (store.h "Layout"): where
		     * its records are and a new one goes; -1 unknown */
	/* A hash index of entries for amp_task_log_find, built as lookups
	 * need it; made by amp_store_read_task, owned by the log and freed
	 * with it.  Views of a prefix (a copy with a smaller count) share
	 * it; a copy with an entries array of its own must set it to NULL
	 * (NULL: lookups scan). */
	struct amp_log_index *index;
} amp_task_log;

void amp_task_log_free(amp_task_log *log);

/* Appends a record to log, as if it were the next file of the task
 * directory: to log->superseded when `aside`, else to log->entries.  The
 * log takes over the reference to doc (also on failure); id is copied.
 * -1 when out of memory. */
int amp_task_log_append(amp_task_log *log, int seq, amp_entry_kind kind, const char *id,
			json_t *doc, int aside);

/* The "superseded" marker of superseded record s of log (the entry just
 * before it); NULL when there is none.  Borrowed. */
const amp_entry *amp_task_log_marker(const amp_task_log *log, const amp_entry *s);

/* 1 when e is a "superseded" marker (a control record of that type from
 * system); its record's name goes to *record (borrowed from e). */
int amp_entry_is_marker(const amp_entry *e, const char **record);

/* The path of record file `name` of the log's task, from the root, in
 * the log's layout (amp_store_record_path), into buf; -1 when it does not
 * fit or the layout is unknown. */
int amp_task_log_record_path(const amp_task_log *log, const char *name, char *buf,
			     size_t bufsz);
/* The same for entry e of the log. */
int amp_task_log_entry_path(const amp_task_log *log, const amp_entry *e, char *buf,
			    size_t bufsz);

/* The message (kind AMP_ENTRY_MSG) or ACK of `msg_id` in log; NULL if none.
 * Borrowed. */
const amp_entry *amp_task_log_find(const amp_task_log *log,
				   amp_entry_kind kind, const char *msg_id);

/* A copy of a log with an entries array of its own (the log plus the
 * records a write adds) gets an index of its own, so that its lookups do
 * not scan (a verdict into a task of 10,000 records compared 1.2G entries
 * checking the lock it may bring): -1 when out of memory (lookups scan).
 * amp_task_log_view_free frees such a copy's array and index, not its
 * records' ids and docs (borrowed from the log). */
int amp_task_log_own_index(amp_task_log *log);
void amp_task_log_view_free(amp_task_log *log);
/* How many entries lookups of logs without an index compared so far in
 * this process: what AMP_TRACE reports as lookup_scans. */
unsigned long amp_task_log_scanned(void);

/* 1 when msg_id names a message of the log, readable or not, in force or
 * set aside: an id that must not be given to another message. */
int amp_task_log_id_taken(const amp_task_log *log, const char *msg_id);

/* ==== The repository (repo.c) =============================================== */

/*
 * Opens the repository holding the SSOT: `path` when not NULL, else
 * $AMP_REPO, else the repository found from the current directory the way
 * git finds it.  Bare repositories are fine.  Free with amp_store_free.
 */
int amp_store_open(amp_store **out, const char *path, amp_error *err);
void amp_store_free(amp_store *st);

git_repository *amp_store_repo(amp_store *st);
const char *amp_store_messages_ref(const amp_store *st);
const char *amp_store_errors_ref(const amp_store *st);
/* The settings of this repository (never NULL). */
const amp_policy *amp_store_policy(const amp_store *st);

/*
 * Named agent instances: the instance writing ("alice"), recorded on every
 * commit this handle writes as the author name and an "Amp-Agent: <name>"
 * trailer (the author email keeps the role).  A name is what
 * amp_agent_valid (record/names.h) accepts.  In strict mode with no name
 * set, the signing key's principal "<name>@<role>" names it; a name that
 * disagrees with the principal is refused (amp_signing_may_write).
 */

/* Sets (NULL or "": clears) the instance; AMP_EUSAGE for a bad name. */
int amp_store_set_agent(amp_store *st, const char *name, amp_error *err);
/* The instance, or NULL when none is set.  Borrowed. */
const char *amp_store_agent(const amp_store *st);

/* The signing settings (sign.h), read when the store was opened: a bad
 * amp.requireSigned, strict mode without amp.allowedSigners, and AMP_NOW
 * in strict mode are AMP_EUSAGE there. */
struct amp_signing;
const struct amp_signing *amp_store_signing(const amp_store *st);
/* The directory amp keeps private state in: <git common dir>/amp. */
const char *amp_store_state_dir(const amp_store *st);
/* The repository's object directory: <git common dir>/objects. */
const char *amp_store_objects_dir(const amp_store *st);

/* git config amp.fsync, as read when the store was opened. */
int amp_store_fsync(const amp_store *st);
/* How many records this store's reads parsed from git, and how many came
 * from a record cache (reccache.h) instead: what AMP_TRACE reports. */
void amp_store_record_counts(const amp_store *st, unsigned long *parsed, unsigned long *cached);
/* How many trees of task directories its reads took from git, and how
 * many from a task's tree cache (treecache.h): AMP_TRACE's trees_read,
 * trees_cached. */
void amp_store_tree_counts(const amp_store *st, unsigned long *read, unsigned long *cached);

/* From now on (on = 1) until on = 0, the reads of this store share the
 * records they parse or take from a record cache, by blob id (a reference
 * each; at most AMP_STORE_SHARED of them), as a batch's reads do: for a
 * command that reads a task before its write reads it again (amp verdict
 * finds the request it answers), so that the second read builds none of
 * the records the first built.  Not during a batch, which shares its own. */
#define AMP_STORE_SHARED 16384
void amp_store_share_records(amp_store *st, int on);

/* Reads git config `key` into buf ("" when unset); returns 1 when set. */
int amp_store_config(amp_store *st, const char *key, char *buf, size_t bufsz);

/* Reads boolean git config `key` into *out (`fallback` when unset), as git
 * spells booleans.  AMP_EUSAGE naming the key when it is not one. */
int amp_store_config_bool(amp_store *st, const char *key, int fallback,
			  int *out, amp_error *err);

/* How many CAS retries this store handle has needed so far (update.c). */
unsigned long amp_store_retries(const amp_store *st);

/* ==== Layout (layout.c) ===================================================== */

/*
 * The SSOT's two layouts.  1 (d39ab41 and before, no AMP_LAYOUT_FILE):
 * tasks/<YYYY>/<S>/<task_id>/<record>.  2 (AMP_LAYOUT_FILE at the root
 * holding "2\n"): tasks/<YYYY>/<A>/<B>/<task_id>/<s1>/<s2>/<record>, the
 * year and the task fanned out so that no tree a write rewrites holds
 * more than 100 entries (layout.c says how).  Readers take either;
 * writers write the layout of the tip they write on (amp_store_layout);
 * `amp migrate` moves a layout-1 SSOT to 2 in one new commit.
 */
#define AMP_LAYOUT_FILE "amp-layout"
#define AMP_LAYOUT_FLAT 1
#define AMP_LAYOUT_FANNED 2

#define AMP_LAYOUT_UNKNOWN (-1)
#define AMP_LAYOUT_UNREADABLE (-2)

/* The layout of tip tree root (NULL: an empty SSOT, layout 1): 1, 2,
 * AMP_LAYOUT_UNKNOWN when its AMP_LAYOUT_FILE names none amp knows, or
 * AMP_LAYOUT_UNREADABLE when that file cannot be read (git_error_last()
 * says why). */
int amp_store_tree_layout(git_repository *repo, git_tree *root);
/* Fills err for a negative layout from amp_store_tree_layout and returns
 * its status (AMP_EIO). */
int amp_store_layout_error(int layout, amp_error *err);
/* The same, an unknown layout an AMP_EIO error (a newer amp's SSOT). */
int amp_store_layout(amp_store *st, git_tree *root, amp_error *err);

/* Writes the task directory of task_id in `layout` into buf
 * ("tasks/2026/0/T-2026-044", "tasks/2026/0/0/T-2026-044").  Returns 0,
 * or -1 when task_id is not one (amp_task_id_valid: T-YYYY- and 3 to 9
 * digits) or does not fit. */
int amp_store_task_dir(int layout, const char *task_id, char *buf, size_t bufsz);
/* The directories of record number `seq` below its task directory in
 * `layout` ("" in layout 1, "00/01" in 2), into buf; -1 when it does not
 * fit or seq is out of range. */
int amp_store_record_subdir(int layout, int seq, char *buf, size_t bufsz);
/* The path of record file `name` (amp_store_entry_name) of task_id in
 * `layout`, from the root, into buf: the one place a record's path is
 * made.  -1 when either is not one or it does not fit. */
int amp_store_record_path(int layout, const char *task_id, const char *name, char *buf,
			  size_t bufsz);

/* The task of record path `path` (tasks/<YYYY>/<S>/<task_id>/<name> in
 * layout 1, tasks/<YYYY>/<A>/<B>/<task_id>/<s1>/<s2>/<name> in 2) into
 * task and its file name into *name (in path): 0.  With `layout` 1 or 2,
 * -1 unless path is that record's amp_store_record_path in that layout;
 * with 0, either depth will do, whatever the names (a path to report).
 * -1 too when the task does not fit tasksz. */
int amp_store_record_path_parse(int layout, const char *path, char *task, size_t tasksz,
				const char **name);

/* The task directory of task_id in root, in whichever layout holds it
 * (the new first), into *out (the caller frees it) and its path into dir:
 * 0; GIT_ENOTFOUND (git's error cleared) when neither has it; else a
 * libgit2 error. */
int amp_store_task_lookup(git_tree *root, const char *task_id, git_tree_entry **out,
			  char *dir, size_t dirsz);
/* The same for record file `name` of task_id, its path into path. */
int amp_store_record_lookup(git_tree *root, const char *task_id, const char *name,
			    git_tree_entry **out, char *path, size_t pathsz);

/* The layout-2 tree of layout-1 tip tree root (NULL: empty) into *out:
 * every record's blob and name kept, moved to its layout-2 place;
 * anything that is not a task in its place kept at its path;
 * AMP_LAYOUT_FILE added.  What `amp migrate` commits and the hook
 * compares a pushed migration with.  AMP_OK or AMP_EIO. */
int amp_store_migrate_tree(amp_store *st, git_tree *root, git_oid *out, amp_error *err);

/* Moves the messages ref to layout 2 in one new commit (history stays
 * append-only: the records keep their blobs and names, amp_store_migrate_tree),
 * as a compare-and-swap like any write: AMP_OK (the commit in *out),
 * AMP_NOOP when the tip is in layout 2 already, or an error. */
int amp_store_migrate(amp_store *st, git_oid *out, amp_error *err);

/* The entries of a tree with its fan-out directories (names of digits
 * only, `levels` deep at most) walked through: every reader of a task's
 * records lists them this way (amp_store_task_files), in name order,
 * which is sequence order.  Each entry borrows from the trees kept in
 * the list; free with amp_flat_free. */
typedef struct amp_flat_entry {
	const git_tree_entry *e;
	const char *sub; /* the fan-out directories it is in: "" or "00/01" */
} amp_flat_entry;
typedef struct amp_flat {
	amp_flat_entry *v;
	size_t count, alloc;
	git_tree **trees; /* kept, with the path of each (subs) */
	char **subs;
	size_t ntrees;
} amp_flat;
/* 0, or -1 with libgit2's error set (out of memory too) and *out empty. */
int amp_store_flatten(git_repository *repo, git_tree *tree, int levels, amp_flat *out);
/* The record files of a task directory's tree, in either layout. */
int amp_store_task_files(git_repository *repo, git_tree *task_tree, amp_flat *out);
void amp_flat_free(amp_flat *f);
/* Every task directory of tip tree root (NULL: none) in either layout,
 * its name and tree id, sorted by name, into *out (the caller frees it):
 * for comparing trees of two layouts (treediff.c).  -1 when a tree cannot
 * be read or memory runs out. */
typedef struct amp_task_tree {
	char name[64];
	git_oid id;
} amp_task_tree;
int amp_store_tree_tasks(git_repository *repo, git_tree *root, amp_task_tree **out,
			 size_t *count);
/* How many fan-out levels lie between a year's tree and its shards (the
 * trees that hold task directories) in `layout`: 0 or 1. */
int amp_store_shard_levels(int layout);
/* 1 when a directory of this name is a fan-out directory (digits only). */
int amp_store_is_fanout(const char *name);

/* ==== Names (names.c) ======================================================= */


/* The task id embedded in a msg_id ("{type}-{task_id}-{unix_ms}"), into
 * buf; returns 0, or -1 when msg_id is not one (amp_msg_id_parse) or the
 * task id does not fit. */
int amp_msg_id_task(const char *msg_id, char *buf, size_t bufsz);

/* Splits a record's file name "<seq>.<msg|ack|ctl>.<id>.json" into its
 * sequence number (seq may be NULL), kind and id (a pointer into name, of
 * *id_len bytes).  0, or -1 when name is not a record's. */
int amp_store_entry_parse(const char *name, int *seq, amp_entry_kind *kind,
			  const char **id, size_t *id_len);

/* The file name of a record in its task directory,
 * "<seq>.<msg|ack|ctl>.<id>.json", into buf; -1 when it does not fit
 * (never a truncated name). */
int amp_store_entry_name(int seq, amp_entry_kind kind, const char *id,
			 char *buf, size_t bufsz);

/*
 * A record's own signature (issue 32, recsig.h): an SSH signature of the
 * record's bytes, beside it in the same directory.  Its path is computed
 * from the record's path here and nowhere else, so the record and its
 * signature move together whatever the layout of a task's directory.
 */
#define AMP_RECORD_SIG_SUFFIX ".sig"
/* The path of the signature of the record at `record_path` into buf;
 * -1 when it does not fit. */
int amp_store_record_sig_path(const char *record_path, char *buf, size_t bufsz);
/* The record path whose signature is at `path` into buf; -1 when `path`
 * is no signature's path (or does not fit). */
int amp_store_sig_record_path(const char *path, char *buf, size_t bufsz);

/* ==== History (history.c) =================================================== */

/*
 * The commits from a tip down its first parents, the tip first, holding
 * nothing per commit: libgit2's revwalk keeps a node per commit it has
 * seen (19 MB for a walk of 100k messages).  amp writes commits of one
 * parent each; a merge made by hand is a commit like the others, its
 * first parent next.
 */
typedef struct amp_first_parents {
	git_repository *repo;
	git_oid next;
	int done;
} amp_first_parents;

void amp_first_parents_start(amp_first_parents *w, git_repository *repo, const git_oid *tip);
/* The next commit into *out (the caller frees it): 0; GIT_ITEROVER past
 * the root; a libgit2 error (< 0, git_error_last() says why) when the
 * commit cannot be read, which ends the walk.  Calls amp_store_walk_step. */
int amp_first_parents_next(amp_first_parents *w, git_commit **out);
/* The ids of the first-parent line from `tip` down, the tip first, into
 * *ids (malloc'd, *n of them; the caller frees it).  AMP_EIO when a
 * commit cannot be read (nothing returned). */
int amp_first_parents_ids(git_repository *repo, const git_oid *tip, git_oid **ids, size_t *n,
			  amp_error *err);

/* Closes the packs libgit2 opened for the store's repository, with the
 * delta bases it keeps per pack (release.c), reopened at the next lookup:
 * for a long walk whose caller holds no git_revwalk (it points at the odb
 * this frees) nor git_odb of the store (it would keep the packs open).
 * Does nothing during a batch.  amp_log_walk (read.h) calls it every
 * AMP_STORE_RELEASE_EVERY commits when its caller says it may. */
void amp_store_release_packs(amp_store *st);
#define AMP_STORE_RELEASE_EVERY 1024

/* ==== Reading (records.c) =================================================== */

/*
 * The commit and tree at the tip of `ref`.  Both are new references the
 * caller frees.  A missing ref is an AMP_EIO error that says to run
 * `amp init`.
 */
int amp_store_tip(amp_store *st, const char *ref, git_commit **commit,
		  git_tree **tree, amp_error *err);

/* Reads every record of one task from `root` (a tip tree).  A task with no
 * directory yields an empty log.  Records that are not JSON objects or whose
 * blob cannot be read go to log->bad; only a task directory whose tree
 * cannot be read is an error (AMP_EIO): the whole task is unreadable.
 * A record named by a "superseded" control record from system whose
 * sequence number is that record's plus one (amp sync's join, sync.h)
 * goes to log->superseded: kept and shown, but in force nowhere (the
 * marker itself stays in entries).  Free with amp_task_log_free. */
int amp_store_read_task(amp_store *st, git_tree *root, const char *task_id,
			amp_task_log *log, amp_error *err);
/* The same with the control records only (kind AMP_ENTRY_CTL: depend,
 * plan, claim, superseded ...): messages and ACKs are skipped by their
 * file names, never read, so the cost does not grow with the task's
 * conversation.  log->next_seq still counts every record. */
int amp_store_read_task_controls(amp_store *st, git_tree *root, const char *task_id,
				 amp_task_log *log, amp_error *err);

/*
 * 1 when tree entry e, found in tasks/<shard>/ (shard "<YYYY>/<S>"), is a
 * task's directory in its place: a tree named by a task id whose
 * amp_store_task_dir is that path.  Else 0, and the entry is added (once)
 * to amp_store_skipped: a sync from a hub without amp's hook can bring
 * such a thing, and every listing of the tasks (amp_store_list_tasks, the
 * summaries) skips it, so that the command lists the rest and reports it
 * (amp_cli_report_skipped).
 */
int amp_store_task_in_place(amp_store *st, const char *shard, const git_tree_entry *e);

/* What the listings skipped since the store was opened (or the list was
 * cleared), one AMP_EIO error each, its path the entry's
 * ("tasks/2026/0/junk").  Borrowed. */
const amp_errlist *amp_store_skipped(const amp_store *st);
/* Adds path (once) to amp_store_skipped, with why. */
void amp_store_note_skipped(amp_store *st, const char *path, const char *why);
/* Empties amp_store_skipped (reported). */
void amp_store_skipped_clear(amp_store *st);

/* amp_store_list_tasks, with the id of each task directory's tree in
 * *trees (same order; the caller frees the array). */
int amp_store_list_task_trees(amp_store *st, git_tree *root, char ***ids,
			      git_oid **trees, size_t *count, amp_error *err);

/* Every task id in the store, sorted; the caller frees the array and each
 * string (amp_strv_free).  What is not a task in its place is skipped
 * (amp_store_task_in_place). */
int amp_store_list_tasks(amp_store *st, git_tree *root, char ***ids,
			 size_t *count, amp_error *err);
void amp_strv_free(char **v, size_t count);

/* ==== Comparing trees (treediff.c) ========================================== */

/*
 * The one walker of two trees: what differs between tree a and tree b
 * (either NULL: empty), reading only the subtrees whose ids differ, so
 * that the cost follows the change, not the size of the SSOT (libgit2's
 * tree diff reads every entry of both trees: a walk of the whole history
 * became quadratic).  The hook's check of a commit, amp log's records of
 * a commit, the registry's joins and the diffs below all walk with it.
 */
typedef struct amp_tree_diff amp_tree_diff;

/* An entry that differs, as the visitor sees it. */
typedef struct amp_tree_diff_entry {
	const char *prefix; /* the path of the tree holding it ("" the root) */
	const char *name;
	const char *path;   /* prefix/name, cut to AMP_PATH_MAX - 1 bytes */
	size_t path_len;    /* the length of prefix/name: >= AMP_PATH_MAX when cut */
	int depth;          /* of the tree holding it: 0 at the root */
	const git_tree_entry *a; /* a's entry of that name, NULL when none */
	const git_tree_entry *b; /* b's, NULL for an entry only a has (below) */
	const char *task;   /* below tasks/: the task directory's name above
			     * it (depth 4 and below), else NULL */
} amp_tree_diff_entry;

/* What a visitor returns, or < 0 to stop the walk (its result). */
#define AMP_TREE_DIFF_SKIP    0 /* on to the next entry */
#define AMP_TREE_DIFF_DESCEND 1 /* walk the entry's two subtrees (a side
				 * that is no tree: empty), then go on */
#define AMP_TREE_DIFF_GONE    2 /* with DESCEND: in those subtrees visit
				 * the entries a has and b lacks too */

struct amp_tree_diff {
	git_repository *repo;
	int modes; /* 1: an entry whose mode changed differs, its id the same */
	/* Called for each entry of b whose id differs from that of a's entry
	 * of the same name, or that a lacks, in b's order; then, where GONE
	 * was asked, for each entry of a that b lacks (e->b NULL). */
	int (*visit)(amp_tree_diff *d, const amp_tree_diff_entry *e);
	/* Called when a subtree to descend into cannot be read: its result
	 * is the walk's (0: go on).  NULL: the walk ends in -1. */
	int (*unreadable)(amp_tree_diff *d, const amp_tree_diff_entry *e);
	void *ctx; /* the caller's */
};

/* Walks a and b, trees at `prefix`, `depth` below the root (`how`: 0 or
 * AMP_TREE_DIFF_GONE).  Below tasks/, a fan-out directory (layout 2's
 * <B> and a task's <s1>/<s2>, store.h "Layout") where a task directory
 * (depth 3) or a record (depth 4) is expected is walked through at that
 * depth, not visited: visitors see either layout as layout 1's depths.
 * Returns 0, or what stopped it (< 0). */
int amp_tree_diff_walk(amp_tree_diff *d, git_tree *a, git_tree *b, const char *prefix,
		       int depth, int how);

/*
 * Adds to `touched` ({task: {record name: true}}) every record that differs
 * between tip trees a (NULL: empty) and b.  Subtrees with the same id are
 * skipped, so the cost follows the change, not the size of the SSOT
 * (libgit2's tree diff reads more than that).  A task directory of b that
 * cannot be read maps to null (read it whole, or find it broken); a task
 * whose directory vanished from a (history rewritten) maps to {}.  With
 * `ms` >= 0 (one commit of a walk) each record gets the least ms seen for it
 * instead of true, and a tree that cannot be read is passed over.  Returns
 * 0, or -1 when a tree above the task directories cannot be read.
 */
int amp_store_diff_tasks(git_repository *repo, git_tree *a, git_tree *b,
			 json_t *touched, int64_t ms);

/* amp_store_diff_tasks (ms < 0), except that a task directory that a does
 * not have maps to true ("every record is new") instead of to a list of
 * all its records: what amp watch needs, whose first pass over an SSOT of
 * 200,000 records listed every one of them.  With `skip` not NULL, an
 * entry of b's shards that is not a task in its place is left out and
 * noted there (amp_store_task_in_place). */
int amp_store_diff_tasks_whole(git_repository *repo, amp_store *skip, git_tree *a, git_tree *b,
			       json_t *touched);

/*
 * Records (task id, file name) mapped to a time in ms, the least one seen
 * kept: when each record first reached the SSOT, or the place in history
 * of the commit that brought it (amp_watch_walk_records).  A walk of the
 * whole history (amp watch --full, a first amp watch) maps every record of
 * the SSOT, so the map holds at most 2 MiB of 32-byte slots, keyed by a
 * hash of the names (rectimes.c), and writes the rest to sorted runs in a
 * temporary file, merged at the first lookup: 2,000,000 records (1M
 * messages) took 96 MB of memory, 144 MB while the table doubled.
 */
typedef struct amp_record_times amp_record_times;

/* An empty map (NULL when out of memory); free with amp_record_times_free. */
amp_record_times *amp_record_times_new(void);
void amp_record_times_free(amp_record_times *t);
/* The time of record `name` of `task`, or -1 when it has none (or its
 * runs cannot be read back: the records then count from their
 * timestamps).  Lookups of one task's records one after the other read
 * one stretch of the runs. */
int64_t amp_record_times_get(const amp_record_times *t, const char *task, const char *name);
/* Sets it to ms (>= 0) unless it has a lesser one; -1 when out of memory. */
int amp_record_times_put(amp_record_times *t, const char *task, const char *name, int64_t ms);

/* amp_store_diff_tasks with `ms` >= 0, into a map of record times: each
 * record that differs between a and b gets ms unless it has less. */
int amp_store_diff_times(git_repository *repo, git_tree *a, git_tree *b,
			 amp_record_times *times, int64_t ms);

/* ==== Writing (update.c, commit.c) ========================================== */

/* Creates both refs with a root commit when missing.  In strict mode
 * (sign.h) each ref without one gets the admin's marker of where trust
 * starts (amp_trust), on its root when new: AMP_ERULE when the signing
 * key does not grant admin.  *created (optional) is set to 1 when a ref
 * was created, to 2 (or 3) when a marker was written.  Idempotent. */
int amp_store_init(amp_store *st, int *created, amp_error *err);

/* What a build callback asks the store to commit. */
/* 4 records and, in strict mode, their signatures (recsig.h) */
#define AMP_WRITE_MAX_FILES 8
typedef struct amp_store_write {
	struct {
		char path[AMP_PATH_MAX];
		char *data; /* malloc'd; the store frees it */
		size_t len;
	} files[AMP_WRITE_MAX_FILES];
	size_t nfiles;
	char subject[512];  /* commit subject line */
	char trailers[1024]; /* "Key: value\n" lines, may be empty */
	char author[32];    /* the role that writes */
	int64_t time_ms;    /* the author and committer time; 0: now (amp
			     * import: the record's own timestamp) */
	int replace;        /* 1: the commit's tree is `tree`, no file added
			     * (amp migrate's one commit) */
	git_oid tree;
} amp_store_write;

/* Adds a file to w; data is copied.  The files of one write share a
 * directory, or (a task's records in layout 2, store.h "Layout") a task's
 * fan-out directories. */
int amp_store_write_add(amp_store_write *w, const char *path, const char *data,
			size_t len, amp_error *err);

/*
 * Called by amp_store_update with the current tip tree of the ref (NULL for
 * an empty ref).  Fills `w` and returns AMP_OK to commit it, AMP_NOOP to
 * commit nothing, or an error status (with err filled) to abort.  It may run
 * several times when other writers move the ref: it must decide from `tip`
 * alone.
 */
typedef int (*amp_store_build_fn)(amp_store *st, git_tree *tip, void *ctx,
				  amp_store_write *w, amp_error *err);

/*
 * Appends one commit to `ref` as a compare-and-swap: build on the tip,
 * write the objects, move the ref only if nobody else moved it meanwhile;
 * otherwise rebuild on the new tip and retry, with jittered exponential
 * backoff, for at most amp.retryTimeout seconds (default 30).  A ref lock
 * left by a killed writer is removed once provably stale.  Existing files
 * are never modified: adding a path that holds other content fails.
 *
 * Returns AMP_OK (commit id in *out when not NULL), AMP_NOOP, or the
 * callback's error.  On AMP_OK the ref points at a commit holding the files.
 */
int amp_store_update(amp_store *st, const char *ref, amp_store_build_fn build,
		     void *ctx, git_oid *out, amp_error *err);

/* Returned by a step callback when there is no step i: the batch is whole. */
#define AMP_DONE 2

/*
 * Called by amp_store_update_batch for steps i = 0, 1, 2, ... with the tree
 * the steps before it left (the ref's tip for i = 0; NULL for an empty
 * ref).  Fills `w` and returns AMP_OK to commit it on top of them, AMP_NOOP
 * to commit nothing for this step, AMP_DONE when there is no step i, or an
 * error status (with err filled) to abort the whole batch.  After a lost
 * compare-and-swap the steps run again from 0 on the new tip.
 */
typedef int (*amp_store_step_fn)(amp_store *st, git_tree *tip, void *ctx, size_t i,
				 amp_store_write *w, amp_error *err);

/*
 * amp_store_update for many commits: one commit per step that returns
 * AMP_OK, each on the one before, built in memory (objects written as
 * packs, a pack every AMP_STORE_BATCH_PACK commits or AMP_STORE_BATCH_BYTES
 * of objects, whichever comes first, rather than as loose
 * objects) while holding the writers' flock, then `ref` moved once by
 * compare-and-swap.  All or nothing: an error from a step leaves the ref
 * where it was (the packs written so far are unreachable; git gc drops
 * them).  *commits (may be NULL) is the number of commits written, *out
 * (may be NULL) the new tip, left alone when nothing was written.
 */
/* 2,000: the objects of a batch wait in memory for their pack (at 5,000
 * an import of 100k records peaked at 123 MB of RSS, at 2,000 at 100 MB,
 * in the same time). */
#define AMP_STORE_BATCH_PACK 2000
/* ...and at most this many bytes of objects: every commit writes the trees
 * of its path whole, so what 2,000 commits hold grows with those trees,
 * where amp's bound is 64 MB (issue 35): importing a layout-1 task of
 * 1,600 records peaked at 138 MB, at 41 MB with this bound (5 packs). */
#define AMP_STORE_BATCH_BYTES (24u << 20)
int amp_store_update_batch(amp_store *st, const char *ref, amp_store_step_fn step,
			   void *ctx, git_oid *out, size_t *commits, amp_error *err);

/*
 * The writers' flock of `ref`, which amp_store_update holds while it reads
 * the tip, builds and moves the ref: for a writer that builds several
 * commits before one move (amp sync's joins).  Waits at most
 * amp.retryTimeout.  Returns a descriptor for amp_store_unlock, or -1 with
 * err filled.  A process must not call amp_store_update on the same ref
 * while it holds it (flock: that would wait for itself).
 */
int amp_store_lock(amp_store *st, const char *ref, amp_error *err);
/* The same flock under `name`, taken only when nobody holds it: 1 taken
 * (*fd for amp_store_unlock), 0 held by another (*fd -1), AMP_EIO. */
int amp_store_trylock(amp_store *st, const char *name, int *fd, amp_error *err);
void amp_store_unlock(int fd);

/* ==== The error log (rejection.c) =========================================== */

/*
 * Records a rejected message on the errors ref: its raw bytes (as given,
 * whatever they are) and the reasons.  `command` names what rejected it
 * ("send"), `source` where it came from (a file name, "-", "built").
 * Input larger than AMP_LIMIT_MESSAGE_BYTES keeps only its first
 * AMP_LIMIT_LOG_RAW_BYTES, so the log cannot bloat the repository;
 * reasons.json then has its size: `total` when the caller read only a
 * prefix of `total` bytes, else len (marked "size_at_least" when `total`
 * is 0 and the input was cut).  In strict mode (sign.h) nothing is
 * logged (AMP_ERULE, saying why) when the signing key may not sign there
 * now.
 */
int amp_store_log_rejection(amp_store *st, const char *command,
			    const char *source, const char *raw, size_t len,
			    size_t total, int status,
			    const amp_errlist *reasons, amp_error *err);

/* ==== Sweeping (sweep.c) ==================================================== */

/* Removes what killed or failed writers left behind, once older than an
 * hour: temporary files in objects/, objects/pack/ (amp's and git's tmp_*)
 * and the state directory, and packs whose index is missing (sweep.c says
 * which and why that is safe).  Successful writes call it at most once an
 * hour; amp gc on every run. */
void amp_store_sweep(amp_store *st);

/* The rest of the store/ layer's public interface. */
#include "process.h"
#include "cache.h"
#include "pack.h"
#include "packwrite.h"
#include "reccache.h"
#include "recindex.h"
#include "seen.h"
#include "arrivals.h"
#include "sign.h"
#include "recsig.h"
#include "sshsig.h"
#include "hubgc.h"

#endif
