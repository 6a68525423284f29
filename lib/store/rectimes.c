/*
 * rectimes.c - the map of record times (store.h amp_record_times), in
 * bounded memory.
 *
 * A walk of the whole history (a first amp watch, watch --full) maps every
 * record of the SSOT: 2,000,000 records at 1M messages, whose table of
 * 24-byte slots took 96 MB (144 MB while it doubled), and a first watch
 * keeps two such maps (arrivals, and those a note vouches for).  So the
 * table holds at most TABLE_SLOTS slots: when it is full its entries are
 * sorted and written to a temporary file as a run (as recindex.c builds
 * its runs), and the table starts empty.  At the first lookup after a
 * run was written the runs are merged into one, streamed, the least time
 * of a record kept; the merged run is sorted by the task first, so that
 * the lookups of one task (amp watch reads a task's records together)
 * read one stretch of the file, found through a sparse index of every
 * SPARSE_EVERY-th entry, and kept until a lookup asks for another task.
 */
#include "store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <nettle/sha1.h>

/* At most this many slots in memory (32 bytes each: 2 MiB). */
#define TABLE_SLOTS ((size_t)1 << 16)
/* One entry of the merged run in this many is kept in memory. */
#define SPARSE_EVERY 256

/* A record's key: tk, the first 64 bits of the SHA-1 of its task (what the
 * runs are sorted by first), and key, the first 128 bits of the SHA-1 of
 * "<task>\0<name>" (key[0] never 0).  The names themselves are not kept:
 * at 200,000 records they were 14.7 MB of the map's 27 MB.  Two records
 * share a key only when their names collide in 128 bits of SHA-1, which
 * names chosen by a hostile agent cannot be made to do (the same trust git
 * puts in SHA-1 for the records' own object names). */
struct times_slot {
	uint64_t tk;
	uint64_t key[2]; /* key[0] 0: an empty slot */
	int64_t ms;
};

struct amp_record_times {
	struct times_slot *slot;
	size_t nslots, used; /* nslots: a power of two, at most 7/8 used */
	/* The runs, one after the other in a temporary file (none: NULL) */
	FILE *file;
	struct { long off; size_t count; } *runs;
	size_t nruns;
	int merged;           /* runs[0] is the merge of all, sparse is its index */
	uint64_t *sparse;     /* tk of entries 0, SPARSE_EVERY, ... of runs[0] */
	size_t nsparse;
	/* the entries of the last task looked up on disk */
	int have_task;
	uint64_t task_tk;
	struct times_slot *task;
	size_t ntask, task_alloc;
};

static void times_key(const char *task, const char *name, struct times_slot *k)
{
	unsigned char digest[20];
	struct sha1_ctx c;

	sha1_init(&c);
	sha1_update(&c, strlen(task), (const uint8_t *)task);
	sha1_digest(&c, SHA1_DIGEST_SIZE, digest);
	memcpy(&k->tk, digest, 8);
	sha1_init(&c);
	sha1_update(&c, strlen(task) + 1, (const uint8_t *)task);
	sha1_update(&c, strlen(name), (const uint8_t *)name);
	sha1_digest(&c, SHA1_DIGEST_SIZE, digest);
	memcpy(k->key, digest, 16);
	if (!k->key[0])
		k->key[0] = 1;
}

/* The order of the runs: by task, then by key. */
static int cmp_slot(const void *pa, const void *pb)
{
	const struct times_slot *a = pa, *b = pb;

	if (a->tk != b->tk)
		return a->tk < b->tk ? -1 : 1;
	if (a->key[0] != b->key[0])
		return a->key[0] < b->key[0] ? -1 : 1;
	return a->key[1] < b->key[1] ? -1 : a->key[1] > b->key[1];
}

static int same_key(const struct times_slot *a, const struct times_slot *b)
{
	return a->key[0] == b->key[0] && a->key[1] == b->key[1];
}

/* The slot of k's key, or the empty slot where it would go. */
static struct times_slot *times_slot(const struct times_slot *slot, size_t nslots,
				     const struct times_slot *k)
{
	size_t i;

	for (i = (size_t)k->key[0] & (nslots - 1); slot[i].key[0]; i = (i + 1) & (nslots - 1))
		if (same_key(&slot[i], k))
			break;
	return (struct times_slot *)&slot[i];
}

amp_record_times *amp_record_times_new(void)
{
	amp_record_times *t = calloc(1, sizeof(*t));

	if (t && !(t->slot = calloc(t->nslots = 1024, sizeof(*t->slot)))) {
		free(t);
		t = NULL;
	}
	return t;
}

