/*
 * cache.h - what every file amp derives from the SSOT shares: the build it
 * was made by, and how it is read back.
 *
 * The derived files under <git common dir>/amp/ (status.cache,
 * status.shards, inbox.json, agents.json, watch.json, notify.json, the
 * record caches records/<task>) and the dashboard's state (.amp-dashboard*
 * in its directory) each record amp_build_id(); a file of another build is
 * not trusted, so that a build that derives a task's state, an inbox entry
 * or a timer differently never serves what an older one derived.
 *
 * The id is a hash of the sources (lib/, cmd/ and schemas/, names and
 * contents), computed by the Makefile into $(BUILD)/build-id.h.  A hash of
 * the sources rather than the binary's GNU build-id: the sources are what
 * decide a derivation, the id is the same for bin/amp and the test
 * programs linked from the same tree, it does not depend on the linker
 * writing a .note.gnu.build-id, and it covers the schemas, read at run
 * time.  Any change to any of those files changes the id (a comment too:
 * a rebuild of the caches is cheap, serving a stale one is not).
 */
#ifndef AMP_CACHE_H
#define AMP_CACHE_H

#include <jansson.h>
#include <stddef.h>

#include "store.h"

/* The id of this build: 32 hex digits.  Static storage. */
const char *amp_build_id(void);

/*
 * The most bytes a derived file of `st` may hold: AMP_CACHE_FLOOR, plus
 * AMP_CACHE_RATIO times the bytes of the repository's packs (the SSOT,
 * compressed).  What amp derives is a summary of the records (status.cache
 * is 100 bytes a task, inbox.json 200 bytes a message), so a file past the
 * bound is not amp's: it is discarded unread and rebuilt, never read into
 * memory whole.  Computed once per process.
 */
#define AMP_CACHE_FLOOR ((size_t)16 << 20)
#define AMP_CACHE_RATIO 16
size_t amp_cache_bound(amp_store *st);

/*
 * Reads derived file `path` whole, when it is a regular file of at most
 * `max` bytes: opened with O_NONBLOCK | O_NOFOLLOW and checked with fstat
 * before any read, so that a FIFO, a device or a symbolic link in its
 * place is never waited on nor followed.  0 with *buf (NUL-terminated; the
 * caller frees it) and *len; -1 when the file is missing, not a regular
 * file, larger than max or unreadable: the caller then derives anew.
 */
int amp_cache_read(const char *path, size_t max, char **buf, size_t *len);

/* amp_cache_read bounded by amp_cache_bound(st), parsed as JSON: the
 * value (the caller decrefs), or NULL when unusable. */
json_t *amp_cache_json(amp_store *st, const char *path);

#endif
