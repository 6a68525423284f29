/* Unit tests of the spool (spool.h): text past its bound moves to an
 * unlinked temporary file and reads back byte for byte; where no file can
 * be made it stays in memory and reads back the same. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/spool.h"
#include "tap.h"

#define LINES 2000

/* Writes LINES numbered lines into a spool of bound 4 KiB, checks where
 * they ended and reads every line back from its offset. */
static void run(const char *tmpdir, int want_spill, const char *what)
{
	amp_spool s;
	long start[LINES + 1];
	char line[64], back[64], name[200];
	size_t len = 0;
	int i, same = 1;

	if (tmpdir)
		setenv("TMPDIR", tmpdir, 1);
	if (amp_spool_open(&s, 4096) < 0) {
		ok(0, "a spool");
		return;
	}
	for (i = 0; i < LINES; i++) {
		start[i] = amp_spool_tell(&s);
		fprintf(s.f, "line %d of the spool\n", i);
		amp_spool_check(&s);
	}
	start[LINES] = amp_spool_tell(&s);
	snprintf(name, sizeof(name), "%s: the text %s past the bound", what,
		 want_spill ? "moves to a file" : "stays in memory");
	ok(s.spilled == want_spill && (!want_spill || s.buf == NULL), name);
	ok(amp_spool_finish(&s, &len) == 0 && len == (size_t)start[LINES], "the spool ends where the last line does");
	for (i = LINES; i-- > 0;) {
		size_t n = (size_t)(start[i + 1] - start[i]);

		snprintf(line, sizeof(line), "line %d of the spool\n", i);
		same &= n == strlen(line) && amp_spool_read(&s, start[i], n, back) == 0 &&
			!memcmp(back, line, n);
	}
	snprintf(name, sizeof(name), "%s: %d lines read back in reverse, byte for byte", what, LINES);
	ok(same, name);
	ok(amp_spool_read(&s, start[LINES] - 2, 5, back) < 0, "a read past the end fails");
	if (want_spill) {
		DIR *d = opendir(tmpdir);
		struct dirent *e;
		int left = 0;

		while (d && (e = readdir(d)))
			left += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
		if (d)
			closedir(d);
		ok(d && left == 0, "the temporary file has no name while the spool is open");
	}
	amp_spool_free(&s);
}

int main(void)
{
	char dir[] = "/tmp/amp-test-spool-XXXXXX";
	int made = mkdtemp(dir) != NULL;

	ok(made, "a temporary directory");
	if (made) {
		run(dir, 1, "TMPDIR writable");
		tap_remove_dir(dir);
	}
	run("/nonexistent/amp-test-spool", 0, "TMPDIR missing");
	return tap_done();
}
