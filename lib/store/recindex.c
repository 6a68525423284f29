/*
 * recindex.c - which commit brought each record (recindex.h).
 */
#include <dirent.h>
#include "base/gitobj.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/tempfile.h"
#include "recindex.h"

#define DIRNAME "recindex"
#define MAGIC "amp-recindex 1\n"
#define KEY_BYTES 16
/* key, commit, time (big-endian), flags */
#define ENTRY_BYTES (KEY_BYTES + GIT_OID_RAWSZ + 8 + 4)
#define FLAG_GONE 1u
/* More runs than this in a head is not one amp wrote (geometric merging
 * keeps about log2 of the entries over the batch). */
#define MAX_RUNS 64
#define RUN_NAME_MAX 64

struct ent {
	unsigned char key[KEY_BYTES];
	git_oid commit;
	int64_t ms;
	uint32_t flags;
	uint32_t order; /* within a batch: the lower wins */
};

struct run {
	char name[RUN_NAME_MAX];
	uint64_t count;
};

struct head {
	int ok;
	git_oid tip;
	int partial;    /* 1: the commits from bottom down are not taken yet */
	git_oid bottom; /* the next commit to take, when partial */
	size_t n;
	struct run runs[MAX_RUNS]; /* newest first */
};

/* An update in progress: the directory, the runs, the entries not yet in
 * a run. */
struct build {
	amp_store *st;
	char dir[4096];
	struct head old; /* the index as found */
	struct head h;   /* the runs this update wrote, newest first; the
			  * old ones joined at the end unless rebuilt */
	int last;        /* 1: h's oldest run is the index's oldest */
	const unsigned char *target; /* extend: the key looked for */
	int found;       /* extend: the target was taken */
	struct ent *v;
	size_t n;
	uint32_t order;
	unsigned long walked;
	unsigned serial;
};

static int path_of(char *buf, size_t size, const char *dir, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* The key of a record: a SHA-1 of its task, kind and id, cut short (a
 * clash is as likely as one of git's abbreviated ids, and an entry is
 * checked against its commit anyway). */
static int make_key(const char *task, amp_entry_kind kind, const char *id,
		    unsigned char key[KEY_BYTES])
{
	char buf[1024];
	git_oid h;
	int n = snprintf(buf, sizeof(buf), "%d%c%s%c%s", (int)kind, 0, task, 0, id);

	if (n < 0 || (size_t)n >= sizeof(buf) || git_odb_hash(&h, buf, (size_t)n, GIT_OBJECT_BLOB) < 0)
		return -1;
	memcpy(key, h.id, KEY_BYTES);
	return 0;
}

/* ---- the head ------------------------------------------------------------ */

static int run_name_ok(const char *s)
{
	size_t i;

	if (strncmp(s, "run-", 4) || strlen(s) >= RUN_NAME_MAX)
		return 0;
	for (i = 4; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || s[i] == '-'))
			return 0;
	return 1;
}

