/* Unit tests of the temporary-file-and-rename module (tempfile.h): a
 * commit puts the whole file in place and leaves nothing beside it; a
 * taken temporary name is never truncated; a rollback or a failed rename
 * leaves the target as it was and no temporary file. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/tempfile.h"
#include "tap.h"

static char dir[256];

/* The entries of the test directory, "." and ".." left out. */
static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

/* 1 when file `path` holds exactly `want`. */
static int holds(const char *path, const char *want)
{
	char buf[256];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return n == strlen(want) && !memcmp(buf, want, n);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

int main(void)
{
	char path[300], stale[400], want[400], sub[300];
	amp_tempfile t, u;
	struct stat sb;
	FILE *f;
	int rc;

	snprintf(dir, sizeof(dir), "%s/amp-tempfile-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		ok(0, "a test directory");
		return tap_done();
	}
	umask(022);
	snprintf(path, sizeof(path), "%s/state.json", dir);

	/* open, write, commit */
	rc = amp_tempfile_open(&t, path, 0);
	snprintf(want, sizeof(want), "%s.%ld.tmp", path, (long)getpid());
	ok(rc == 0 && !strcmp(t.tmp, want) && stat(want, &sb) == 0,
	   "the temporary file is <path>.<pid>.tmp, beside the target");
	ok(stat(path, &sb) < 0 && errno == ENOENT, "the target does not exist before the commit");
	ok(amp_tempfile_write(&t, "one", 3) == 0 && amp_tempfile_commit(&t) == 0 &&
		   holds(path, "one") && entries() == 1,
	   "a commit puts the whole file in place and leaves no temporary file");
	ok(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0644,
	   "the file is made 0666 less the umask, as fopen's are");
	amp_tempfile_rollback(&t);
	ok(holds(path, "one"), "a rollback after the commit changes nothing");

	/* a stream */
	ok(amp_tempfile_open(&t, path, AMP_TEMPFILE_FSYNC) == 0 && (f = amp_tempfile_stream(&t)) &&
		   fprintf(f, "%s-%d", "two", 2) == 5 && amp_tempfile_commit(&t) == 0 &&
		   holds(path, "two-2") && entries() == 1,
	   "a stream's text is flushed, fsynced and renamed into place (AMP_TEMPFILE_FSYNC)");

	/* O_EXCL: a taken name is left alone */
	snprintf(stale, sizeof(stale), "%s.%ld.tmp", path, (long)getpid());
	put(stale, "stale");
	rc = amp_tempfile_open(&t, path, 0);
	snprintf(want, sizeof(want), "%s.%ld.1.tmp", path, (long)getpid());
	ok(rc == 0 && !strcmp(t.tmp, want), "a taken temporary name moves to <path>.<pid>.1.tmp");
	ok(holds(stale, "stale"), "the file of the taken name is not truncated");
	ok(amp_tempfile_open(&u, path, 0) == 0 && strcmp(u.tmp, t.tmp) && strcmp(u.tmp, stale),
	   "two writers of one target at once get two temporary files");
	ok(amp_tempfile_write(&t, "first", 5) == 0 && amp_tempfile_write(&u, "second", 6) == 0 &&
		   amp_tempfile_commit(&t) == 0 && amp_tempfile_commit(&u) == 0 &&
		   holds(path, "second") && holds(stale, "stale") && entries() == 2,
	   "the last rename wins, whole");
	unlink(stale);

	/* rollback */
	ok(amp_tempfile_open(&t, path, 0) == 0 && amp_tempfile_write(&t, "half", 4) == 0, "a write begun");
	errno = EPIPE;
	amp_tempfile_rollback(&t);
	ok(errno == EPIPE, "a rollback keeps errno for the caller's message");
	ok(holds(path, "second") && entries() == 1,
	   "a rollback leaves the target as it was and no temporary file");
	amp_tempfile_rollback(&t);
	ok(entries() == 1, "a second rollback is harmless");

	/* a rename that fails */
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	mkdir(sub, 0777);
	snprintf(want, sizeof(want), "%s/keep", sub);
	put(want, "kept");
	ok(amp_tempfile_open(&t, sub, 0) == 0 && amp_tempfile_write(&t, "x", 1) == 0 &&
		   amp_tempfile_commit(&t) < 0 && errno != 0,
	   "a commit onto a directory that is not empty fails, errno set");
	ok(holds(want, "kept") && entries() == 2 && !t.tmp[0],
	   "the failed commit removed its temporary file and left the target alone");
	unlink(want);
	rmdir(sub);

	/* whole files, and what cannot be made */
	ok(amp_tempfile_write_file(path, "three", 5, 0) == 0 && holds(path, "three") && entries() == 1,
	   "amp_tempfile_write_file writes a whole file in one call");
	snprintf(sub, sizeof(sub), "%s/missing/state.json", dir);
	ok(amp_tempfile_write_file(sub, "x", 1, AMP_TEMPFILE_FSYNC) < 0 && errno == ENOENT &&
		   entries() == 1,
	   "a target in a missing directory fails with ENOENT and leaves nothing");
	{
		char *longp = malloc(5000);

		memset(longp, 'a', 4999);
		longp[4999] = '\0';
		ok(longp && amp_tempfile_open(&t, longp, 0) < 0 && errno == ENAMETOOLONG,
		   "a path that does not fit is ENAMETOOLONG");
		amp_tempfile_rollback(&t);
		ok(entries() == 1, "a rollback after a failed open removes nothing");
		free(longp);
	}

	unlink(path);
	rmdir(dir);
	return tap_done();
}