void amp_record_times_free(amp_record_times *t)
{
	if (!t)
		return;
	if (t->file)
		fclose(t->file);
	free(t->runs);
	free(t->sparse);
	free(t->task);
	free(t->slot);
	free(t);
}

/* ---- the runs -------------------------------------------------------------- */

/* Writes the table's entries, sorted, as a new run and empties the table;
 * -1 when the file cannot be written or memory runs out, the table then
 * as it was (the caller grows it instead: nothing is lost).  The run is
 * sorted in a copy, not in the table: a table compacted in place and then
 * not written could only be put back with memory the failure may lack. */
static int spill(amp_record_times *t)
{
	struct times_slot *run = NULL;
	size_t i, n = 0;
	long off;
	void *grown;
	int status = -1;

	if ((!t->file && !(t->file = tmpfile())) || fseek(t->file, 0, SEEK_END) < 0 ||
	    (off = ftell(t->file)) < 0 || !(run = malloc(t->used * sizeof(*run) + 1)) ||
	    !(grown = realloc(t->runs, (t->nruns + 1) * sizeof(*t->runs))))
		goto cleanup;
	t->runs = grown;
	for (i = 0; i < t->nslots; i++)
		if (t->slot[i].key[0])
			run[n++] = t->slot[i];
	qsort(run, n, sizeof(*run), cmp_slot);
	if (fwrite(run, sizeof(*run), n, t->file) != n || fflush(t->file))
		goto cleanup;
	t->runs[t->nruns].off = off;
	t->runs[t->nruns++].count = n;
	memset(t->slot, 0, t->nslots * sizeof(*t->slot));
	t->used = 0;
	t->merged = 0;
	t->have_task = 0;
	status = 0;
cleanup:
	free(run);
	return status;
}

/* A run being read by merge(): a buffer of its entries. */
struct cursor {
	long off;          /* of the next entry to read into buf */
	size_t left;       /* entries not read into buf yet */
	struct times_slot buf[SPARSE_EVERY];
	size_t n, at;
};

/* The cursor's current entry, or NULL past its end. */
static struct times_slot *cursor_peek(FILE *f, struct cursor *c)
{
	if (c->at == c->n) {
		size_t want = c->left < SPARSE_EVERY ? c->left : SPARSE_EVERY;

		if (!want || fseek(f, c->off, SEEK_SET) < 0 ||
		    fread(c->buf, sizeof(*c->buf), want, f) != want)
			return NULL;
		c->off += (long)(want * sizeof(*c->buf));
		c->left -= want;
		c->n = want;
		c->at = 0;
	}
	return &c->buf[c->at];
}

/*
 * Merges the runs into one, written after them, with its sparse index:
 * each key once, with its least time.  0, or -1 when the file cannot be
 * read or written, or memory runs out (the runs are then left as they
 * were, and the lookups miss them: records count from their timestamps,
 * as when a walk could not read a commit).
 */
static int merge(amp_record_times *t)
{
	struct cursor *c = calloc(t->nruns, sizeof(*c));
	struct times_slot out[SPARSE_EVERY], *best, *e;
	size_t i, nout = 0, total = 0, nsparse = 0;
	uint64_t *sparse = NULL;
	long off, wrote;
	int status = -1;

	if (!c || fseek(t->file, 0, SEEK_END) < 0 || (off = ftell(t->file)) < 0)
		goto cleanup;
	for (i = 0; i < t->nruns; i++) {
		c[i].off = t->runs[i].off;
		c[i].left = t->runs[i].count;
		total += t->runs[i].count;
	}
	if (!(sparse = malloc((total / SPARSE_EVERY + 1) * sizeof(*sparse))))
		goto cleanup;
	wrote = off;
	for (;;) {
		best = NULL;
		for (i = 0; i < t->nruns; i++)
			if ((e = cursor_peek(t->file, &c[i])) && (!best || cmp_slot(e, best) < 0))
				best = e;
		if (!best)
			break;
		out[nout] = *best;
		/* the same record in the other runs: the least time */
		for (i = 0; i < t->nruns; i++)
			while ((e = cursor_peek(t->file, &c[i])) && same_key(e, &out[nout])) {
				if (e->ms < out[nout].ms)
					out[nout].ms = e->ms;
				c[i].at++;
			}
		if (nsparse * SPARSE_EVERY == (size_t)(wrote - off) / sizeof(*out) + nout)
			sparse[nsparse++] = out[nout].tk;
		if (++nout == SPARSE_EVERY) {
			if (fseek(t->file, wrote, SEEK_SET) < 0 ||
			    fwrite(out, sizeof(*out), nout, t->file) != nout)
				goto cleanup;
			wrote += (long)(nout * sizeof(*out));
			nout = 0;
		}
	}
	/* a run that could not be read to its end is no merge */
	for (i = 0; i < t->nruns; i++)
		if (c[i].left || c[i].at != c[i].n)
			goto cleanup;
	if (nout && (fseek(t->file, wrote, SEEK_SET) < 0 ||
		     fwrite(out, sizeof(*out), nout, t->file) != nout))
		goto cleanup;
	wrote += (long)(nout * sizeof(*out));
	if (fflush(t->file))
		goto cleanup;
	t->runs[0].off = off;
	t->runs[0].count = (size_t)(wrote - off) / sizeof(*out);
	t->nruns = 1;
	free(t->sparse);
	t->sparse = sparse;
	t->nsparse = nsparse;
	sparse = NULL;
	t->merged = 1;
	status = 0;
cleanup:
	free(sparse);
	free(c);
	return status;
}

