/*
 * packwrite.h - a pack written by amp itself, in memory, for the objects
 * of one batch (amp import) or of one write.  Each object is stored whole
 * (zlib), or, for a tree, as a delta against another version of that tree
 * at the same path (objects.c amp_store_batch_flush picks the newer one,
 * so the tip's trees are whole): one record added to a task changes one entry of each
 * tree on its path, so the delta is the bytes before the change copied,
 * the changed bytes, and the bytes after copied, a few dozen bytes where
 * the tree is kilobytes.  libgit2's
 * pack builder instead searches a window of candidates for every object
 * and sets up a zlib stream for each; at 5,000 commits a pack that was 60%
 * of an import's time.
 *
 * The result is an ordinary version 2 pack (git's Documentation/gitformat-
 * pack.txt): header, entries (OFS_DELTA for deltas, whose base is always
 * earlier in the same pack, so the pack is never thin), SHA-1 trailer,
 * and its version 2 index, written from what amp already knows (each
 * object's name, offset and the CRC of its entry) rather than by libgit2's
 * indexer, which would inflate, resolve and hash every object again.
 * Objects under 128 bytes (most deltas) are stored without compression:
 * zlib's per-block Huffman tables cost more than they save there.
 */
#ifndef AMP_PACKWRITE_H
#define AMP_PACKWRITE_H

#include <git2.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* A delta chain longer than this stores the object whole (git's
 * pack.depth default). */
#define AMP_PACKWRITE_DEPTH 50

typedef struct amp_packwrite amp_packwrite;

/* A new pack for at most `capacity` objects.  The caller frees it with
 * amp_packwrite_free.  AMP_EIO when out of memory. */
int amp_packwrite_new(amp_packwrite **out, size_t capacity, amp_error *err);

/* 1 when `id` is in the pack, else 0. */
int amp_packwrite_has(const amp_packwrite *pw, const git_oid *id);

/* 1 when `id` is in the pack and a delta against it stays within
 * AMP_PACKWRITE_DEPTH, else 0. */
int amp_packwrite_can_base(const amp_packwrite *pw, const git_oid *id);

/*
 * Appends the object `id` (`type`, data[0..len)).  With `base` (an object
 * amp_packwrite_can_base accepted, its content base_data[0..base_len)) the
 * object is stored as a delta against it when the bytes the delta must
 * carry (what differs) are at least 32 fewer than the object's.  An id already in the pack, or past the capacity, is AMP_EIO;
 * so is a zlib failure.
 */
int amp_packwrite_add(amp_packwrite *pw, const git_oid *id, git_object_t type,
		      const void *data, size_t len, const git_oid *base,
		      const void *base_data, size_t base_len, amp_error *err);

/*
 * Appends an entry copied as it is from another pack (amp's own roll-up of
 * small packs, pack.c): the object `id`, of pack type `ptype` (1-4: a
 * whole commit, tree, blob or tag; 6: an OFS_DELTA against `base`, which
 * must be in this pack already), `size` bytes once inflated, whose zlib
 * stream is data[0..len).  The entry's header is written anew (a delta's
 * distance to its base differs here), the stream is copied, not checked:
 * the caller checked the entry's CRC-32 against its index.  AMP_EIO as
 * for amp_packwrite_add, or when the base is missing.
 */
int amp_packwrite_add_raw(amp_packwrite *pw, const git_oid *id, unsigned ptype, size_t size,
			  const git_oid *base, const void *data, size_t len, amp_error *err);

/*
 * Finishes the pack and writes it into pack_dir (the repository's
 * objects/pack) with its index, as git would name them (pack-<checksum>
 * .pack and .idx, read-only); each is written to a temporary file,
 * fsynced when `sync` is set, and renamed, the pack before its index, so
 * a reader never sees an index without its pack; with `sync` the directory
 * is fsynced after.  AMP_EIO naming the file on failure.
 */
int amp_packwrite_store(amp_packwrite *pw, const char *pack_dir, int sync,
			amp_error *err);

/* The pack's SHA-1 checksum (its name: pack-<hex>.pack) once
 * amp_packwrite_store finished it, else NULL.  Owned by pw. */
const unsigned char *amp_packwrite_checksum(const amp_packwrite *pw);

void amp_packwrite_free(amp_packwrite *pw);

#endif
