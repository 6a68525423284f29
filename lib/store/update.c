/*
 * update.c - the write primitive (store.h): a commit appended to a ref by
 * compare-and-swap under the writers' flock, one at a time or as a batch,
 * and amp init, the one writer that may start a ref.  After a write it
 * starts the maintenance of the packs (pack.h), below it.
 */
#include "store_int.h"
#include "base/gitobj.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "pack.h"

static int ensure_dir(const char *path)
{
	return mkdir(path, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

/*
 * A killed writer can leave <ref>.lock behind, and libgit2 then refuses
 * every later update.  We hold an flock on a file of our own while moving
 * the ref, so no live amp writer can own a lock we see then; a lock older
 * than amp.staleLockTimeout (default 2 s, while a real update holds it for
 * microseconds) is also not a live git's, and we remove it.
 */
static void clear_stale_ref_lock(amp_store *st, const char *ref)
{
	char lock[PATH_MAX + 300];
	struct stat sb;
	struct timespec now;
	int64_t age_ms;

	if (!fits(snprintf(lock, sizeof(lock), "%s/%s.lock", st->common_dir, ref),
		  sizeof(lock)) || stat(lock, &sb) != 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	age_ms = ((int64_t)now.tv_sec - sb.st_mtim.tv_sec) * 1000 +
		 (now.tv_nsec - sb.st_mtim.tv_nsec) / 1000000;
	if (age_ms >= st->stale_lock_ms)
		unlink(lock);
}

/* Opens (creating it) the file whose flock amp's writers of `ref` hold
 * while they move it; returns the descriptor, or -1 with err filled. */
static int open_writer_lock(amp_store *st, const char *ref, amp_error *err)
{
	char path[PATH_MAX + 300], *p;
	int fd;

	if (ensure_dir(st->state_dir) < 0) {
		amp_error_set(err, AMP_EIO, "", "cannot create %s: %s",
			      st->state_dir, strerror(errno));
		return -1;
	}
	if (!fits(snprintf(path, sizeof(path), "%s/%s.flock", st->state_dir, ref),
		  sizeof(path))) {
		amp_error_set(err, AMP_EIO, "", "path too long: %s/%s.flock",
			      st->state_dir, ref);
		return -1;
	}
	for (p = path + strlen(st->state_dir) + 1; *p; p++)
		if (*p == '/')
			*p = '_';
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) < 0)
		amp_error_set(err, AMP_EIO, "", "cannot open %s: %s", path,
			      strerror(errno));
	return fd;
}


/* fsync() of the directory holding `path`, as libgit2 does after a rename
 * with fsync on: the rename itself is in the directory. */
static void fsync_parent(const char *path)
{
	char dir[PATH_MAX + 300];
	const char *slash = strrchr(path, '/');
	int fd;

	if (!slash || !fits(snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path),
			    sizeof(dir)) ||
	    (fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	fsync(fd);
	close(fd);
}

/*
 * move_ref for the case of every amp write: `ref` is a loose file holding
 * `tip`, and keeps no reflog.  It is moved as git moves a ref: <ref>.lock
 * created exclusively (so a git update-ref at the same moment fails, or
 * makes this one fail), the ref read under it and compared with `tip`, the
 * new id written to the lock and renamed over the ref.  libgit2 did the
 * same with ~20 more calls (config snapshots, stats of the ref, a reflog
 * look-up, a link() attempt): 860 us of the ~1.7 ms a send held the
 * writers' lock, 490 us this way (medians of 40 sends).  The lock's
 * block is allocated before the write (posix_fallocate): renamed over the
 * old ref with its block still to be allocated, ext4 allocates it in
 * rename() (auto_da_alloc), which took 250 us instead of 180.
 *
 * Returns 0 when moved, 1 when another writer is in the way (retry), 2
 * when the ref is not that case (missing or only in packed-refs, symbolic,
 * unreadable, with a reflog: libgit2 does it), or an error status.
 */
static int move_loose_ref(amp_store *st, const char *ref, const git_oid *tip,
			  const git_oid *next, amp_error *err)
{
	char path[PATH_MAX + 300], lock[PATH_MAX + 310], log[PATH_MAX + 310];
	char now[GIT_OID_HEXSZ + 2], line[GIT_OID_HEXSZ + 1];
	git_oid current;
	struct stat sb;
	ssize_t n;
	int fd = -1, lock_fd = -1, status = 2;

	if (!tip || !fits(snprintf(path, sizeof(path), "%s/%s", st->common_dir, ref), sizeof(path)) ||
	    !fits(snprintf(lock, sizeof(lock), "%s.lock", path), sizeof(lock)) ||
	    !fits(snprintf(log, sizeof(log), "%s/logs/%s", st->common_dir, ref), sizeof(log)) ||
	    lstat(log, &sb) == 0 || errno != ENOENT || st->log_all_refs)
		return 2;
	if ((lock_fd = open(lock, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)) < 0) {
		if (errno != EEXIST)
			return 2;
		clear_stale_ref_lock(st, ref);
		return 1;
	}
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (n = read(fd, now, sizeof(now))) != GIT_OID_HEXSZ + 1 || now[GIT_OID_HEXSZ] != '\n' ||
	    git_oid_fromstrn(&current, now, GIT_OID_HEXSZ) < 0)
		goto cleanup; /* 2: libgit2 reads whatever is there */
	if (!git_oid_equal(&current, tip)) {
		status = 1;
		goto cleanup;
	}
	git_oid_fmt(line, next);
	line[GIT_OID_HEXSZ] = '\n';
	(void)posix_fallocate(lock_fd, 0, sizeof(line));
	if ((n = write(lock_fd, line, sizeof(line))) != (ssize_t)sizeof(line) ||
	    (st->fsync && fsync(lock_fd) < 0)) {
		status = amp_error_set(err, AMP_EIO, "", "cannot write %s: %s", lock,
				       n < 0 || n == (ssize_t)sizeof(line) ? strerror(errno) : "short write");
		goto cleanup;
	}
	n = close(lock_fd);
	lock_fd = -1;
	if (n < 0 || rename(lock, path) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "cannot update %s: %s", ref, strerror(errno));
		goto cleanup;
	}
	if (st->fsync)
		fsync_parent(path);
	status = 0;
cleanup:
	if (fd >= 0)
		close(fd);
	if (lock_fd >= 0)
		close(lock_fd);
	if (status != 0)
		unlink(lock);
	git_error_clear();
	return status;
}