/* The entries of the merged run whose task is k's, into t->task; -1 when
 * the file cannot be read. */
static int load_task(amp_record_times *t, const struct times_slot *k)
{
	size_t lo = 0, hi = t->nsparse, at;
	struct times_slot buf[SPARSE_EVERY];

	t->have_task = 0;
	t->ntask = 0;
	/* the last block whose first task is below k's: k's may start in it */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->sparse[mid] < k->tk)
			lo = mid + 1;
		else
			hi = mid;
	}
	at = lo ? (lo - 1) * SPARSE_EVERY : 0;
	while (at < t->runs[0].count) {
		size_t want = t->runs[0].count - at < SPARSE_EVERY ? t->runs[0].count - at :
								      SPARSE_EVERY, i;

		if (fseek(t->file, t->runs[0].off + (long)(at * sizeof(*buf)), SEEK_SET) < 0 ||
		    fread(buf, sizeof(*buf), want, t->file) != want)
			return -1;
		for (i = 0; i < want && buf[i].tk <= k->tk; i++) {
			if (buf[i].tk != k->tk)
				continue;
			if (t->ntask == t->task_alloc) {
				size_t n = t->task_alloc ? t->task_alloc * 2 : 64;
				struct times_slot *grown = realloc(t->task, n * sizeof(*grown));

				if (!grown)
					return -1;
				t->task = grown;
				t->task_alloc = n;
			}
			t->task[t->ntask++] = buf[i];
		}
		if (i < want)
			break;
		at += want;
	}
	t->have_task = 1;
	t->task_tk = k->tk;
	return 0;
}

/* k's time in the runs, or -1. */
static int64_t on_disk(amp_record_times *t, const struct times_slot *k)
{
	size_t i;

	if (!t->nruns)
		return -1;
	if (!t->merged && merge(t) < 0) {
		t->nruns = 0; /* not tried at every lookup */
		return -1;
	}
	if ((!t->have_task || t->task_tk != k->tk) && load_task(t, k) < 0)
		return -1;
	for (i = 0; i < t->ntask; i++)
		if (same_key(&t->task[i], k))
			return t->task[i].ms;
	return -1;
}

/* ---- the map (store.h) ------------------------------------------------------ */

int64_t amp_record_times_get(const amp_record_times *ct, const char *task, const char *name)
{
	/* the map's value is not changed: only where its runs are read */
	amp_record_times *t = (amp_record_times *)ct;
	struct times_slot k, *s;
	int64_t mem, disk;

	if (!t)
		return -1;
	times_key(task, name, &k);
	s = times_slot(t->slot, t->nslots, &k);
	mem = s->key[0] ? s->ms : -1;
	disk = on_disk(t, &k);
	return mem < 0 ? disk : disk < 0 || mem < disk ? mem : disk;
}

int amp_record_times_put(amp_record_times *t, const char *task, const char *name, int64_t ms)
{
	struct times_slot k, *s;
	size_t i;

	times_key(task, name, &k);
	s = times_slot(t->slot, t->nslots, &k);
	if (s->key[0]) {
		if (ms < s->ms)
			s->ms = ms;
		return 0;
	}
	/* 7/8: the keys are SHA-1, spread evenly, so probes stay short. */
	if ((t->used + 1) * 8 > t->nslots * 7) {
		struct times_slot *bigger;

		if (t->nslots >= TABLE_SLOTS && spill(t) == 0)
			goto put;
		if (!(bigger = calloc(t->nslots * 2, sizeof(*bigger))))
			return -1;
		for (i = 0; i < t->nslots; i++)
			if (t->slot[i].key[0])
				*times_slot(bigger, t->nslots * 2, &t->slot[i]) = t->slot[i];
		free(t->slot);
		t->slot = bigger;
		t->nslots *= 2;
	}
put:
	s = times_slot(t->slot, t->nslots, &k);
	*s = k;
	s->ms = ms;
	t->used++;
	return 0;
}
