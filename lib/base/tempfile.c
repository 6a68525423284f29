/*
 * tempfile.c - a file written whole beside its target, then renamed into
 * place (tempfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tempfile.h"

/* The most names tried when "<path>.<pid>.tmp" is taken. */
#define TEMPFILE_TRIES 100

int amp_tempfile_open(amp_tempfile *t, const char *path, int flags)
{
	long pid = (long)getpid();
	int n, k;

	memset(t, 0, sizeof(*t));
	t->fd = -1;
	t->flags = flags;
	if ((size_t)snprintf(t->path, sizeof(t->path), "%s", path) >= sizeof(t->path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (k = 0; k < TEMPFILE_TRIES; k++) {
		n = k ? snprintf(t->tmp, sizeof(t->tmp), "%s.%ld.%d.tmp", path, pid, k)
		      : snprintf(t->tmp, sizeof(t->tmp), "%s.%ld.tmp", path, pid);
		if (n < 0 || (size_t)n >= sizeof(t->tmp)) {
			t->tmp[0] = '\0';
			errno = ENAMETOOLONG;
			return -1;
		}
		t->fd = open(t->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (t->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	t->tmp[0] = '\0';
	return -1;
}

FILE *amp_tempfile_stream(amp_tempfile *t)
{
	if (!t->fp && t->fd >= 0 && (t->fp = fdopen(t->fd, "w")))
		t->fd = -1;
	if (!t->fp && t->fd < 0)
		errno = EBADF;
	return t->fp;
}

int amp_tempfile_write(amp_tempfile *t, const void *data, size_t len)
{
	const char *p = data;

	if (t->fp)
		return fwrite(data, 1, len, t->fp) == len ? 0 : -1;
	if (t->fd < 0) {
		errno = EBADF;
		return -1;
	}
	while (len > 0) {
		ssize_t w = write(t->fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int amp_tempfile_close(amp_tempfile *t)
{
	int rc = 0, fd = t->fp ? fileno(t->fp) : t->fd;

	if (t->fp && fflush(t->fp) != 0)
		rc = -1;
	if (rc == 0 && fd >= 0 && (t->flags & AMP_TEMPFILE_FSYNC) && fsync(fd) < 0)
		rc = -1;
	if (t->fp) {
		if (fclose(t->fp) != 0)
			rc = -1;
	} else if (t->fd >= 0 && close(t->fd) < 0) {
		rc = -1;
	}
	t->fp = NULL;
	t->fd = -1;
	return rc;
}

/* fsync of the directory holding `path`: the rename is in the directory. */
static int fsync_dir(const char *path)
{
	char dir[sizeof(((amp_tempfile *)0)->path)];
	const char *slash = strrchr(path, '/');
	int fd, rc;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

int amp_tempfile_commit(amp_tempfile *t)
{
	if (!t->tmp[0]) {
		errno = EBADF;
		return -1;
	}
	if ((t->fp || t->fd >= 0) && amp_tempfile_close(t) < 0)
		goto fail;
	if (rename(t->tmp, t->path) < 0)
		goto fail;
	t->tmp[0] = '\0';
	if ((t->flags & AMP_TEMPFILE_FSYNC) && fsync_dir(t->path) < 0)
		return -1;
	return 0;
fail:
	amp_tempfile_rollback(t);
	return -1;
}

void amp_tempfile_rollback(amp_tempfile *t)
{
	int saved = errno;

	if (t->fp)
		fclose(t->fp);
	else if (t->fd >= 0)
		close(t->fd);
	t->fp = NULL;
	t->fd = -1;
	if (t->tmp[0])
		unlink(t->tmp);
	t->tmp[0] = '\0';
	errno = saved;
}

int amp_tempfile_write_file(const char *path, const void *data, size_t len, int flags)
{
	amp_tempfile t;

	if (amp_tempfile_open(&t, path, flags) < 0 || amp_tempfile_write(&t, data, len) < 0 ||
	    amp_tempfile_commit(&t) < 0) {
		amp_tempfile_rollback(&t);
		return -1;
	}
	return 0;
}