/* Moves ref from `tip` (NULL: ref must not exist) to `next`; the caller
 * holds the writers' flock.  Returns 0 when moved, 1 when a writer outside
 * amp got in first (retry), or an error status. */
static int move_ref(amp_store *st, const char *ref, const git_oid *tip,
		    const git_oid *next, const char *subject, amp_error *err)
{
	git_reference *out = NULL;
	int rc, status;

	if ((status = move_loose_ref(st, ref, tip, next, err)) != 2)
		return status;

	/* force is what allows replacing an existing ref; `tip` makes it a
	 * compare-and-swap. */
	rc = git_reference_create_matching(&out, st->repo, ref, next,
					   tip != NULL, tip, subject);
	if (rc == 0) {
		status = 0;
	} else if (rc == GIT_EMODIFIED || rc == GIT_EEXISTS || rc == GIT_ELOCKED) {
		if (rc == GIT_ELOCKED)
			clear_stale_ref_lock(st, ref);
		git_error_clear();
		status = 1;
	} else {
		status = amp_error_git(err, AMP_EIO, "cannot update %s", ref);
	}
	git_reference_free(out);
	return status;
}

/* Full-jitter exponential backoff: a random sleep in [0, min(cap, base*2^n)). */
static void backoff(amp_store *st, unsigned attempt)
{
	unsigned long cap_us = 50000, span = 200;
	struct timespec ts;
	unsigned long us;

	while (attempt-- > 0 && span < cap_us)
		span *= 2;
	if (span > cap_us)
		span = cap_us;
	us = (unsigned long)rand_r(&st->rng) % span;
	ts.tv_sec = (time_t)(us / 1000000);
	ts.tv_nsec = (long)(us % 1000000) * 1000;
	nanosleep(&ts, NULL);
}

static int build_init(amp_store *st, git_tree *tip, void *ctx,
		      amp_store_write *w, amp_error *err);

static void wake_writer(int sig)
{
	(void)sig;
}

