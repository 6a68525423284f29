/* pack.c - amp's own storage maintenance (pack.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pack.h"
#include "proc.h"
#include "util.h"

int amp_pack_limit(amp_store *st, long long *limit, amp_error *err)
{
	char buf[64], what[64];
	const char *key = "amp.autoPack";

	*limit = AMP_AUTOPACK_DEFAULT;
	/* A repository that turned git's own auto gc down or off expects
	 * the same of amp unless told otherwise. */
	if (!amp_store_config(st, key, buf, sizeof(buf))) {
		key = "gc.auto";
		if (!amp_store_config(st, key, buf, sizeof(buf)))
			return AMP_OK;
	}
	snprintf(what, sizeof(what), "git config %s", key);
	return amp_parse_int(what, buf, 0, AMP_AUTOPACK_MAX, limit, err);
}

long long amp_pack_estimate(amp_store *st)
{
	char dir[PATH_MAX + 32];
	DIR *d;
	struct dirent *e;
	long long n = 0;

	if (snprintf(dir, sizeof(dir), "%s/17", amp_store_objects_dir(st)) >= (int)sizeof(dir))
		return 0;
	if (!(d = opendir(dir)))
		return 0;
	/* git's estimate (builtin/gc.c too_many_loose_objects): objects are
	 * spread evenly over the 256 fan-out directories by their hash. */
	while ((e = readdir(d)))
		if (strlen(e->d_name) == 38 && strspn(e->d_name, "0123456789abcdef") == 38)
			n++;
	closedir(d);
	return n * 256;
}

long long amp_pack_packs(amp_store *st)
{
	char dir[PATH_MAX + 32];
	DIR *d;
	struct dirent *e;
	size_t n;
	long long packs = 0;

	if (snprintf(dir, sizeof(dir), "%s/pack", amp_store_objects_dir(st)) >= (int)sizeof(dir))
		return 0;
	if (!(d = opendir(dir)))
		return 0;
	while ((e = readdir(d)))
		if ((n = strlen(e->d_name)) > 5 && !strcmp(e->d_name + n - 5, ".pack") &&
		    !strncmp(e->d_name, "pack-", 5))
			packs++;
	closedir(d);
	return packs;
}

/* 1 when the repository needs a repack: the loose objects past `limit`,
 * or more packs than AMP_AUTOPACK_PACKS (what amp import's batches and
 * fetches leave: every lookup tries each pack). */
static int due(amp_store *st, long long limit)
{
	return limit > 0 && (amp_pack_estimate(st) > limit ||
			     amp_pack_packs(st) > AMP_AUTOPACK_PACKS);
}