/* Reads dir's head into *h (h->ok 0 when missing or not amp's). */
static void head_read(const char *dir, struct head *h)
{
	char path[4200], *buf = NULL, *line, *save = NULL;
	size_t len;

	memset(h, 0, sizeof(*h));
	if (path_of(path, sizeof(path), dir, "head") < 0 ||
	    amp_cache_read(path, 64 + MAX_RUNS * (RUN_NAME_MAX + 32), &buf, &len) < 0)
		return;
	if (strncmp(buf, MAGIC, strlen(MAGIC)))
		goto cleanup;
	for (line = strtok_r(buf + strlen(MAGIC), "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[RUN_NAME_MAX + 1];
		unsigned long long count;

		if (!strncmp(line, "tip ", 4)) {
			if (strlen(line + 4) != GIT_OID_HEXSZ || git_oid_fromstr(&h->tip, line + 4) < 0)
				goto cleanup;
			h->ok = 1;
		} else if (!strncmp(line, "bottom ", 7)) {
			if (strlen(line + 7) != GIT_OID_HEXSZ || git_oid_fromstr(&h->bottom, line + 7) < 0)
				goto cleanup;
			h->partial = 1;
		} else if (sscanf(line, "run %64s %llu", name, &count) == 2 && run_name_ok(name) &&
			   h->n < MAX_RUNS) {
			memcpy(h->runs[h->n].name, name, strlen(name) + 1);
			h->runs[h->n++].count = count;
		} else {
			h->ok = 0;
			goto cleanup;
		}
	}
cleanup:
	if (!h->ok)
		memset(h, 0, sizeof(*h));
	git_error_clear();
	free(buf);
}

static int head_write(const char *dir, const struct head *h)
{
	amp_tempfile t;
	char path[4200], hex[GIT_OID_HEXSZ + 1];
	FILE *fp;
	size_t i;

	if (path_of(path, sizeof(path), dir, "head") < 0 || amp_tempfile_open(&t, path, 0) < 0)
		return -1;
	if (!(fp = amp_tempfile_stream(&t))) {
		amp_tempfile_rollback(&t);
		return -1;
	}
	fprintf(fp, "%stip %s\n", MAGIC, git_oid_tostr(hex, sizeof(hex), &h->tip));
	if (h->partial)
		fprintf(fp, "bottom %s\n", git_oid_tostr(hex, sizeof(hex), &h->bottom));
	for (i = 0; i < h->n; i++)
		fprintf(fp, "run %s %llu\n", h->runs[i].name, (unsigned long long)h->runs[i].count);
	return amp_tempfile_commit(&t) < 0 ? -1 : 0;
}

/* A temporary file (amp_tempfile) an hour old: a killed update's. */
static int stale_tmp(const char *path, const char *name)
{
	size_t n = strlen(name);
	struct stat sb;

	return n > 4 && !strcmp(name + n - 4, ".tmp") && lstat(path, &sb) == 0 &&
	       sb.st_mtime + 3600 <= time(NULL);
}

/* Deletes the run files the head does not name (merged or dropped), and
 * what a killed update left. */
static void sweep_runs(const char *dir, const struct head *h)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[4200];
	size_t i;

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (path_of(path, sizeof(path), dir, de->d_name) == 0 && stale_tmp(path, de->d_name)) {
			unlink(path);
			continue;
		}
		if (!run_name_ok(de->d_name))
			continue;
		for (i = 0; i < h->n && strcmp(h->runs[i].name, de->d_name); i++)
			;
		if (i == h->n && path_of(path, sizeof(path), dir, de->d_name) == 0)
			unlink(path);
	}
	closedir(d);
}

/* ---- runs ------------------------------------------------------------------ */

static void encode(unsigned char *p, const struct ent *e)
{
	uint64_t ms = (uint64_t)e->ms;
	int i;

	memcpy(p, e->key, KEY_BYTES);
	memcpy(p + KEY_BYTES, e->commit.id, GIT_OID_RAWSZ);
	p += KEY_BYTES + GIT_OID_RAWSZ;
	for (i = 0; i < 8; i++)
		p[i] = (unsigned char)(ms >> (56 - 8 * i));
	for (i = 0; i < 4; i++)
		p[8 + i] = (unsigned char)(e->flags >> (24 - 8 * i));
}

static void decode(const unsigned char *p, struct ent *e)
{
	uint64_t ms = 0;
	int i;

	memcpy(e->key, p, KEY_BYTES);
	memcpy(e->commit.id, p + KEY_BYTES, GIT_OID_RAWSZ);
	p += KEY_BYTES + GIT_OID_RAWSZ;
	for (i = 0; i < 8; i++)
		ms = ms << 8 | p[i];
	e->ms = (int64_t)ms;
	e->flags = (uint32_t)p[8] << 24 | (uint32_t)p[9] << 16 | (uint32_t)p[10] << 8 | p[11];
}

/* A new run's name, unique to this process and update. */
static void new_run_name(struct build *b, char name[RUN_NAME_MAX])
{
	git_oid h;
	char seed[64], hex[GIT_OID_HEXSZ + 1];
	int n = snprintf(seed, sizeof(seed), "%ld %u %ld", (long)getpid(), b->serial++, (long)time(NULL));

	git_odb_hash(&h, seed, (size_t)n, GIT_OBJECT_BLOB);
	git_oid_tostr(hex, 17, &h);
	snprintf(name, RUN_NAME_MAX, "run-%s-%u", hex, b->serial);
}

/* Opens run r of dir for reading, checking its size: the FILE, or NULL. */
static FILE *run_open(const char *dir, const struct run *r)
{
	char path[4200];
	struct stat sb;
	FILE *fp;
	int fd;

	if (path_of(path, sizeof(path), dir, r->name) < 0 ||
	    (fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)) < 0)
		return NULL;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    (uint64_t)sb.st_size != r->count * ENTRY_BYTES || !(fp = fdopen(fd, "rb"))) {
		close(fd);
		return NULL;
	}
	return fp;
}

