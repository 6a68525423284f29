#include "spool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int amp_spool_open(amp_spool *s, size_t bound)
{
	memset(s, 0, sizeof(*s));
	s->bound = bound;
	return (s->f = open_memstream(&s->buf, &s->len)) ? 0 : -1;
}

long amp_spool_tell(amp_spool *s)
{
	return ftell(s->f);
}

void amp_spool_check(amp_spool *s)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	FILE *f = NULL;
	int fd = -1;

	if (s->spilled || amp_spool_tell(s) <= (long)s->bound)
		return;
	if (!dir || !*dir)
		dir = "/tmp";
	if (snprintf(path, sizeof(path), "%s/amp-spool.XXXXXX", dir) >= (int)sizeof(path) ||
	    (fd = mkstemp(path)) < 0)
		return;
	/* Nobody else needs its name: gone with the process, however it ends. */
	unlink(path);
	if (!(f = fdopen(fd, "w+")) || fflush(s->f) != 0 ||
	    fwrite(s->buf, 1, s->len, f) != s->len || fflush(f) != 0) {
		if (f)
			fclose(f);
		else
			close(fd);
		return;
	}
	fclose(s->f);
	free(s->buf);
	s->buf = NULL;
	s->len = 0;
	s->f = f;
	s->spilled = 1;
}

int amp_spool_finish(amp_spool *s, size_t *len)
{
	long end;

	if (!s->spilled) {
		int failed = fclose(s->f) != 0;

		s->f = NULL;
		*len = s->len;
		return failed ? -1 : 0;
	}
	if (fflush(s->f) != 0 || ferror(s->f) || (end = ftell(s->f)) < 0)
		return -1;
	*len = (size_t)end;
	return 0;
}

int amp_spool_read(const amp_spool *s, long off, size_t n, char *out)
{
	ssize_t got;

	if (!s->spilled) {
		if (off < 0 || (size_t)off > s->len || n > s->len - (size_t)off) {
			errno = EINVAL;
			return -1;
		}
		memcpy(out, s->buf + off, n);
		return 0;
	}
	while (n) {
		if ((got = pread(fileno(s->f), out, n, off)) < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			if (got == 0)
				errno = EIO; /* the file is shorter than what was written */
			return -1;
		}
		out += got;
		off += got;
		n -= (size_t)got;
	}
	return 0;
}

void amp_spool_free(amp_spool *s)
{
	if (s->f)
		fclose(s->f);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}
