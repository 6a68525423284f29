/* test_rectimes_spill.c - the map of record times (store.h
 * amp_record_times) loses nothing when a run cannot be written: the file
 * is held to 64 KiB (RLIMIT_FSIZE, SIGXFSZ ignored: the write fails with
 * EFBIG), and no table as large as a full one, or larger, can be
 * allocated after the first (memory runs out with the disk).  The put
 * that finds no room says so (-1), and every record put before it keeps
 * its time. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "store/store.h"
#include "tap.h"

#define RECORDS 100000L
#define FULL_SLOTS ((size_t)1 << 16) /* rectimes.c TABLE_SLOTS */
#define SLOT_BYTES 32

#if defined(__SANITIZE_ADDRESS__)
int main(void)
{
	tap_skip("a failed spill loses nothing", "calloc is the sanitizer's");
	return tap_done();
}
#else
void *__libc_calloc(size_t n, size_t size);

/* The full tables allocated: none after the first. */
static int full_callocs;

void *calloc(size_t n, size_t size)
{
	if (n >= FULL_SLOTS && size == SLOT_BYTES && ++full_callocs >= 2)
		return NULL;
	return __libc_calloc(n, size);
}

static void names(long i, char *task, size_t tasksz, char *name, size_t namesz)
{
	snprintf(task, tasksz, "T-2026-%06ld", i / 100);
	snprintf(name, namesz, "%06ld.msg.m-%ld.json", i % 100 + 1, i);
}

int main(void)
{
	struct rlimit small = { 64 * 1024, 64 * 1024 };
	amp_record_times *t;
	char task[32], name[64];
	long i, n, wrong = 0;

	signal(SIGXFSZ, SIG_IGN);
	ok(setrlimit(RLIMIT_FSIZE, &small) == 0, "files held to 64 KiB");
	t = amp_record_times_new();
	for (n = 0; n < RECORDS && t; n++) {
		names(n, task, sizeof(task), name, sizeof(name));
		if (amp_record_times_put(t, task, name, 1000 + n) < 0)
			break;
	}
	ok(t && n > 50000 && n < RECORDS, "the put that finds no room says so (-1)");
	ok(full_callocs >= 2, "the table grew to its full size, and no further");
	for (i = 0; t && i < n; i++) {
		names(i, task, sizeof(task), name, sizeof(name));
		if (amp_record_times_get(t, task, name) != 1000 + i)
			wrong++;
	}
	if (wrong)
		printf("# %ld records lost or wrong\n", wrong);
	ok(t && !wrong, "every record put before keeps its time after the spill failed");
	amp_record_times_free(t);
	return tap_done();
}
#endif