/* The value of "key: N" in `git count-objects -v` output, 0 if absent. */
static long long counted(const char *out, const char *key)
{
	size_t n = strlen(key);
	const char *p = out;

	while (p && *p) {
		if (!strncmp(p, key, n) && p[n] == ':')
			return strtoll(p + n + 1, NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return 0;
}

int amp_pack_count(amp_store *st, amp_pack_counts *c, amp_error *err)
{
	const char *gitdir = git_repository_commondir(amp_store_repo(st));
	const char *argv[] = { "git", "--git-dir", gitdir, "count-objects", "-v", NULL };
	char *out = NULL;
	int code = 0, status;

	memset(c, 0, sizeof(*c));
	if ((status = amp_run(argv, NULL, 0, &out, NULL, &code, err)) < 0)
		return status;
	if (code != 0) {
		status = amp_error_set(err, AMP_EIO, "", "git count-objects failed (exit %d)", code);
		goto cleanup;
	}
	c->loose = counted(out, "count");
	c->loose_kib = counted(out, "size");
	c->packs = counted(out, "packs");
	c->pack_kib = counted(out, "size-pack");
cleanup:
	free(out);
	return status;
}

/* The lock that keeps repacks one at a time: a descriptor, or -1 (with
 * *busy set when another process holds it and `wait` is 0). */
static int take_gc_lock(amp_store *st, int wait, int *busy, amp_error *err)
{
	char path[PATH_MAX];
	int fd;

	*busy = 0;
	if (snprintf(path, sizeof(path), "%s/gc.lock", amp_store_state_dir(st)) >= (int)sizeof(path)) {
		amp_error_set(err, AMP_EIO, "", "path too long: %s/gc.lock", amp_store_state_dir(st));
		return -1;
	}
	mkdir(amp_store_state_dir(st), 0777);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) < 0) {
		amp_error_set(err, AMP_EIO, "", "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	while (flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK)
			*busy = 1;
		else
			amp_error_set(err, AMP_EIO, "", "cannot lock %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The attributes the repack reads instead of core.attributesFile: records
 * (tasks/<year>/<shard>/<task>/<record>.json) are never stored as deltas.
 * git's pack-objects chains similar small blobs up to 50 deltas deep, so
 * reading a record meant applying up to 50 deltas and kept libgit2's delta
 * base cache (16 MiB, a constant of the library) full: amp status's first
 * listing at 100k messages held 36 MB of heap instead of 19 MB, and the
 * repack after an import of them took 30 s instead of 17 s, for 0.3 KB
 * more disk per message.  Writes <state dir>/pack-attributes when it is
 * not already what it should be (under the gc lock) and puts
 * "core.attributesFile=<that path>" into opt; -1 when it cannot (the
 * repack then deltifies as git chooses).
 */
static int attributes(amp_store *st, char *opt, size_t size)
{
	static const char attrs[] = "tasks/*/*/*/*.json -delta\n";
	char buf[sizeof(attrs)];
	const char *path;
	int fd;
	ssize_t n;

	if (snprintf(opt, size, "core.attributesFile=%s/pack-attributes",
		     amp_store_state_dir(st)) >= (int)size)
		return -1;
	path = opt + strlen("core.attributesFile=");
	/* O_NOFOLLOW: a link planted there is never written through. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) >= 0) {
		n = read(fd, buf, sizeof(buf));
		close(fd);
		if (n == (ssize_t)sizeof(attrs) - 1 && !memcmp(buf, attrs, sizeof(attrs) - 1))
			return 0;
	}
	/* In place: only a repack reads it, under the same lock, and a
	 * write cut short is found different and written again. */
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666)) < 0)
		return -1;
	n = write(fd, attrs, sizeof(attrs) - 1);
	if (close(fd) < 0 || n != (ssize_t)sizeof(attrs) - 1)
		return -1;
	return 0;
}

int amp_pack_run(amp_store *st, int auto_, int *ran, amp_pack_counts *before,
		 amp_pack_counts *after, amp_error *err)
{
	const char *gitdir = git_repository_commondir(amp_store_repo(st));
	char attrs[PATH_MAX + 32];
	long long limit;
	int fsync_on, fd, busy, code = 0, status;

	*ran = 0;
	if ((status = amp_pack_limit(st, &limit, err)) < 0 ||
	    (status = amp_store_config_bool(st, "amp.fsync", 1, &fsync_on, err)) < 0)
		return status;
	if ((fd = take_gc_lock(st, !auto_, &busy, err)) < 0)
		return busy ? AMP_OK : AMP_EIO;
	/* Checked under the lock: the repack that held it may have done the
	 * work already. */
	if (auto_ && !due(st, limit))
		goto cleanup;
	if (before && (status = amp_pack_count(st, before, err)) < 0)
		goto cleanup;
	{
		/* The pack and its index are on disk before git deletes the
		 * loose copies (amp.fsync: what amp reported written survives a
		 * power cut, packed or not). */
		const char *argv[16];
		size_t k = 0;

		argv[k++] = "git";
		argv[k++] = "--git-dir";
		argv[k++] = gitdir;
		argv[k++] = "-c";
		argv[k++] = fsync_on ? "core.fsync=objects,pack-metadata,reference" : "core.fsync=none";
		argv[k++] = "-c";
		argv[k++] = "repack.writeBitmaps=false";
		if (attributes(st, attrs, sizeof(attrs)) == 0) {
			argv[k++] = "-c";
			argv[k++] = attrs;
		}
		argv[k++] = "repack";
		argv[k++] = "-d";
		argv[k++] = "-q";
		argv[k++] = "--geometric=2";
		argv[k] = NULL;
		if ((status = amp_run(argv, NULL, 0, NULL, NULL, &code, err)) < 0)
			goto cleanup;
		if (code != 0) {
			status = amp_error_set(err, AMP_EIO, "", "git repack failed (exit %d)", code);
			goto cleanup;
		}
	}
	*ran = 1;
	if (after && (status = amp_pack_count(st, after, err)) < 0)
		goto cleanup;
cleanup:
	close(fd);
	return status;
}

/* Runs amp-gc --auto on the store's repository: next to this program when
 * it is there (the build tree, <prefix>/libexec/amp), else `amp gc` from
 * PATH.  Only returns on failure. */
static void exec_gc(amp_store *st)
{
	const char *gitdir = git_repository_commondir(amp_store_repo(st));
	char dir[PATH_MAX], prog[PATH_MAX + 8];

	if (amp_exe_dir(dir, sizeof(dir)) == 0 &&
	    snprintf(prog, sizeof(prog), "%s/amp-gc", dir) < (int)sizeof(prog) &&
	    access(prog, X_OK) == 0)
		execl(prog, "amp-gc", "--auto", "--quiet", "--repo", gitdir, (char *)NULL);
	execlp("amp", "amp", "gc", "--auto", "--quiet", "--repo", gitdir, (char *)NULL);
}

void amp_pack_maybe(amp_store *st)
{
	amp_error err;
	long long limit;
	int detach = 1, ran, null;
	pid_t pid;

	if (amp_pack_limit(st, &limit, &err) < 0 || !due(st, limit))
		return;
	if (amp_store_config_bool(st, "amp.autoPackDetach", 1, &detach, &err) < 0)
		return;
	if (!detach) {
		/* The repack's failure is the next write's to retry. */
		(void)amp_pack_run(st, 1, &ran, NULL, NULL, &err);
		return;
	}
	/* Twice forked, so the repack is nobody's child to wait for and
	 * outlives a caller that exits at once. */
	if ((pid = fork()) < 0)
		return;
	if (pid == 0) {
		if (setsid() < 0 || fork() != 0)
			_exit(0);
		if ((null = open("/dev/null", O_RDWR)) >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			if (null > 2)
				close(null);
		}
		exec_gc(st);
		_exit(127);
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}