/*
 * Takes the writers' flock until `deadline`: 0 when taken, -1 when not.
 * The wait blocks in flock(), so the kernel hands the lock to a waiter the
 * moment it is released; polling left it idle between a release and the
 * next poll (8 writers on 2 cores: 0.96-1.1x one writer's throughput).  A
 * SIGALRM every AMP_LOCK_TICK_MS (setitimer; the handler does nothing and
 * the action has no SA_RESTART) interrupts the wait to look at the
 * deadline, so nobody blocks forever; the caller's timer and action are
 * put back.  Where the timer cannot be set, the wait polls.
 */
#define AMP_LOCK_TICK_MS 100

static int wait_writer_lock(amp_store *st, int fd, int64_t deadline)
{
	struct sigaction sa, old_sa;
	struct itimerval tick, old_tick;
	unsigned polls;
	int rc;

	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = wake_writer;
	sigemptyset(&sa.sa_mask);
	memset(&tick, 0, sizeof(tick));
	tick.it_value.tv_usec = tick.it_interval.tv_usec = AMP_LOCK_TICK_MS * 1000;
	if (sigaction(SIGALRM, &sa, &old_sa) == 0) {
		if (setitimer(ITIMER_REAL, &tick, &old_tick) == 0) {
			while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR &&
			       amp_monotonic_ms() <= deadline)
				;
			setitimer(ITIMER_REAL, &old_tick, NULL);
			sigaction(SIGALRM, &old_sa, NULL);
			return rc == 0 ? 0 : -1;
		}
		sigaction(SIGALRM, &old_sa, NULL);
	}
	for (polls = 0; flock(fd, LOCK_EX | LOCK_NB) != 0; polls++) {
		if (amp_monotonic_ms() > deadline)
			return -1;
		backoff(st, polls < 5 ? polls : 5);
	}
	return 0;
}

/* wait_writer_lock for a writer's attempt, with the error it ends in. */
static int take_writer_lock(amp_store *st, int fd, int64_t deadline, const char *ref,
			    unsigned attempt, amp_error *err)
{
	if (wait_writer_lock(st, fd, deadline) < 0)
		return amp_error_set(err, AMP_EIO, "",
				     "%s stayed busy for %.0f s (%u attempts); nothing was written",
				     ref, st->retry_timeout_ms / 1000.0, attempt);
	return AMP_OK;
}

int amp_store_lock(amp_store *st, const char *ref, amp_error *err)
{
	int fd = open_writer_lock(st, ref, err);

	if (fd < 0)
		return -1;
	if (wait_writer_lock(st, fd, amp_monotonic_ms() + st->retry_timeout_ms) < 0) {
		close(fd);
		amp_error_set(err, AMP_EIO, "", "%s stayed busy for %.0f s; nothing was written", ref,
			      st->retry_timeout_ms / 1000.0);
		return -1;
	}
	return fd;
}

int amp_store_trylock(amp_store *st, const char *name, int *fd, amp_error *err)
{
	int f = open_writer_lock(st, name, err);

	*fd = -1;
	if (f < 0)
		return AMP_EIO;
	int saved;

	if (flock(f, LOCK_EX | LOCK_NB) == 0) {
		*fd = f;
		return 1;
	}
	saved = errno; /* close may change it */
	close(f);
	if (saved == EWOULDBLOCK)
		return 0;
	return amp_error_set(err, AMP_EIO, "", "cannot lock %s: %s", name, strerror(saved));
}

void amp_store_unlock(int fd)
{
	if (fd >= 0) {
		flock(fd, LOCK_UN);
		close(fd);
	}
}

/* Strict mode: the key must be one the role may speak with, before
 * anything is written (amp init only adds AMP). */
static int may_write(amp_store *st, const char *ref, const amp_store_write *w,
		     amp_error *err)
{
	char principal[256] = "", *at;
	int status;

	if (!st->signing.require || strcmp(ref, st->ref))
		return AMP_OK;
	if ((status = amp_signing_may_write(&st->signing, w->author[0] ? w->author : "system",
					    st->agent, principal, sizeof(principal), err)) < 0)
		return status;
	/* The key names the instance ("alice@executor"): that is who writes. */
	if (!st->agent[0] && w->author[0] && strcmp(w->author, "system") &&
	    (at = strrchr(principal, '@')) && at > principal &&
	    (size_t)(at - principal) <= AMP_AGENT_MAX && amp_agent_valid(principal, (size_t)(at - principal)))
		snprintf(st->agent, sizeof(st->agent), "%.*s", (int)(at - principal), principal);
	return AMP_OK;
}

