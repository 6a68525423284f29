/*
 * process.c - what the store sets for the whole process (process.h):
 * libgit2's global options and the trimming of the resident set.
 */
#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <git2.h>
#include <git2/sys/alloc.h>

/*
 * Bounds on what libgit2 keeps in memory, for the commands that walk the
 * whole history (watch --full, fsck, log): its cache of parsed trees and
 * commits (256 MiB by default) and the pack windows it maps (8 GiB by
 * default on 64-bit; the pages of a mapped pack that were read count as
 * resident).  Past the bounds libgit2 drops the least recently used, which
 * costs a re-read: at 10k messages 82-96 MB instead of 210-218 MB, for
 * 20-40% more CPU in those walks.  The walk itself still keeps a node per
 * commit, which grows with the history.  Halved again (16 -> 8 MiB, 64 ->
 * 32 MiB) when `amp status` stopped holding every summary: at 100k
 * messages its first listing peaks at 78 MB instead of 96-107 MB in the
 * same 3.8-4.0 s, and at 10k `watch --full` at 63 MB instead of 75 MB in
 * 2.0 s either way.  Halved again (32 -> 16 MiB mapped, windows 8 -> 4
 * MiB) once the tip's trees were whole in imported packs: at 100k the
 * first listing peaks at 56 MB instead of 65 MB and watch --full at 117
 * MB instead of 128 MB, in the same time (at 8 MiB and 2 MiB windows,
 * 54 MB, but watch --full took 50% longer).  Down again (cache 8 -> 2
 * MiB, mapped 16 -> 4 MiB, windows 4 -> 1 MiB) once records were no
 * longer stored as deltas (pack.c attributes): reading one then maps the
 * pack where it lies, so a listing of every task kept the whole 16 MiB of
 * windows resident; at 100k messages the first listing peaks at 55 MB
 * instead of 75 MB and watch --full at 96 MB instead of 132 MB, in the
 * same time.
 */
#define AMP_GIT_CACHE_BYTES   (2 * 1024 * 1024)
#define AMP_GIT_MAPPED_BYTES  (4 * 1024 * 1024)
/* Windows much smaller than the mapped bound, so that the bound is met by
 * dropping a few windows, not by unmapping a whole pack at each lookup
 * (libgit2's default window on 64-bit is 1 GiB). */
#define AMP_GIT_WINDOW_BYTES  (1024 * 1024)

/* libgit2 caches no tree over 4 KiB by default, yet a shard tree (100
 * tasks) and a year tree (one entry per shard) are larger: every task read
 * then read and hashed them again (25,000 tasks: 1 s of `amp status`). */
#define AMP_GIT_TREE_CACHE_LIMIT (1024 * 1024)

static int bound_memory(amp_error *err)
{
	if (git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, (ssize_t)AMP_GIT_CACHE_BYTES) < 0 ||
	    git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_TREE,
			     (size_t)AMP_GIT_TREE_CACHE_LIMIT) < 0 ||
	    git_libgit2_opts(GIT_OPT_SET_MWINDOW_MAPPED_LIMIT, (size_t)AMP_GIT_MAPPED_BYTES) < 0 ||
	    git_libgit2_opts(GIT_OPT_SET_MWINDOW_SIZE, (size_t)AMP_GIT_WINDOW_BYTES) < 0)
		return amp_error_git(err, AMP_EIO, "cannot bound libgit2's memory");
	return AMP_OK;
}

/*
 * libgit2's allocations go through amp's allocator: malloc and free, as
 * libgit2's own (stdalloc.c), except that while amp_store_blob_bounded
 * reads, one past `alloc_cap` bytes is refused and noted.  A refusal sets
 * libgit2's error to "out of memory", as stdalloc.c does: libgit2's
 * callers (GIT_ERROR_CHECK_ALLOC) return -1 without setting one, and the
 * error a caller then read was an older one, or none.
 */
static size_t alloc_cap; /* 0: no bound */
static int alloc_refused;

static int over_cap(size_t nelem, size_t elsize)
{
	if (!alloc_cap || (elsize && nelem <= alloc_cap / elsize && nelem * elsize <= alloc_cap))
		return 0;
	alloc_refused = 1;
	return 1;
}

static void *refused(void *p)
{
	if (!p)
		git_error_set_oom();
	return p;
}

static void *cap_malloc(size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	return refused(over_cap(n, 1) ? NULL : malloc(n));
}

static void *cap_calloc(size_t nelem, size_t elsize, const char *file, int line)
{
	(void)file;
	(void)line;
	return refused(over_cap(nelem, elsize) ? NULL : calloc(nelem, elsize));
}

static char *cap_substrdup(const char *str, size_t n, const char *file, int line)
{
	char *p = n == SIZE_MAX ? NULL : cap_malloc(n + 1, file, line);

	if (p) {
		memcpy(p, str, n);
		p[n] = '\0';
	}
	return p;
}

static char *cap_strdup(const char *str, const char *file, int line)
{
	return cap_substrdup(str, strlen(str), file, line);
}

static char *cap_strndup(const char *str, size_t n, const char *file, int line)
{
	return cap_substrdup(str, strnlen(str, n), file, line);
}

static void *cap_realloc(void *ptr, size_t size, const char *file, int line)
{
	(void)file;
	(void)line;
	return refused(over_cap(size, 1) ? NULL : realloc(ptr, size));
}

static void *cap_reallocarray(void *ptr, size_t nelem, size_t elsize, const char *file, int line)
{
	if (elsize && nelem > SIZE_MAX / elsize) {
		errno = ENOMEM;
		return refused(NULL);
	}
	return cap_realloc(ptr, nelem * elsize, file, line);
}