/* The entry of `key` in run r: 1 with *e, 0 when none, -1 when the run
 * cannot be read.  A binary search by pread: a lookup reads about
 * log2(count) entries, never the run. */
static int run_find(const char *dir, const struct run *r, const unsigned char *key, struct ent *e)
{
	FILE *fp = run_open(dir, r);
	unsigned char buf[ENTRY_BYTES];
	uint64_t lo = 0, hi;
	int rc = 0;

	if (!fp)
		return -1;
	hi = r->count;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		int c;

		if (pread(fileno(fp), buf, ENTRY_BYTES, (off_t)(mid * ENTRY_BYTES)) != ENTRY_BYTES) {
			rc = -1;
			break;
		}
		if (!(c = memcmp(key, buf, KEY_BYTES))) {
			decode(buf, e);
			rc = 1;
			break;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	fclose(fp);
	return rc;
}

/* Writes entries (sorted by key, one per key) from `next` into a new run
 * of b's directory, *r named and counted.  `next` gives 1 with an entry,
 * 0 at the end, -1 on a read error.  0, or -1. */
static int run_write(struct build *b, struct run *r, int (*next)(void *, struct ent *), void *ctx)
{
	amp_tempfile t;
	char path[4200];
	unsigned char buf[ENTRY_BYTES];
	struct ent e;
	FILE *fp;
	int rc;

	new_run_name(b, r->name);
	r->count = 0;
	if (path_of(path, sizeof(path), b->dir, r->name) < 0 || amp_tempfile_open(&t, path, 0) < 0)
		return -1;
	if (!(fp = amp_tempfile_stream(&t))) {
		amp_tempfile_rollback(&t);
		return -1;
	}
	while ((rc = next(ctx, &e)) > 0) {
		encode(buf, &e);
		if (fwrite(buf, ENTRY_BYTES, 1, fp) != 1) {
			rc = -1;
			break;
		}
		r->count++;
	}
	if (rc < 0) {
		amp_tempfile_rollback(&t);
		return -1;
	}
	return amp_tempfile_commit(&t) < 0 ? -1 : 0;
}

/* Two runs merged: a (newer) wins a key both hold; gone entries dropped
 * when the result is the oldest run (nothing older for them to hide). */
struct merge {
	FILE *a, *b;
	struct ent ea, eb;
	int ha, hb; /* 1: ea/eb hold the next entry */
	int drop_gone;
	int failed;
};

static int merge_read(FILE *fp, struct ent *e, int *failed)
{
	unsigned char buf[ENTRY_BYTES];

	if (fread(buf, ENTRY_BYTES, 1, fp) == 1) {
		decode(buf, e);
		return 1;
	}
	if (ferror(fp))
		*failed = 1;
	return 0;
}

static int merge_next(void *ctx, struct ent *out)
{
	struct merge *m = ctx;

	for (;;) {
		int c;

		if (m->failed)
			return -1;
		if (!m->ha && !m->hb)
			return 0;
		c = !m->ha ? 1 : !m->hb ? -1 : memcmp(m->ea.key, m->eb.key, KEY_BYTES);
		if (c <= 0) {
			*out = m->ea;
			m->ha = merge_read(m->a, &m->ea, &m->failed);
			if (!c)
				m->hb = merge_read(m->b, &m->eb, &m->failed);
		} else {
			*out = m->eb;
			m->hb = merge_read(m->b, &m->eb, &m->failed);
		}
		if (!(m->drop_gone && (out->flags & FLAG_GONE)))
			return 1;
	}
}

/* Merges two neighbouring runs while one is at least half the size of
 * the older one after it (git repack --geometric=2's rule): about
 * log2(entries) runs, each entry copied about log2 times over the index's
 * life.  0, or -1. */
static int merge_runs(struct build *b)
{
	size_t i = 0;

	while (i + 1 < b->h.n) {
		struct merge m = { 0 };
		struct run r;
		int rc;

		if (b->h.runs[i].count * 2 < b->h.runs[i + 1].count) {
			i++;
			continue;
		}
		m.a = run_open(b->dir, &b->h.runs[i]);
		m.b = run_open(b->dir, &b->h.runs[i + 1]);
		m.drop_gone = b->last && i + 2 == b->h.n && !b->h.partial;
		if (m.a && m.b) {
			m.ha = merge_read(m.a, &m.ea, &m.failed);
			m.hb = merge_read(m.b, &m.eb, &m.failed);
		}
		rc = m.a && m.b ? run_write(b, &r, merge_next, &m) : -1;
		if (m.a)
			fclose(m.a);
		if (m.b)
			fclose(m.b);
		if (rc < 0)
			return -1;
		b->h.runs[i] = r;
		memmove(&b->h.runs[i + 1], &b->h.runs[i + 2], (b->h.n - i - 2) * sizeof(b->h.runs[0]));
		b->h.n--;
		i = i ? i - 1 : 0;
	}
	return 0;
}

static int by_key_order(const void *x, const void *y)
{
	const struct ent *a = x, *b = y;
	int c = memcmp(a->key, b->key, KEY_BYTES);

	if (c)
		return c;
	/* A record the new history holds beats its mark as gone. */
	if ((a->flags & FLAG_GONE) != (b->flags & FLAG_GONE))
		return (a->flags & FLAG_GONE) ? 1 : -1;
	return a->order < b->order ? -1 : a->order > b->order;
}

struct batch_reader {
	const struct ent *v;
	size_t n, i;
};

static int batch_next(void *ctx, struct ent *out)
{
	struct batch_reader *r = ctx;

	if (r->i >= r->n)
		return 0;
	*out = r->v[r->i++];
	/* the first of a key wins; the others are skipped */
	while (r->i < r->n && !memcmp(r->v[r->i].key, out->key, KEY_BYTES))
		r->i++;
	return 1;
}

/* The batch sorted into a new run, the newest, then merged.  0, or -1. */
static int flush(struct build *b)
{
	struct batch_reader r = { b->v, b->n, 0 };
	struct run run;

	if (!b->n)
		return 0;
	if (b->h.n == MAX_RUNS)
		return -1;
	qsort(b->v, b->n, sizeof(*b->v), by_key_order);
	if (run_write(b, &run, batch_next, &r) < 0)
		return -1;
	memmove(&b->h.runs[1], &b->h.runs[0], b->h.n * sizeof(b->h.runs[0]));
	b->h.runs[0] = run;
	b->h.n++;
	b->n = 0;
	return merge_runs(b);
}

static int add(struct build *b, const char *task, const char *name, const git_oid *commit,
	       int64_t ms, uint32_t flags)
{
	const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	amp_entry_kind kind;
	const char *id;
	size_t id_len;
	char idbuf[512];
	struct ent *e;

	if (amp_store_entry_parse(base, NULL, &kind, &id, &id_len) < 0 || id_len >= sizeof(idbuf))
		return 0; /* not a record's name */
	memcpy(idbuf, id, id_len);
	idbuf[id_len] = '\0';
	if (b->n == AMP_RECINDEX_BATCH && flush(b) < 0)
		return -1;
	e = &b->v[b->n];
	if (make_key(task, kind, idbuf, e->key) < 0)
		return 0;
	if (b->target && !memcmp(b->target, e->key, KEY_BYTES) && !flags)
		b->found = 1;
	git_oid_cpy(&e->commit, commit);
	e->ms = ms;
	e->flags = flags;
	e->order = b->order++;
	b->n++;
	return 0;
}

/* ---- walking the history --------------------------------------------------- */

/* The records commit c adds to (or changes from) its first parent, into
 * *touched ({task: {name: ms}}, the caller's); 0, or -1 when its trees
 * cannot be read. */
static int commit_records(git_repository *repo, git_commit *c, json_t *touched)
{
	git_commit *parent = NULL;
	git_tree *tree = NULL, *ptree = NULL;
	int rc = -1;

	if (amp_git_commit_tree(&tree, c) == 0 &&
	    (!git_commit_parentcount(c) ||
	     (amp_git_commit_parent(&parent, c, 0) == 0 && amp_git_commit_tree(&ptree, parent) == 0)))
		rc = amp_store_diff_tasks(repo, ptree, tree, touched, 0) < 0 ? -1 : 0;
	git_error_clear();
	git_tree_free(ptree);
	git_tree_free(tree);
	git_commit_free(parent);
	return rc;
}

/* Puts commit c's records into the batch (marked gone with FLAG_GONE).
 * 0, or -1. */
static int take_commit(struct build *b, git_commit *c, uint32_t flags)
{
	json_t *touched = json_object(), *names;
	const char *task, *name;
	json_t *v;
	int64_t ms = (int64_t)git_commit_time(c) * 1000;
	int rc = 0;

	if (!touched)
		return -1;
	b->walked++;
	/* A commit whose trees cannot be read adds nothing: lookups of its
	 * records find no entry and walk, as before. */
	if (commit_records(amp_store_repo(b->st), c, touched) == 0)
		json_object_foreach(touched, task, names)
			json_object_foreach(names, name, v)
				if (rc == 0)
					rc = add(b, task, name, git_commit_id(c), ms, flags);
	json_decref(touched);
	return rc;
}

/*
 * Walks the first parents from *from, each commit's records into the
 * batch, until `stop` or `stop2` (not taken; NULL: none), the root, or
 * `max` commits (0: no bound).  *from becomes where to go on; returns 2
 * when `stop` was reached, 3 when `stop2` was, 1 when the root was (every
 * commit below the start taken), 0 when `max` was, -1 when a commit cannot
 * be read or out of memory.  With b->target set, it also ends (0) after
 * the commit that brought the target.  `seen`, when not NULL, gets the
 * ids walked.
 */
static int walk(struct build *b, git_oid *from, const git_oid *stop, const git_oid *stop2,
		size_t max, uint32_t flags, git_oid *seen, size_t *nseen)
{
	amp_first_parents chain;
	git_commit *c = NULL;
	size_t k = 0;
	int rc;

	amp_first_parents_start(&chain, amp_store_repo(b->st), from);
	for (;;) {
		if (chain.done)
			return 1;
		if (stop && git_oid_equal(&chain.next, stop))
			return 2;
		if (stop2 && git_oid_equal(&chain.next, stop2))
			return 3;
		if ((max && k == max) || b->found) {
			git_oid_cpy(from, &chain.next);
			return 0;
		}
		if ((rc = amp_first_parents_next(&chain, &c)) == GIT_ITEROVER)
			return 1;
		if (rc < 0)
			return -1;
		if (seen)
			git_oid_cpy(&seen[(*nseen)++], git_commit_id(c));
		rc = take_commit(b, c, flags);
		git_commit_free(c);
		if (rc < 0)
			return -1;
		k++;
	}
}

/* The new head's walk left to do: none (*rebuild: the old runs go), or
 * from `bottom` down. */
static void left(struct build *b, int partial, const git_oid *bottom)
{
	b->h.partial = partial;
	if (partial)
		git_oid_cpy(&b->h.bottom, bottom);
}

/*
 * After a rewritten history: the old side's records, from the old tip down
 * to `base` where the two histories meet, marked gone, then the new side
 * walked from *from down to `base` (unless phase one passed it: `seen`).
 * When the old index's own walk had stopped above base (partial), its
 * runs hold only the old side: they go (*rebuild) and what is below base
 * is left to extend.  0, or -1.
 */
static int walk_rewritten(struct build *b, git_oid *from, const git_oid *base,
			  const git_oid *seen, size_t nseen, int *rebuild)
{
	git_oid old;
	size_t i;
	int rc;

	git_oid_cpy(&old, &b->old.tip);
	rc = walk(b, &old, base, b->old.partial ? &b->old.bottom : NULL, 0, FLAG_GONE, NULL, NULL);
	if (rc < 0)
		return -1;
	*rebuild = rc == 3;
	if (rc == 3)
		left(b, 1, base);
	for (i = 0; i < nseen; i++)
		if (git_oid_equal(&seen[i], base))
			return 0; /* walked past it already: what is below is in both */
	if ((rc = walk(b, from, base, NULL, 0, 0, NULL, NULL)) < 0)
		return -1;
	if (rc == 1) {
		*rebuild = 1;
		left(b, 0, NULL);
	}
	return 0;
}

/*
 * The batch of what moved from the old head's tip to `tip`: the commits
 * from tip down to the old one; when the old tip is not among the first
 * AMP_RECINDEX_FF_WALK of them, where the two histories meet (git's merge
 * base), walk_rewritten.  No index yet: an empty one, every commit left
 * to extend (a lookup walks down only as far as the record it looks for).
 * When the histories do not meet, what was walked, the rest left to
 * extend.  Sets the new head's partial/bottom, and *rebuild when the old
 * runs go.  0, or -1.
 */
static int walk_moves(struct build *b, const git_oid *tip, int *rebuild)
{
	git_oid from, base, seen[AMP_RECINDEX_FF_WALK];
	size_t nseen = 0;
	int rc;

	git_oid_cpy(&from, tip);
	*rebuild = 1;
	if (!b->old.ok) {
		left(b, 1, tip);
		return 0;
	}
	left(b, b->old.partial, &b->old.bottom);
	rc = walk(b, &from, &b->old.tip, NULL, AMP_RECINDEX_FF_WALK, 0, seen, &nseen);
	if (rc < 0)
		return -1;
	if (rc == 2) {
		*rebuild = 0; /* the old tip below the new one */
		return 0;
	}
	if (rc == 1) {
		left(b, 0, NULL); /* the whole new history, without the old tip */
		return 0;
	}
	if (git_merge_base(&base, amp_store_repo(b->st), tip, &b->old.tip) < 0) {
		git_error_clear();
		left(b, 1, &from);
		return 0;
	}
	if (!git_oid_equal(&base, &b->old.tip))
		return walk_rewritten(b, &from, &base, seen, nseen, rebuild);
	if ((rc = walk(b, &from, &base, NULL, 0, 0, NULL, NULL)) < 0)
		return -1;
	*rebuild = rc == 1;
	if (rc == 1)
		left(b, 0, NULL);
	return 0;
}

/* The last of the batch into a run, the old runs joined (unless rebuilt:
 * they go), merged, and the head written.  The old runs are newer than
 * this update's unless `below` (an extension, which walked older
 * commits).  0, or -1 with errno set. */
static int finish(struct build *b, int rebuild, int below)
{
	size_t n = b->h.n;

	if (flush(b) < 0)
		return -1;
	n = b->h.n;
	if (!rebuild) {
		if (n + b->old.n > MAX_RUNS) {
			errno = EMFILE;
			return -1;
		}
		if (below) {
			memmove(&b->h.runs[b->old.n], &b->h.runs[0], n * sizeof(b->h.runs[0]));
			memcpy(&b->h.runs[0], b->old.runs, b->old.n * sizeof(b->old.runs[0]));
		} else {
			memcpy(&b->h.runs[n], b->old.runs, b->old.n * sizeof(b->old.runs[0]));
		}
		b->h.n += b->old.n;
	}
	b->last = 1;
	return merge_runs(b) < 0 || head_write(b->dir, &b->h) < 0 ? -1 : 0;
}

/* Takes the index's lock (without waiting: another process updating it is
 * left to it): the descriptor, or -1. */
static int lock_dir(const char *dir)
{
	char path[4200];
	int fd;

	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return -1;
	if (path_of(path, sizeof(path), dir, "lock") < 0 ||
	    (fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666)) < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A build of st's index under its lock, its head read: NULL when out of
 * memory or the lock is taken (*fd then -1). */
static struct build *build_start(amp_store *st, int *fd)
{
	struct build *b = calloc(1, sizeof(*b));

	*fd = -1;
	if (!b || !(b->v = malloc(AMP_RECINDEX_BATCH * sizeof(*b->v))) ||
	    path_of(b->dir, sizeof(b->dir), amp_store_state_dir(st), DIRNAME) < 0 ||
	    (*fd = lock_dir(b->dir)) < 0) {
		if (b)
			free(b->v);
		free(b);
		return NULL;
	}
	b->st = st;
	head_read(b->dir, &b->old);
	return b;
}

static void build_end(struct build *b, int fd)
{
	if (fd >= 0)
		close(fd);
	if (b)
		free(b->v);
	free(b);
}

int amp_recindex_update(amp_store *st, unsigned long *walked, amp_error *err)
{
	int fd, rebuild = 0, status = AMP_OK;
	struct build *b = build_start(st, &fd);
	git_oid tip;

	if (walked)
		*walked = 0;
	if (!b)
		return amp_error_set(err, AMP_EIO, "", "cannot lock the record index in %s",
				     amp_store_state_dir(st));
	if (git_reference_name_to_id(&tip, amp_store_repo(st), amp_store_messages_ref(st)) < 0) {
		git_error_clear();
		goto cleanup; /* no ref: nothing to index */
	}
	if (b->old.ok && git_oid_equal(&b->old.tip, &tip))
		goto cleanup;
	if (walk_moves(b, &tip, &rebuild) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot index %s", amp_store_messages_ref(st));
		goto cleanup;
	}
	b->h.ok = 1;
	git_oid_cpy(&b->h.tip, &tip);
	if (finish(b, rebuild, 0) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "cannot write the record index in %s: %s",
				       b->dir, strerror(errno));
		goto cleanup;
	}
	sweep_runs(b->dir, &b->h);
cleanup:
	if (walked)
		*walked = b->walked;
	build_end(b, fd);
	return status;
}

/*
 * Takes more of the history into a partial index: from its bottom down
 * until the commit that brought `key` (or the root: then the index is
 * whole), so that a question about a recent record on a fresh clone reads
 * a few commits, and one about the oldest reads the history once.  1 when
 * the index grew, 0 when there was nothing to take or it is busy.
 */
static int extend(amp_store *st, const unsigned char *key)
{
	int fd, rc, grew = 0;
	struct build *b = build_start(st, &fd);
	git_oid from;

	if (!b || !b->old.ok || !b->old.partial)
		goto cleanup;
	b->target = key;
	b->h = b->old;
	b->h.n = 0;
	git_oid_cpy(&from, &b->old.bottom);
	if ((rc = walk(b, &from, NULL, NULL, 0, 0, NULL, NULL)) < 0)
		goto cleanup;
	left(b, rc != 1, &from);
	grew = finish(b, 0, 1) == 0;
	if (grew)
		sweep_runs(b->dir, &b->h);
cleanup:
	build_end(b, fd);
	return grew;
}

/* 1 when commit `id` adds (or changes) record id of kind in task to its
 * first parent: the entry checks out. */
static int check(amp_store *st, const git_oid *commit, const char *task, amp_entry_kind kind,
		 const char *id)
{
	git_commit *c = NULL;
	json_t *touched = json_object(), *v;
	const char *name;
	int ok = 0;

	if (touched && amp_git_commit_lookup(&c, amp_store_repo(st), commit) == 0 &&
	    commit_records(amp_store_repo(st), c, touched) == 0)
		json_object_foreach(json_object_get(touched, task), name, v) {
			const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name, *at;
			amp_entry_kind k;
			size_t n;

			if (amp_store_entry_parse(base, NULL, &k, &at, &n) == 0 && k == kind &&
			    n == strlen(id) && !memcmp(at, id, n))
				ok = 1;
		}
	git_error_clear();
	git_commit_free(c);
	json_decref(touched);
	return ok;
}

/* A run that does not read back: when it is still there, the index is
 * damaged, and its head goes (the next update starts it again). */
static void drop_damaged(const char *dir, const struct run *r)
{
	char path[4200];
	struct stat sb;

	if (path_of(path, sizeof(path), dir, r->name) == 0 && lstat(path, &sb) == 0 &&
	    path_of(path, sizeof(path), dir, "head") == 0)
		unlink(path);
}

/* The entry of key in dir's index: 1 with *e, 0 when none (*partial: the
 * index's walk is not done), -1 when it cannot be read. */
static int lookup(const char *dir, const unsigned char *key, struct ent *e, int *partial)
{
	struct head h;
	size_t i;
	int rc;

	head_read(dir, &h);
	*partial = h.ok && h.partial;
	for (i = 0; h.ok && i < h.n; i++) {
		if ((rc = run_find(dir, &h.runs[i], key, e)) < 0) {
			/* damaged or gone (a concurrent update's merge): the
			 * next update builds it again, when it is still so */
			drop_damaged(dir, &h.runs[i]);
			return -1;
		}
		if (rc)
			return 1;
	}
	return 0;
}

int amp_recindex_find(amp_store *st, const char *task, amp_entry_kind kind, const char *id,
		      git_oid *commit, int64_t *ms)
{
	unsigned char key[KEY_BYTES];
	char dir[4096];
	struct ent e;
	amp_error err;
	int rc, partial;

	if (make_key(task, kind, id, key) < 0 ||
	    path_of(dir, sizeof(dir), amp_store_state_dir(st), DIRNAME) < 0)
		return 0;
	/* Best effort: a busy or failed update leaves what the head covers,
	 * and an entry is checked whatever it says. */
	amp_recindex_update(st, NULL, &err);
	while ((rc = lookup(dir, key, &e, &partial)) == 0 && partial && extend(st, key))
		;
	if (rc <= 0 || (e.flags & FLAG_GONE) || !check(st, &e.commit, task, kind, id))
		return 0;
	git_oid_cpy(commit, &e.commit);
	if (ms)
		*ms = e.ms;
	return 1;
}
