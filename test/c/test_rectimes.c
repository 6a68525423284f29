/* test_rectimes.c - the map of record times (store.h amp_record_times) of
 * a walk of a whole history, at 1,000,000 records (an SSOT of 500,000
 * messages and their ACKs): every record keeps its least time, whatever
 * the order of the puts, and the map's memory stays bounded (issue 35: at
 * 1M messages the map took 96 MB, 144 MB while its table doubled). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "tap.h"

#define RECORDS 1000000L
#define PER_TASK 100L
/* A prime, so that i * STRIDE % RECORDS visits every record once, the
 * tasks mixed as a walk back through history mixes them. */
#define STRIDE 7919L

static void names(long i, char *task, size_t tasksz, char *name, size_t namesz)
{
	snprintf(task, tasksz, "T-2026-%06ld", i / PER_TASK);
	snprintf(name, namesz, "%06ld.msg.m-%ld.json", i % PER_TASK + 1, i);
}

/* What the process holds on its heap now, in bytes. */
static size_t heap_bytes(void)
{
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
}

int main(void)
{
	amp_record_times *t = amp_record_times_new();
	char task[32], name[64];
	size_t before = heap_bytes(), peak = 0, now;
	long i, k, wrong = 0;
	int all = 1;

	ok(t != NULL, "an empty map");
	for (k = 0; k < RECORDS && all; k++) {
		i = k * STRIDE % RECORDS;
		names(i, task, sizeof(task), name, sizeof(name));
		all &= amp_record_times_put(t, task, name, 1000000 + i) == 0;
		/* the same record seen again, later and earlier in history */
		if (i % 7 == 0)
			all &= amp_record_times_put(t, task, name, 1000000 + i + 9) == 0;
		if (i % 11 == 0)
			all &= amp_record_times_put(t, task, name, i) == 0;
		if (k % 4096 == 0 && (now = heap_bytes()) > peak)
			peak = now;
	}
	ok(all, "1,000,000 records put, some of them three times");
	/* task by task, as amp watch asks */
	for (i = 0; i < RECORDS; i++) {
		names(i, task, sizeof(task), name, sizeof(name));
		if (amp_record_times_get(t, task, name) != (i % 11 == 0 ? i : 1000000 + i))
			wrong++;
		if (i % 4096 == 0 && (now = heap_bytes()) > peak)
			peak = now;
	}
	ok(wrong == 0, "each record has its least time, asked task by task");
	/* and in any order */
	for (k = 0; k < 20000; k++) {
		i = (k * 104729L + 13) % RECORDS;
		names(i, task, sizeof(task), name, sizeof(name));
		if (amp_record_times_get(t, task, name) != (i % 11 == 0 ? i : 1000000 + i))
			wrong++;
	}
	ok(wrong == 0, "each record has its least time, asked across the tasks");
	ok(amp_record_times_get(t, "T-2026-000001", "000101.msg.m-1.json") == -1 &&
	   amp_record_times_get(t, "T-2026-999999", "000001.msg.m-1.json") == -1 &&
	   amp_record_times_get(t, "T-2026-000001", "") == -1,
	   "a record never put has no time");
	/* a record put after the lookups began: still the least */
	amp_record_times_put(t, "T-2026-000003", "000001.msg.m-300.json", 5);
	amp_record_times_put(t, "T-2026-000004", "000001.msg.m-400.json", 2000000);
	ok(amp_record_times_get(t, "T-2026-000003", "000001.msg.m-300.json") == 5 &&
	   amp_record_times_get(t, "T-2026-000004", "000001.msg.m-400.json") == 1000400 &&
	   amp_record_times_get(t, "T-2026-000001", "000001.msg.m-100.json") == 1000100,
	   "a put after the lookups: the least time of the record still wins");
	printf("# heap: %zu KiB at most above the start, for %ld records\n",
	       (peak - before) / 1024, RECORDS);
	ok(peak - before < (size_t)16 << 20, "the map holds less than 16 MiB of 1,000,000 records");
	amp_record_times_free(t);
	return tap_done();
}
