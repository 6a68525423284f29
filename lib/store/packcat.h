/*
 * packcat.h - the packs of one amp import made one pack, in bounded memory
 * (objects.c calls it at the end of a batch; it calls packgc.c's locks).
 *
 * A batch writes a pack per AMP_STORE_BATCH_PACK commits or
 * AMP_STORE_BATCH_BYTES of objects (store.h): an import of 1M messages
 * left 2,006 packs, every lookup of an object probed up to that many
 * indexes, and the `amp gc` that had to repack them all was stopped after
 * 11 min at 10.4 GB (issue 35).  Those packs are amp's own (packwrite.h):
 * every delta is an OFS_DELTA against an earlier entry of the same pack,
 * so the entries of several such packs laid end to end are a valid pack
 * as they are (each delta's distance to its base unchanged), and the new
 * index is the old ones merged, by name, with each offset moved by where
 * its pack's entries now start.  Nothing is inflated, hashed or held in
 * memory but a few entries of each index at a time: the cost is one copy
 * of the bytes and a k-way merge of the names, whatever the count.
 */
#ifndef AMP_PACKCAT_H
#define AMP_PACKCAT_H

#include <stddef.h>

#include "packgc.h"

/*
 * Writes the packs p[0..n) of pack_dir (names pack-<hex>) as one pack
 * with its index, placed as amp_packwrite_store places a pack (`sync`:
 * fsynced), then deletes them (each index before its pack); rollup.lock
 * is held while it opens them and while it deletes them, not while it
 * copies (packgc.h: writes keep rolling up).  Those it cannot take as they are stay: a pack of 2 GiB or
 * more, another kind of index, one gone, one a running repack claimed.
 * AMP_NOOP when fewer than two are left, or when an object is in two of
 * them (nothing written: git drops duplicates, amp does not).  *taken
 * (may be NULL) is how many packs it replaced.  AMP_EIO when a file cannot
 * be read or written (nothing deleted).
 */
int amp_pack_concat(amp_store *st, const char *pack_dir, const struct amp_pack_name *p, size_t n,
		    int sync, size_t *taken, amp_error *err);

/*
 * amp gc's first step: the packs of pack_dir that hold deltas already (an
 * import's, a fetch's, an earlier repack's; not the roll-ups of writes,
 * whose objects are whole and which git's repack deltifies) and that
 * git repack --geometric=2 would take (amp_pack_geometric_split over
 * them alone) laid end to end with amp_pack_concat.  What git would
 * spend on them is gone: 2,006 import packs cost git one walk of 20M
 * objects (stopped at 10.4 GB); here they are copied once, in a few MB.
 * AMP_OK, AMP_NOOP or AMP_EIO as amp_pack_concat.
 */
int amp_pack_concat_deltified(amp_store *st, const char *pack_dir, int sync, size_t *taken,
			      amp_error *err);

#endif
