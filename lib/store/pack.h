/*
 * pack.h - amp's own storage maintenance: every amp write leaves a small
 * pack of its own (its commit, trees and record blobs: update.c write_one),
 * amp import a pack per AMP_STORE_BATCH_PACK commits (or BYTES), fetches theirs, and
 * git itself loose objects; all of them are rolled into bigger packs, so
 * that the pack count and the disk per message stay bounded whatever the
 * history's length (a write's pack holds each object whole; the repack
 * stores the trees as deltas, never the records: pack.c attributes).
 *
 * The small packs of writes are rolled up in the writer's own process
 * (amp_pack_rollup, below); the rest is amp gc's repack (packgc.h): the
 * packs git repack --geometric=2 would choose and every loose object
 * (reachable or not: nothing is ever pruned) packed by git pack-objects
 * into one pack, so that there are O(log n) packs, reading only what it
 * packs; a loose object or a pack is deleted only once a pack holds its
 * objects.  A writer racing the repack loses nothing: a pack (or object)
 * it wrote after the repack looked stays as it is until the next one.
 *
 * When: after a write (amp import's included), amp estimates the loose
 * objects the way `git gc --auto` does (the files in objects/17, times
 * 256: one directory read) and counts the packs, and starts `amp gc
 * --auto` in the background (detached, like git's gc.autoDetach) when the
 * estimate passes git config amp.autoPack (default: gc.auto's value, else
 * git's 6700; 0 turns it off) or there are more than AMP_AUTOPACK_PACKS
 * packs.  One
 * repack runs at a time (a flock on <git common dir>/amp/gc.lock; the
 * roll-ups take rollup.lock: packgc.h).
 */
#ifndef AMP_PACK_H
#define AMP_PACK_H

#include <jansson.h>

#include "base/error.h"
#include "store.h"

/* The largest amp.autoPack; 0 turns automatic packing off. */
#define AMP_AUTOPACK_DEFAULT 6700
#define AMP_AUTOPACK_MAX 100000000
/* More packs than this are rolled up too (each write adds one, amp import
 * one per 2,000 commits, fetches theirs): an object lookup may try every
 * pack. */
#define AMP_AUTOPACK_PACKS 20

/*
 * amp's own roll-up (amp_pack_rollup): every write leaves a pack of a few
 * objects, and starting git repack for each 20 of them cost a fifth of the
 * CPU of 8 concurrent writers (two git processes and amp gc, ~29 ms a
 * repack on 2 cores).  Instead, once a write finds AMP_ROLLUP_PACKS packs
 * of at most AMP_ROLLUP_TINY objects (a write's holds 7), it rolls small
 * packs (at most AMP_ROLLUP_OBJECTS objects, AMP_ROLLUP_BYTES on disk),
 * chosen as git repack --geometric=2 chooses, into one pack in its own
 * process, copying their entries as they are; a rolled-up pack is rolled
 * again until it holds more than AMP_ROLLUP_OBJECTS objects, and the bigger
 * ones are git repack's (past AMP_AUTOPACK_PACKS).  One roll-up reads at
 * most AMP_ROLLUP_MAX_PACKS packs, AMP_ROLLUP_TOTAL bytes.
 */
#define AMP_ROLLUP_PACKS 8
#define AMP_ROLLUP_TINY 64
#define AMP_ROLLUP_OBJECTS 1024
#define AMP_ROLLUP_BYTES (1 << 20)
#define AMP_ROLLUP_MAX_PACKS 256
#define AMP_ROLLUP_TOTAL (16 << 20)

/* What a repository's objects take, as `git count-objects -v` counts. */
typedef struct amp_pack_counts {
	long long loose;        /* loose object files */
	long long loose_kib;    /* their disk usage */
	long long packs;        /* pack files */
	long long pack_kib;     /* their size */
} amp_pack_counts;

/* Reads amp.autoPack (falling back to gc.auto, then 6700) into *limit:
 * 0..AMP_AUTOPACK_MAX, else AMP_EUSAGE naming the key. */
int amp_pack_limit(amp_store *st, long long *limit, amp_error *err);

/* The estimated number of loose objects (git gc --auto's estimate: the
 * entries of objects/17 times 256). */
long long amp_pack_estimate(amp_store *st);

/* The number of pack files in objects/pack (one directory read). */
long long amp_pack_packs(amp_store *st);

/* Counts the objects of st (git count-objects -v).  AMP_EIO on failure. */
int amp_pack_count(amp_store *st, amp_pack_counts *out, amp_error *err);

/*
 * Runs the repack now (packgc.h; git repack -d --geometric=2 in a
 * repository with a multi-pack index), waiting for a repack already running.  With `auto_`
 * set, returns at once with *ran = 0 when another repack holds the lock or
 * the estimate is within the limit.  `before`/`after` (optional) receive
 * the counts around the repack.  With amp.fsync on (the default), git
 * fsyncs the pack and its index before any loose object goes.  AMP_EIO
 * when git cannot be run or fails (its reasons on stderr).
 */
int amp_pack_run(amp_store *st, int auto_, int *ran, amp_pack_counts *before,
		 amp_pack_counts *after, amp_error *err);

/*
 * Rolls small packs of st (above) into one pack, in this process, when
 * there are AMP_ROLLUP_PACKS tiny ones or more, under rollup.lock (at
 * once: when another roll-up holds it, or a repack while it chooses or
 * deletes its packs, returns AMP_OK with nothing done), leaving alone the
 * packs a running repack claimed (packgc.h).  Each pack is read whole and checked first: its index
 * (version 2, sorted names, checksum), the pack (header, object count,
 * checksum, the one its index names) and each entry's header; a pack that
 * fails, or holds a REF_DELTA (its base may be outside it), is left where
 * it is for git repack; so is every pack of a repository with a
 * multi-pack-index (git repack --write-midx keeps it).  Entries are copied without being
 * inflated (a delta's distance to its base is written anew), an object
 * two packs hold once.  The new pack and its index are in place (fsynced
 * with amp.fsync) before the old packs are deleted, each index before its
 * pack (a reader that listed one finds its objects in the new pack:
 * repo.c's moved_reader).  *rolled (optional) receives the number of
 * packs rolled up.  AMP_EIO when the new pack cannot be written (nothing
 * was deleted).
 */
int amp_pack_rollup(amp_store *st, size_t *rolled, amp_error *err);

/*
 * Called after every write: rolls up the small packs (amp_pack_rollup);
 * then, when the estimate passes the limit, starts
 * `amp-gc --auto` detached from the caller (its own session, stdio on
 * /dev/null; not while another repack holds the lock) and returns at
 * once, or runs it in the foreground when git config amp.autoPackDetach is
 * false.  amp.autoPack 0 turns both off.  Never fails the write that called
 * it: an error here costs disk, not data.
 */
void amp_pack_maybe(amp_store *st);

#endif