/*
 * The commit of one write (amp send, ack, every command's) and its
 * objects, as one pack with its index, written before the ref moves.  As
 * loose files, the blob, the five trees of its path and the commit were
 * seven file creations and up to seven fan-out directories, each a few
 * hundred microseconds on ext4 (and a fsync each with amp.fsync): measured
 * side by side on 2 cores, a send took 13.7 ms loose and 10.4 ms packed,
 * 22.4 and 14.3 ms with amp.fsync.  The packs add up: amp's maintenance
 * rolls them up past AMP_AUTOPACK_PACKS (pack.h).
 */
static int write_one(amp_store *st, git_commit *parent, git_tree *base,
		     const amp_store_write *w, git_oid *out, amp_error *err)
{
	struct batch_odb b;
	int status;

	/* Never inside a batch (amp import's steps write to it, not through
	 * amp_store_update): this write's objects would reach the disk with
	 * the batch's pack, after this write's ref had moved. */
	if (st->batch)
		return amp_error_set(err, AMP_EIO, "", "a write inside an import's batch");
	if ((status = amp_store_batch_open(st, &b, 0, err)) < 0)
		return status;
	if ((status = amp_store_write_commit(st, parent, base, w, out, err)) == AMP_OK)
		status = amp_store_batch_flush(st, &b, err);
	amp_store_batch_close(st, &b);
	return status;
}

/*
 * Reads the tip of ref and its tree before the writers' flock is taken:
 * the first read of the object database lists the pack directory and opens
 * each pack's index (a directory read and a few calls per pack), and the
 * commit's time needs the time zone file; done here, that is not done by
 * a writer the others queue behind (under the flock, the tip is read
 * again: what a writer before it added is one more pack to open).  Errors
 * are the build's to report.
 */
static void warm_up(amp_store *st, const char *ref)
{
	git_oid tip;
	git_commit *commit = NULL;
	git_tree *tree = NULL;

	tzset();
	if (git_reference_name_to_id(&tip, st->repo, ref) == 0 &&
	    amp_git_commit_lookup(&commit, st->repo, &tip) == 0)
		amp_git_commit_tree(&tree, commit);
	git_tree_free(tree);
	git_commit_free(commit);
	git_error_clear();
}

/*
 * amp's writers take turns: each takes the writers' flock (waited for in
 * flock(), never past the deadline: wait_writer_lock) before reading the
 * tip, and holds it through the build and the ref move, so no amp writer
 * ever builds on a tip that another amp writer is about to replace.  Measured
 * with 8 writers x 150 messages on 2 cores: 0 retries and 7.4 s, where
 * building optimistically and taking the flock only to move the ref cost
 * ~1 wasted build per message and 9.8-12.6 s.  The ref move stays a
 * compare-and-swap, so writers that ignore the flock (git fetch, git
 * update-ref, another tool) can never be overwritten: amp rebuilds on what
 * they wrote and tries again.
 */
