/*
 * failalloc.c - an LD_PRELOAD library for test/39-oom.bats: makes malloc,
 * calloc and realloc of AMP_FAIL_MIN to AMP_FAIL_MAX bytes fail (NULL, ENOMEM)
 * for the AMP_FAIL_FROM-th such call (counted from 0) and the
 * AMP_FAIL_SPAN - 1 after it (default 1), as a process near its memory
 * limit sees them: a large allocation refused while small ones still
 * succeed.  With AMP_FAIL_COUNT set, prints on stderr at exit how many
 * calls of that size it saw ("failalloc: N").
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static long seen, from = -1, span = 1;
static size_t min_size = 1, max_size = (size_t)-1;
static int ready;

/* dlsym may allocate (calloc) before the real functions are known: those
 * few bytes come from here and are never freed. */
static char early[4096];
static size_t early_used;

static void *early_alloc(size_t n)
{
	void *p = early + early_used;

	n = (n + 15) & ~(size_t)15;
	if (n > sizeof(early) - early_used)
		return NULL;
	early_used += n;
	return p;
}

static void setup(void)
{
	const char *s;

	ready = -1;
	real_malloc = dlsym(RTLD_NEXT, "malloc");
	real_calloc = dlsym(RTLD_NEXT, "calloc");
	real_realloc = dlsym(RTLD_NEXT, "realloc");
	if ((s = getenv("AMP_FAIL_FROM")))
		from = atol(s);
	if ((s = getenv("AMP_FAIL_SPAN")))
		span = atol(s);
	if ((s = getenv("AMP_FAIL_MIN")))
		min_size = (size_t)atol(s);
	if ((s = getenv("AMP_FAIL_MAX")))
		max_size = (size_t)atol(s);
	ready = 1;
}

static int refuse(size_t n)
{
	long k;

	if (n < min_size || n > max_size)
		return 0;
	k = seen++;
	if (from < 0 || k < from || k >= from + span)
		return 0;
	errno = ENOMEM;
	return 1;
}

void *malloc(size_t n)
{
	if (ready <= 0) {
		if (ready < 0)
			return early_alloc(n);
		setup();
	}
	return refuse(n) ? NULL : real_malloc(n);
}

void *calloc(size_t count, size_t size)
{
	if (ready <= 0) {
		if (ready < 0)
			return early_alloc(count * size); /* zeroed: static */
		setup();
	}
	return refuse(count * size) ? NULL : real_calloc(count, size);
}

void *realloc(void *p, size_t n)
{
	if (ready <= 0)
		setup();
	return n && refuse(n) ? NULL : real_realloc(p, n);
}

void free(void *p)
{
	static void (*real_free)(void *);

	if ((char *)p >= early && (char *)p < early + sizeof(early))
		return;
	if (!real_free)
		real_free = dlsym(RTLD_NEXT, "free");
	real_free(p);
}

__attribute__((destructor)) static void report(void)
{
	char line[64];
	int n;

	if (!getenv("AMP_FAIL_COUNT"))
		return;
	n = snprintf(line, sizeof(line), "failalloc: %ld\n", seen);
	if (n > 0 && write(2, line, (size_t)n) < 0)
		return;
}
