/*
 * sweep.c - what killed or failed writers leave behind, removed once old
 * (store.h amp_store_sweep).
 */
#include "store_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Age after which a temporary file is nobody's (see amp_store_sweep_hourly). */
#define AMP_TMP_FILE_AGE_SEC 3600

/* Whether `name` reads <one of prefixes (NULL-ended)>...<suffix>. */
static int tmp_name(const char *name, const char *const *prefixes, const char *suffix)
{
	size_t n = strlen(name), ns = strlen(suffix), np;

	for (; *prefixes; prefixes++) {
		np = strlen(*prefixes);
		if (n >= np + ns && !strncmp(name, *prefixes, np) && !strcmp(name + n - ns, suffix))
			return 1;
	}
	return 0;
}

/* Removes the regular files of directory `path` named <prefix>...<suffix>,
 * for any of prefixes (NULL-ended), and not modified for
 * AMP_TMP_FILE_AGE_SEC: one read of the directory. */
static void sweep_dir(const char *path, const char *const *prefixes, const char *suffix,
		      time_t now)
{
	struct dirent *d;
	struct stat sb;
	DIR *dir;

	if (!(dir = opendir(path)))
		return;
	while ((d = readdir(dir))) {
		if (tmp_name(d->d_name, prefixes, suffix) &&
		    fstatat(dirfd(dir), d->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(sb.st_mode) && now - sb.st_mtime >= AMP_TMP_FILE_AGE_SEC)
			unlinkat(dirfd(dir), d->d_name, 0);
	}
	closedir(dir);
}

/*
 * Sweeps the pack directory `path` (one read of it):
 *  - tmp_*: amp's tmp_amp_pack_XXXXXX (packwrite.c) and git's tmp_pack_*,
 *    tmp_idx_*, tmp_rev_* ... (git pack-objects, index-pack), not modified
 *    for AMP_TMP_FILE_AGE_SEC: what a writer, a roll-up or a git gc killed
 *    or failed (a full disk) while writing leaves.  git's own `git prune`
 *    (builtin/prune.c, remove_temporary_files) removes the same "tmp_"
 *    names once older than its --expire (gc.pruneExpire, two weeks): a
 *    live writer's file is written as it grows, so its mtime stays fresh.
 *  - pack-<name>.pack and .rev whose .idx is missing, with no .keep
 *    beside them, not modified for AMP_TMP_FILE_AGE_SEC:
 *    what a roll-up killed while removing a pack it copied leaves
 *    (remove_pack takes the index first), or a write or git killed between
 *    renaming a pack into place and its index (both rename the pack
 *    first).  A pack without its index is read by nobody -- git, libgit2
 *    and amp find objects through the index -- and its objects are in the
 *    rolled-up pack, or were never referenced; a live writer renames the
 *    index in the next milliseconds, so an hour-old one is nobody's.
 * The path buffers hold any entry name (NAME_MAX).
 */
static void sweep_pack_dir(const char *path, time_t now)
{
	char idx[NAME_MAX + 1], keep[NAME_MAX + 1];
	const char *name;
	struct dirent *d;
	struct stat sb;
	size_t n;
	DIR *dir;

	if (!(dir = opendir(path)))
		return;
	while ((d = readdir(dir))) {
		name = d->d_name;
		n = strlen(name);
		if (!strncmp(name, "tmp_", 4)) {
			if (fstatat(dirfd(dir), name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) &&
			    now - sb.st_mtime >= AMP_TMP_FILE_AGE_SEC)
				unlinkat(dirfd(dir), name, 0);
			continue;
		}
		if (strncmp(name, "pack-", 5) || n < 10 ||
		    (strcmp(name + n - 5, ".pack") && strcmp(name + n - 4, ".rev")))
			continue;
		n -= name[n - 4] == '.' ? 4 : 5;
		snprintf(idx, sizeof(idx), "%.*s.idx", (int)n, name);
		snprintf(keep, sizeof(keep), "%.*s.keep", (int)n, name);
		if (fstatat(dirfd(dir), idx, &sb, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT &&
		    fstatat(dirfd(dir), keep, &sb, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT &&
		    fstatat(dirfd(dir), name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) &&
		    now - sb.st_mtime >= AMP_TMP_FILE_AGE_SEC)
			unlinkat(dirfd(dir), name, 0);
	}
	closedir(dir);
}

/*
 * libgit2 writes each loose object (amp's before its writes became packs,
 * another libgit2 program's) to objects/tmp_object_git2_XXXXXX, and
 * renames it into place; a writer killed in between (kill -9, power loss)
 * leaves that file behind for good, as a watcher or a reader killed while
 * saving leaves <state dir>/watch.json.<pid>.tmp or inbox.json.<pid>.tmp
 * (amp status, status.cache.<pid>.tmp or status.shards.<pid>.tmp; a
 * reader, records/<task id>.<pid>.tmp: reccache.h, and trees/<task
 * id>.<pid>.tmp: treecache.h); the pack directory's
 * leftovers are sweep_pack_dir's.  Files older than AMP_TMP_FILE_AGE_SEC
 * go: a live writer holds such a file for the milliseconds one object
 * takes, so an hour-old one is nobody's; and were a writer stopped for
 * longer than that, its rename would fail and its write with it, so
 * nothing is lost.  libgit2 makes these files in objects/ itself, never in
 * the fan-out directories, so a sweep reads four directories.
 */
void amp_store_sweep(amp_store *st)
{
	static const char *const objects[] = { "tmp_object_git2_", NULL };
	/* amp watch's, amp inbox's and amp status's saved states */
	static const char *const states[] = { "watch.json.", "inbox.json.", "status.cache.",
					      "status.shards.", NULL };
	static const char *const records[] = { "T-", NULL };
	char dir[PATH_MAX + 32];
	time_t now = time(NULL);

	sweep_dir(st->objects_dir, objects, "", now);
	snprintf(dir, sizeof(dir), "%s/pack", st->objects_dir);
	sweep_pack_dir(dir, now);
	sweep_dir(st->state_dir, states, ".tmp", now);
	/* what a reader killed while saving a record cache leaves */
	snprintf(dir, sizeof(dir), "%s/records", st->state_dir);
	sweep_dir(dir, records, ".tmp", now);
	/* ... or a task's tree cache */
	snprintf(dir, sizeof(dir), "%s/trees", st->state_dir);
	sweep_dir(dir, records, ".tmp", now);
}

/* A successful write sweeps (amp_store_sweep) at most once an hour,
 * remembered by the mtime of <state dir>/objects-swept, so a write pays
 * one stat() for it, after it released the writers' lock (the writers
 * queued behind it never wait for a sweep). */
void amp_store_sweep_hourly(amp_store *st)
{
	char stamp[PATH_MAX + 32];
	struct stat sb;
	time_t now = time(NULL);
	int fd;

	snprintf(stamp, sizeof(stamp), "%s/objects-swept", st->state_dir);
	if (stat(stamp, &sb) == 0 && now - sb.st_mtime < AMP_TMP_FILE_AGE_SEC)
		return;
	/* The stamp first, so that a sweep that fails is not retried by every
	 * write. */
	if ((fd = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC, 0666)) < 0)
		return;
	futimens(fd, NULL);
	close(fd);
	amp_store_sweep(st);
}