int amp_store_update(amp_store *st, const char *ref, amp_store_build_fn build,
		     void *ctx, git_oid *out, amp_error *err)
{
	amp_store_write w;
	git_commit *parent = NULL;
	git_tree *tree = NULL;
	git_oid tip, next;
	int64_t deadline = amp_monotonic_ms() + st->retry_timeout_ms;
	unsigned attempt;
	int rc, status = AMP_OK, have_tip, fd, held = 0;

	memset(&w, 0, sizeof(w));
	if ((fd = open_writer_lock(st, ref, err)) < 0)
		return AMP_EIO;
	warm_up(st, ref);
	for (attempt = 0;; attempt++) {
		if ((status = take_writer_lock(st, fd, deadline, ref, attempt, err)) < 0)
			goto cleanup;
		held = 1;
		rc = git_reference_name_to_id(&tip, st->repo, ref);
		if (rc < 0 && rc != GIT_ENOTFOUND) {
			status = amp_error_git(err, AMP_EIO, "cannot read %s", ref);
			goto cleanup;
		}
		have_tip = rc == 0;
		git_error_clear();
		if (have_tip && (amp_git_commit_lookup(&parent, st->repo, &tip) < 0 ||
				 amp_git_commit_tree(&tree, parent) < 0)) {
			status = amp_error_git(err, AMP_EIO, "cannot read %s", ref);
			goto cleanup;
		}
		/* Only amp init may start a ref: a writer finding none is in a
		 * repository nobody prepared, or one whose ref was deleted. */
		if (!have_tip && build != build_init) {
			status = amp_error_set(err, AMP_EIO, "",
					       "no AMP store in this repository (%s is missing): run 'amp init'",
					       ref);
			goto cleanup;
		}
		status = build(st, tree, ctx, &w, err);
		if (status != AMP_OK)
			goto cleanup;
		if (build != build_init && (status = may_write(st, ref, &w, err)) < 0)
			goto cleanup;
		if ((status = write_one(st, parent, tree, &w, &next, err)) < 0)
			goto cleanup;
		rc = move_ref(st, ref, have_tip ? &tip : NULL, &next, w.subject,
			      err);
		if (rc < 0) {
			status = rc;
			goto cleanup;
		}
		if (rc == 0) {
			if (out)
				git_oid_cpy(out, &next);
			status = AMP_OK;
			goto cleanup;
		}
		st->retries++;
		if (amp_monotonic_ms() > deadline) {
			status = amp_error_set(err, AMP_EIO, "",
					       "%s stayed busy for %.0f s (%u attempts); nothing was written",
					       ref, st->retry_timeout_ms / 1000.0, attempt + 1);
			goto cleanup;
		}
		/* Beaten while holding the flock: a writer outside amp (git
		 * fetch) or a stale ref lock.  Let it finish, then go again. */
		flock(fd, LOCK_UN);
		held = 0;
		backoff(st, attempt);
		amp_store_write_reset(&w);
		git_tree_free(tree);
		git_commit_free(parent);
		tree = NULL;
		parent = NULL;
	}
cleanup:
	if (held)
		flock(fd, LOCK_UN);
	close(fd);
	amp_store_write_reset(&w);
	git_tree_free(tree);
	git_commit_free(parent);
	/* After the flock is released: the hourly sweep and the repack must
	 * not hold up the writers queued behind this one. */
	if (status == AMP_OK)
		amp_store_sweep_hourly(st);
	if (status == AMP_OK && build != build_init)
		amp_pack_maybe(st);
	return status;
}

/* Runs every step on `parent` (the tip), committing in memory; *head is the
 * last commit (a new reference), *n how many were made. */
static int batch_build(amp_store *st, const char *ref, struct batch_odb *b,
		       git_commit *parent, amp_store_step_fn step, void *ctx,
		       git_commit **head, size_t *n, amp_error *err)
{
	amp_store_write w;
	git_commit *cur = NULL;
	git_tree *tree = NULL;
	git_oid next;
	size_t i, flushed = 0; /* *n at the last flush */
	int status;

	memset(&w, 0, sizeof(w));
	*n = 0;
	if (git_commit_dup(&cur, parent) < 0 || amp_git_commit_tree(&tree, cur) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read %s", ref);
		goto cleanup;
	}
	for (i = 0;; i++) {
		amp_store_write_reset(&w);
		status = step(st, tree, ctx, i, &w, err);
		if (status == AMP_DONE)
			break;
		if (status == AMP_NOOP)
			continue;
		if (status != AMP_OK ||
		    (status = may_write(st, ref, &w, err)) < 0 ||
		    (status = amp_store_write_commit(st, cur, tree, &w, &next, err)) < 0)
			goto cleanup;
		git_tree_free(tree);
		git_commit_free(cur);
		tree = NULL;
		if (amp_git_commit_lookup(&cur, st->repo, &next) < 0 ||
		    amp_git_commit_tree(&tree, cur) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot read a new commit");
			goto cleanup;
		}
		/* The index pages of the flushes' packs that lookups touched
		 * stay mapped: at 1M messages 336 MB of them beside a heap
		 * flat at 47 MB (share/doc/performance.md).  Trimmed as
		 * the walks trim theirs (process.h). */
		amp_store_walk_step();
		if (++*n - flushed >= AMP_STORE_BATCH_PACK ||
		    amp_store_batch_bytes(b) >= AMP_STORE_BATCH_BYTES) {
			flushed = *n;
			if ((status = amp_store_batch_flush(st, b, err)) < 0)
				goto cleanup;
		}
	}
	status = *n ? amp_store_batch_flush(st, b, err) : AMP_OK;
	if (status == AMP_OK)
		amp_store_batch_pack_up(st, b);
cleanup:
	amp_store_write_reset(&w);
	git_tree_free(tree);
	if (status == AMP_OK)
		*head = cur;
	else
		git_commit_free(cur);
	return status;
}

