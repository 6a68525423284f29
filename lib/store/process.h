/*
 * process.h - what amp sets for the WHOLE PROCESS, not for one repository
 * (process.c): libgit2's global options (its object cache, its pack
 * windows, whether it hashes what it reads again, whether it fsyncs), and
 * the trimming of the process's resident set that the walks of a large
 * store call.  Every call here holds for every repository the process has
 * open and for every other user of libgit2 in it; the one place that sets
 * them, so that a command or a test sees all of them at once.
 */
#ifndef AMP_PROCESS_H
#define AMP_PROCESS_H

#include <git2.h>
#include <stddef.h>

#include "base/error.h"

/* libgit2's options for amp's commands: bounds on its caches and on the
 * pack windows it maps, and no second hash of each object it reads (see
 * process.c).  amp_store_open calls it after git_libgit2_init. */
int amp_store_git_options(amp_error *err);

/* Turns libgit2's check of each object it reads against its name on (amp
 * fsck) or off (every other command, amp_store_git_options). */
int amp_store_git_verify_hashes(int on, amp_error *err);

/* Whether libgit2 fsyncs what it writes (git config amp.fsync, read when
 * a store is opened). */
int amp_store_git_fsync(int on, amp_error *err);

/*
 * Drops from this process's resident set the pages of the pack indexes
 * libgit2 has mapped (every *.idx mapped read-only), which it keeps mapped
 * whole while the repository is open.  Nothing is lost: the next lookup
 * reads them back from the page cache.  Returns how many mappings it
 * dropped (0 where /proc/self/maps cannot be read).
 */
int amp_store_trim_indexes(void);
/* Called once per commit a walk reads and once per task read or
 * summarised (amp_store_read_task, amp_summary_get): every
 * AMP_STORE_TRIM_EVERY calls, trims the indexes (above) when
 * amp_store_should_trim says so.  A walk of a large store's whole history
 * would otherwise end with its whole index resident. */
#define AMP_STORE_TRIM_EVERY     4
#define AMP_STORE_RESIDENT_SOFT  ((size_t)58 << 20)
#define AMP_STORE_RESIDENT_SLACK ((size_t)8 << 20)
#define AMP_STORE_RESIDENT_CEILING ((size_t)62 << 20)
#define AMP_STORE_TRIM_MIN_GAIN  ((size_t)2 << 20)
/* A walk of at least this many commits trims the indexes when it ends. */
#define AMP_STORE_TRIM_AFTER     4096
void amp_store_walk_step(void);

/*
 * 1 when a process resident for `resident` bytes, `after_trim` just after
 * its last trim (0 before any), should trim: past AMP_STORE_RESIDENT_SOFT,
 * and grown by AMP_STORE_RESIDENT_SLACK since the last trim (a command
 * whose own data is past the bound would otherwise trim at every step for
 * nothing), or past AMP_STORE_RESIDENT_CEILING while a trim there still
 * frees AMP_STORE_TRIM_MIN_GAIN (so that no command's peak passes 64 MB,
 * issue 12: with the slack alone, watch --full peaked at 64.5 MB when its
 * own memory had reached 56 MB).
 */
int amp_store_should_trim(size_t resident, size_t after_trim);

/*
 * Reads blob `id` whole unless it holds more than `max` bytes, looking it
 * up in the pack indexes once: a record's size check read its header
 * first (one search of the index), then the blob (a second one).  While
 * it reads, amp's allocator for libgit2 (installed by
 * amp_store_git_options) refuses any allocation past max + 1 bytes, which
 * is where libgit2 would inflate a larger object, so a blob past the bound
 * is never inflated; only when an allocation was refused is the header
 * read, for its size (and the blob read again when the refusal was some
 * other allocation's).  0 with *out (the caller frees it); 1 with *size
 * when the blob is larger (*out NULL); a libgit2 error (< 0) when it
 * cannot be read.
 */
int amp_store_blob_bounded(git_repository *repo, const git_oid *id, size_t max,
			   git_blob **out, size_t *size);

#endif
