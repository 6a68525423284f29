/*
 * store_int.h - what the files of lib/store/ share and nobody else sees:
 * the store handle's fields, and the helpers one file of the folder
 * calls in another.  Only the .c files of lib/store/ include it; the
 * rest of amp includes "store/store.h".
 *
 * The files of the folder, each calling only those listed after it (no
 * loop: share/check-layers):
 *   rejection.c  the error log                 -> update commit sign
 *   update.c     the write primitive (CAS)     -> commit objects pack sweep sign names
 *   commit.c     a write's trees and commit    -> objects recsig sign
 *   objects.c    a write's odb, then a pack    -> doccache packwrite
 *   pack.c       the maintenance of the packs  -> repo sweep packgc packwrite
 *   packgc.c     amp gc's repack              -> repo
 *   seen.c       amp watch's marker ref        -> treediff names repo
 *   arrivals.c   arrival and first-seen notes  -> repo
 *   treediff.c   the one tree walker           -> records rectimes
 *   records.c    reading tasks and listings    -> reccache tasklog names doccache process
 *   reccache.c   the record caches             -> cache
 *   cache.c      derived files                 -> repo
 *   repo.c       the handle, its git config    -> tasklog names doccache process sigcache
 *   recsig.c     records' own signatures       -> sign sigcache names
 *   sign.c       signing, trust                -> history sshsig sigcache
 *   history.c    first-parent walks            -> process
 *   tasklog.c    the task log                  -> names
 *   sshsig.c     Ed25519 SSH signatures        -> nothing of the folder
 *   sigcache.c   verified signatures, kept     -> nothing of the folder
 *   names.c, doccache.c, sweep.c, packwrite.c, process.c, rectimes.c: nothing of the folder
 */
#ifndef AMP_STORE_INT_H
#define AMP_STORE_INT_H

#include <limits.h>
#include <stdint.h>

#include "sigcache.h"
#include "store.h"

struct amp_store {
	git_repository *repo;
	char ref[256];
	char errors_ref[256];
	char common_dir[PATH_MAX];
	char state_dir[PATH_MAX + 8];
	char objects_dir[PATH_MAX + 8]; /* <common dir>/objects */
	int64_t retry_timeout_ms;
	int64_t stale_lock_ms;
	unsigned long retries;
	unsigned int rng;
	amp_policy policy;
	amp_signing signing;
	char agent[AMP_AGENT_MAX + 1]; /* the named instance writing; "" none */
	struct mem_recorder *batch; /* during a batch: where objects go */
	struct doc_cache *docs;     /* during a batch: records parsed */
	unsigned long records_parsed; /* records read from git, ... */
	unsigned long records_cached; /* ... and from a record cache */
	unsigned long trees_read;   /* task trees read from git, ... */
	unsigned long trees_cached; /* ... and from a tree cache (treecache.h) */
	int fsync;                  /* git config amp.fsync */
	int log_all_refs;           /* core.logAllRefUpdates=always */
	git_config *cfg;            /* a snapshot, taken at cfg_ms */
	int64_t cfg_ms;
	amp_errlist skipped;        /* amp_store_task_in_place: not tasks */
	amp_sigcache sigcache;      /* verified signatures (sigcache.h) */
};

/* 1 when snprintf's result `n` fitted a buffer of `size` bytes: a name
 * that would not fit is an error, never a truncated name. */
static inline int fits(int n, size_t size)
{
	return n >= 0 && (size_t)n < size;
}

/* ---- tasklog.c ------------------------------------------------------------ */

/* Appends an unreadable record to log->bad, taking over `id`. */
int amp_task_log_add_bad(amp_task_log *log, int seq, amp_entry_kind kind, char *id,
			 const char *name, const char *reason);
/* The last step of a read (records.c): each record a "superseded" marker
 * names moved to log->superseded, then the log given its index.  -1 when
 * out of memory. */
int amp_task_log_settle(amp_task_log *log);

/* ---- doccache.c ----------------------------------------------------------- */

/* The records a batch shares (amp_store_update_batch): at most half of
 * this many parsed. */
#define BATCH_SHARED 16384
/* Shares up to slots / 2 records among st's reads from now on; 0 stops
 * and frees them. */
void amp_store_docs_share(amp_store *st, size_t slots);
/* The record `id` parsed before, with a new reference, or NULL. */
json_t *amp_store_docs_get(amp_store *st, const git_oid *id);
/* Keeps a reference to doc, the record `id`, while records are shared. */
void amp_store_docs_put(amp_store *st, const git_oid *id, json_t *doc);

/* ---- sweep.c -------------------------------------------------------------- */

/* amp_store_sweep, at most once an hour (after a successful write). */
void amp_store_sweep_hourly(amp_store *st);

/* ---- objects.c ------------------------------------------------------------ */

/* The odb put in front of the repository's for one write or one batch
 * (amp_store_batch_open). */
struct mem_recorder;
struct amp_pack_name;
struct batch_odb {
	git_odb *disk;            /* the repository's odb */
	git_odb *odb;             /* the mempack, then a reader of disk */
	struct mem_recorder *mem; /* owned by odb */
	struct amp_pack_name *packs; /* those the flushes wrote (packgc.h) */
	size_t npacks, packs_alloc;
};
int amp_store_batch_open(amp_store *st, struct batch_odb *b, size_t shared, amp_error *err);
void amp_store_batch_close(amp_store *st, struct batch_odb *b);
int amp_store_batch_flush(amp_store *st, struct batch_odb *b, amp_error *err);
void amp_store_batch_hint(amp_store *st, const git_oid *tree, const git_tree *replaced);
/* The bytes of the objects the batch holds in memory (written since its
 * last flush). */
size_t amp_store_batch_bytes(const struct batch_odb *b);
/* Makes the packs the batch's flushes wrote one (packcat.h), so that an
 * import leaves one pack, not one per flush; where it cannot, they stay
 * as they are, for amp gc. */
void amp_store_batch_pack_up(amp_store *st, struct batch_odb *b);

/* ---- commit.c ------------------------------------------------------------- */

/* Frees the files of w and empties it. */
void amp_store_write_reset(amp_store_write *w);
/* The commit of w on parent (NULL: a root) whose tree is base (NULL:
 * empty) with w's files added, signed in strict mode; its id in *out. */
int amp_store_write_commit(amp_store *st, git_commit *parent, git_tree *base,
			   const amp_store_write *w, git_oid *out, amp_error *err);

#endif