/*
 * Holds the writers' flock through the whole batch, as amp_store_update
 * does through one build: amp's senders wait (up to amp.retryTimeout)
 * rather than make the batch start over; a writer outside amp that moves
 * the ref meanwhile does make it start over, on what that writer wrote.
 */
int amp_store_update_batch(amp_store *st, const char *ref, amp_store_step_fn step,
			   void *ctx, git_oid *out, size_t *commits, amp_error *err)
{
	struct batch_odb b = { 0 };
	git_commit *parent = NULL, *head = NULL;
	git_oid tip;
	int64_t deadline = amp_monotonic_ms() + st->retry_timeout_ms;
	unsigned attempt;
	size_t n = 0;
	int rc, status = AMP_OK, fd, held = 0;

	if ((fd = open_writer_lock(st, ref, err)) < 0)
		return AMP_EIO;
	for (attempt = 0;; attempt++) {
		if ((status = take_writer_lock(st, fd, deadline, ref, attempt, err)) < 0)
			goto cleanup;
		held = 1;
		if ((rc = git_reference_name_to_id(&tip, st->repo, ref)) == GIT_ENOTFOUND) {
			status = amp_error_set(err, AMP_EIO, "",
					       "no AMP store in this repository (%s is missing): run 'amp init'",
					       ref);
			goto cleanup;
		}
		if (rc < 0 || amp_git_commit_lookup(&parent, st->repo, &tip) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot read %s", ref);
			goto cleanup;
		}
		if ((status = amp_store_batch_open(st, &b, BATCH_SHARED, err)) < 0)
			goto cleanup;
		/* libgit2's object cache off for the build: every commit
		 * writes the trees of its path anew, so the cache (2 MiB,
		 * process.c) kept evicting, scanning its map from the start
		 * each time (git_oidmap_iterate: 9% of an import), and held
		 * each tree twice (raw in the odb, parsed) for one more
		 * read.  Without it, 4,000 records into a 100k-record SSOT
		 * took 2.07G instructions instead of 2.18G per 2,000 and
		 * peaked at 35 MB instead of 42 MB; a task of 2,000 records,
		 * 8.7-9.5 s of CPU instead of 10.3 s, 30 MB instead of 35 MB. */
		/* Speed only: a libgit2 that refuses the option builds the same
		 * commits, so its refusal fails nothing. */
		(void)git_libgit2_opts(GIT_OPT_ENABLE_CACHING, 0);
		status = batch_build(st, ref, &b, parent, step, ctx, &head, &n, err);
		(void)git_libgit2_opts(GIT_OPT_ENABLE_CACHING, 1);
		git_error_clear();
		amp_store_batch_close(st, &b);
		if (status < 0 || n == 0)
			goto cleanup;
		rc = move_ref(st, ref, &tip, git_commit_id(head), git_commit_summary(head), err);
		if (rc < 0) {
			status = rc;
			goto cleanup;
		}
		if (rc == 0) {
			if (out)
				git_oid_cpy(out, git_commit_id(head));
			goto cleanup;
		}
		st->retries++;
		n = 0;
		git_commit_free(head);
		git_commit_free(parent);
		head = parent = NULL;
		if (amp_monotonic_ms() > deadline) {
			status = amp_error_set(err, AMP_EIO, "",
					       "%s stayed busy for %.0f s (%u attempts); nothing was written",
					       ref, st->retry_timeout_ms / 1000.0, attempt + 1);
			goto cleanup;
		}
		flock(fd, LOCK_UN);
		held = 0;
		backoff(st, attempt);
	}
cleanup:
	if (commits)
		*commits = status == AMP_OK ? n : 0;
	if (held)
		flock(fd, LOCK_UN);
	close(fd);
	git_commit_free(head);
	git_commit_free(parent);
	/* After the flock, as amp_store_update's.  A batch leaves a pack per
	 * AMP_STORE_BATCH_PACK commits or AMP_STORE_BATCH_BYTES. */
	if (status == AMP_OK && n) {
		amp_store_sweep_hourly(st);
		amp_pack_maybe(st);
	}
	return status;
}

/* ---- init --------------------------------------------------------------- */

