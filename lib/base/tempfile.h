/*
 * tempfile.h - a file written whole beside its target, then renamed into
 * place (git's tempfile.c and lockfile.c do the same): a reader sees the
 * old file or the new one, never half of one, and the last rename wins.
 *
 * Every state file amp keeps is written this way: watch.json, notify.json,
 * inbox.json, the agents cache (coord), status.cache and status.shards
 * (summary), the record caches (reccache) and the dashboard's pages.
 *
 * The temporary file is "<path>.<pid>.tmp" (amp_store_sweep removes such a
 * file a killed writer left, by that name), created with O_EXCL and mode
 * 0666 less the umask, as fopen's are.  When that name is taken (another
 * thread of this process writing the same target, or what an earlier
 * process of the same pid left) the next free "<path>.<pid>.<n>.tmp" is
 * used: nobody else's file is truncated.
 *
 * Durability is each writer's choice: with AMP_TEMPFILE_FSYNC the file is
 * fsynced before the rename and its directory after it, so that a crash
 * keeps the new file once commit returned; without it the rename alone is
 * atomic for readers, and a crash may leave the old file (every writer
 * above: what they write is derived, rebuilt when missing or stale).
 * Nothing here handles signals: a writer killed between open and commit
 * leaves its temporary file for the sweep.
 */
#ifndef AMP_TEMPFILE_H
#define AMP_TEMPFILE_H

#include <stddef.h>
#include <stdio.h>

/* fsync the file before the rename, and its directory after. */
#define AMP_TEMPFILE_FSYNC 1

typedef struct amp_tempfile {
	char path[4096];     /* the target */
	char tmp[4096 + 48]; /* the temporary file; "" when there is none */
	int fd;              /* its descriptor (-1: none, or fp owns it) */
	FILE *fp;            /* amp_tempfile_stream's (NULL until asked) */
	int flags;           /* AMP_TEMPFILE_* */
} amp_tempfile;

/*
 * Creates the temporary file of `path` (flags: AMP_TEMPFILE_*).  0, or -1
 * with errno set (ENAMETOOLONG when the names do not fit).  *t is set up
 * either way, so amp_tempfile_rollback may always follow.
 */
int amp_tempfile_open(amp_tempfile *t, const char *path, int flags);

/* A stdio stream on the temporary file, owned by t (closed by commit or
 * rollback); NULL with errno set. */
FILE *amp_tempfile_stream(amp_tempfile *t);

/* Writes all of data (retrying short writes and EINTR): 0, or -1 with
 * errno set. */
int amp_tempfile_write(amp_tempfile *t, const void *data, size_t len);

/* Closes the temporary file (flushing the stream; fsync first with
 * AMP_TEMPFILE_FSYNC): 0, or -1 with errno set.  Commit does it when the
 * caller did not; a caller that reports a failed write apart from a
 * failed rename calls it first. */
int amp_tempfile_close(amp_tempfile *t);

/*
 * Closes the temporary file if still open and renames it to the target
 * (then fsyncs the directory with AMP_TEMPFILE_FSYNC).  0, or -1 with
 * errno set and the temporary file removed (or, when only the fsync of
 * the directory failed, the target in place).
 */
int amp_tempfile_commit(amp_tempfile *t);

/* Closes and removes the temporary file if there still is one; errno is
 * kept, for the caller's message.  Safe after commit, and twice. */
void amp_tempfile_rollback(amp_tempfile *t);

/* Open, write all of data, commit: 0, or -1 with errno set and nothing
 * left behind. */
int amp_tempfile_write_file(const char *path, const void *data, size_t len, int flags);

#endif
