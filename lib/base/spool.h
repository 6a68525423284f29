/*
 * spool.h - text written once and read back in pieces: kept in memory up
 * to a bound, then in an unlinked temporary file, so that a command that
 * must hold all its output before printing it (amp log sorts its lines by
 * time) does not hold it all in memory.
 */
#ifndef AMP_SPOOL_H
#define AMP_SPOOL_H

#include <stddef.h>
#include <stdio.h>

typedef struct amp_spool {
	FILE *f;       /* what to write to: a memory stream, then the file */
	char *buf;     /* the memory stream's buffer while in memory */
	size_t len;
	size_t bound;  /* past this many bytes the text moves to a file */
	int spilled;   /* f is the temporary file */
} amp_spool;

/* An empty spool keeping up to `bound` bytes in memory.  0, or -1 when out
 * of memory.  Free with amp_spool_free. */
int amp_spool_open(amp_spool *s, size_t bound);

/* Where the next byte written to s->f will be. */
long amp_spool_tell(amp_spool *s);

/* Called after writing to s->f: past the bound, moves the text to an
 * unlinked file in $TMPDIR (default /tmp).  Where no file can be made the
 * text stays in memory: it costs memory, never output. */
void amp_spool_check(amp_spool *s);

/* Ends the writing: 0, or -1 (errno says why) when a write failed.  The
 * spool is then read with amp_spool_read, not written. */
int amp_spool_finish(amp_spool *s, size_t *len);

/* Copies bytes [off, off + n) of the finished spool into out: 0, or -1
 * (errno says why) when the file cannot be read back. */
int amp_spool_read(const amp_spool *s, long off, size_t n, char *out);

void amp_spool_free(amp_spool *s);

#endif