struct init_ctx {
	const char *marker;
	const char *subject;
	int strict; /* write where trust starts (sign.h, AMP_STRICT_TRAILER) */
	int layout; /* of a new messages ref (store.h "Layout") */
};

static int build_init(amp_store *st, git_tree *tip, void *ctx,
		      amp_store_write *w, amp_error *err)
{
	struct init_ctx *ic = ctx;
	int status;

	(void)st;
	if (tip && !ic->strict)
		return AMP_NOOP;
	/* Strict mode: the admin's signed marker, on the root when the ref
	 * is new, else on an empty commit above the history it vouches for. */
	if (ic->strict) {
		snprintf(w->author, sizeof(w->author), "admin");
		snprintf(w->trailers, sizeof(w->trailers), "%s\n", AMP_STRICT_TRAILER);
	} else {
		snprintf(w->author, sizeof(w->author), "system");
	}
	snprintf(w->subject, sizeof(w->subject), "%s",
		 tip ? "amp: strict mode on, the history below is the admin's (AMP/1.0)" : ic->subject);
	if (tip)
		return AMP_OK;
	/* A new SSOT starts in layout 2 (store.h "Layout"), unless git
	 * config amp.layout is 1 (clones whose amp predates layout 2 share
	 * it); the errors ref holds no task. */
	if (!strcmp(ic->marker + strlen(ic->marker) - strlen("messages\n"), "messages\n") &&
	    ic->layout == AMP_LAYOUT_FANNED &&
	    (status = amp_store_write_add(w, AMP_LAYOUT_FILE, "2\n", 2, err)) < 0)
		return status;
	return amp_store_write_add(w, "AMP", ic->marker, strlen(ic->marker), err);
}

/* Strict mode: whether `ref` needs the admin's marker: 2 when it is
 * missing, 1 when it holds none (amp_trust), 0 when not; < 0 an error. */
static int needs_marker(amp_store *st, const char *ref, amp_error *err)
{
	amp_trust trust;
	git_oid tip;
	int rc;

	if (!st->signing.require)
		return 0;
	if ((rc = git_reference_name_to_id(&tip, st->repo, ref)) < 0) {
		if (rc != GIT_ENOTFOUND)
			return amp_error_git(err, AMP_EIO, "cannot read %s", ref);
		git_error_clear();
		return 2;
	}
	amp_trust_init(&trust, &tip);
	rc = amp_trust_found(&trust, st->repo, &st->signing, err);
	amp_trust_free(&trust);
	return rc < 0 ? rc : !rc;
}

int amp_store_init(amp_store *st, int *created, amp_error *err)
{
	struct init_ctx ctx[2] = { { "AMP/1.0 store 1\nmessages\n", "amp: SSOT created (AMP/1.0)", 0, 0 },
				   { "AMP/1.0 store 1\nerrors\n", "amp: error log created (AMP/1.0)", 0, 0 } };
	const char *refs[2] = { st->ref, st->errors_ref };
	char layout[16];
	int made = 0, rc, i;

	if (ensure_dir(st->state_dir) < 0)
		return amp_error_set(err, AMP_EIO, "", "cannot create %s: %s",
				     st->state_dir, strerror(errno));
	if (amp_store_config(st, "amp.layout", layout, sizeof(layout)) && strcmp(layout, "1") &&
	    strcmp(layout, "2"))
		return amp_error_set(err, AMP_EUSAGE, "", "git config amp.layout: '%s' is not 1 or 2",
				     layout);
	ctx[0].layout = ctx[1].layout = strcmp(layout, "1") ? AMP_LAYOUT_FANNED : AMP_LAYOUT_FLAT;
	for (i = 0; i < 2; i++)
		if ((ctx[i].strict = needs_marker(st, refs[i], err)) < 0)
			return ctx[i].strict;
	/* Only the admin's key may say where trust starts. */
	if ((ctx[0].strict || ctx[1].strict) &&
	    (rc = amp_signing_may_write(&st->signing, "admin", NULL, NULL, 0, err)) < 0)
		return rc;
	for (i = 0; i < 2; i++) {
		if ((rc = amp_store_update(st, refs[i], build_init, &ctx[i], NULL, err)) < 0)
			return rc;
		if (rc == AMP_OK)
			made |= ctx[i].strict == 2 ? 3 : ctx[i].strict ? 2 : 1;
	}
	if (created)
		*created = made;
	return AMP_OK;
}