static void *cap_mallocarray(size_t nelem, size_t elsize, const char *file, int line)
{
	return cap_reallocarray(NULL, nelem, elsize, file, line);
}

static git_allocator amp_allocator = {
	cap_malloc, cap_calloc, cap_strdup, cap_strndup, cap_substrdup,
	cap_realloc, cap_reallocarray, cap_mallocarray, free,
};

int amp_store_blob_bounded(git_repository *repo, const git_oid *id, size_t max,
			   git_blob **out, size_t *size)
{
	git_odb *odb = NULL;
	git_object_t type;
	int rc;

	*out = NULL;
	*size = 0;
	/* libgit2 allocates an object's size plus its NUL */
	alloc_cap = max + 1;
	alloc_refused = 0;
	rc = git_blob_lookup(out, repo, id);
	alloc_cap = 0;
	if (rc == 0) {
		*size = (size_t)git_blob_rawsize(*out);
		return 0;
	}
	if (!alloc_refused)
		return rc;
	git_error_clear();
	rc = git_repository_odb(&odb, repo);
	if (rc == 0 && (rc = git_odb_read_header(size, &type, odb, id)) == 0 && *size > max) {
		git_odb_free(odb);
		return 1;
	}
	git_odb_free(odb);
	return rc < 0 ? rc : git_blob_lookup(out, repo, id);
}

int amp_store_git_options(amp_error *err)
{
	int status;

	if (git_libgit2_opts(GIT_OPT_SET_ALLOCATOR, &amp_allocator) < 0)
		return amp_error_git(err, AMP_EIO, "cannot set libgit2's allocator");
	if ((status = bound_memory(err)) < 0)
		return status;
	/* libgit2 hashes every object it reads again to compare it with its
	 * name; git does not (only `git fsck` does, and `amp fsck`, which
	 * turns it back on).  A send into a task of 1,000 records spent 14%
	 * of its instructions there.  zlib's own checksum still catches a
	 * damaged loose object. */
	return amp_store_git_verify_hashes(0, err);
}

int amp_store_git_verify_hashes(int on, amp_error *err)
{
	if (git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, on) < 0)
		return amp_error_git(err, AMP_EIO, "cannot set libgit2's options");
	return AMP_OK;
}

/*
 * git config amp.fsync (default true): libgit2 fsyncs every object file,
 * pack and ref it writes, and their directories, so that a record amp
 * reported written survives a power cut, not only a killed process.
 * false trades that away for speed.  The setting is process-wide in
 * libgit2; amp opens one store per process.
 */
int amp_store_git_fsync(int on, amp_error *err)
{
	if (git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, on) < 0)
		return amp_error_git(err, AMP_EIO, "cannot set git config amp.fsync");
	return AMP_OK;
}

/*
 * libgit2 maps a pack's index whole for as long as the repository is open,
 * and every page a lookup touched stays resident: at 100k messages the
 * index is 39 MB (1.4M objects), and a walk of the whole history looks up
 * objects all over it, 33 MB of `amp watch --full`'s 71 MB peak.  The
 * mapping is read-only (libgit2 maps it shared), so its pages are clean
 * and MADV_DONTNEED only unmaps them from this process: the next lookup
 * maps them again from the page cache.
 */
int amp_store_trim_indexes(void)
{
	FILE *maps = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 128];
	int dropped = 0, whole = 1;

	if (!maps)
		return 0;
	while (fgets(line, sizeof(line), maps)) {
		size_t len = strlen(line);
		unsigned long lo, hi;
		char perms[5];
		int path_at = 0, fresh = whole;

		/* A line longer than the buffer comes in pieces: only a
		 * piece that starts a line is one. */
		whole = len && line[len - 1] == '\n';
		if (!fresh)
			continue;
		if (whole)
			line[--len] = '\0';
		if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &lo, &hi, perms, &path_at) != 3 ||
		    !path_at || hi <= lo || strncmp(perms, "r--", 3))
			continue;
		if (len - (size_t)path_at > 4 && !strcmp(line + len - 4, ".idx") &&
		    madvise((void *)lo, hi - lo, MADV_DONTNEED) == 0) {
			dropped++;
		}
	}
	fclose(maps);
	return dropped;
}

/* This process's resident set in bytes, from /proc/self/statm (opened
 * once per process: a walk asks tens of thousands of times; /proc/self
 * names the process that opened it, hence again after a fork); 0 when it
 * cannot be read. */
static size_t resident_bytes(void)
{
	static int fd = -1;
	static pid_t opener;
	char buf[128];
	unsigned long size, resident;
	ssize_t n;

	if (opener != getpid()) {
		if (fd >= 0)
			close(fd);
		opener = getpid();
		fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0 || (n = pread(fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%lu %lu", &size, &resident) != 2)
		return 0;
	return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

int amp_store_should_trim(size_t resident, size_t after_trim)
{
	size_t limit = after_trim + AMP_STORE_RESIDENT_SLACK;

	if (limit > AMP_STORE_RESIDENT_CEILING &&
	    after_trim + AMP_STORE_TRIM_MIN_GAIN <= AMP_STORE_RESIDENT_CEILING)
		limit = AMP_STORE_RESIDENT_CEILING;
	return resident > AMP_STORE_RESIDENT_SOFT && resident > limit;
}

void amp_store_walk_step(void)
{
	static unsigned steps;
	static size_t after_trim;
	size_t resident;

	if (++steps % AMP_STORE_TRIM_EVERY)
		return;
	resident = resident_bytes();
	if (amp_store_should_trim(resident, after_trim)) {
		amp_store_trim_indexes();
		after_trim = resident_bytes();
	}
}
