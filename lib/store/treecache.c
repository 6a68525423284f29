/*
 * treecache.c - the trees of a long task's directory, kept between
 * processes (treecache.h).
 *
 * The file: MAGIC, then for each tree its id (20 bytes), the length of
 * its content (4 bytes, little-endian) and the content as git stores it.
 * Nothing else needs checking: a tree is used only when its content
 * hashes to the id asked for.
 */
#include "treecache.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/tempfile.h"
#include "cache.h"
#include "store_int.h"

#include <nettle/sha1.h>

#define MAGIC "amp-trees 1\n"
#define MAGIC_LEN (sizeof(MAGIC) - 1)
#define ID_LEN 20
/* Where a fanned-out record's directories go: "00/01" (layout.c's
 * flatten keeps the same bound). */
#define SUB_MAX 64

struct amp_tc_tree {
	git_oid id;
	const unsigned char *raw; /* borrowed from the store's memo */
	size_t len;
};

/* The trees the process knows by id, for the task it listed last: those of
 * the file (checked the first time they are used) and those read from git.
 * Open addressing over a power of two. */
struct slot {
	git_oid id;
	const unsigned char *raw; /* NULL: an empty slot */
	size_t len;
	int checked; /* its content hashes to id */
	unsigned char *owned; /* raw, when read from git */
};

struct amp_treememo {
	char task_id[64];
	unsigned char *file; /* the file's content, slots borrow it */
	int from_file;       /* the file was there */
	int damaged;         /* ... and a tree of it is cut short or does not
			      * hash to its id: write it again */
	struct slot *slot;
	size_t nslots, used;
	size_t bytes;        /* the file's and the trees read from git */
};

/* The process's memo: a tree in it is the content of its id whatever
 * repository or file it came from, so one serves every store the process
 * opens (amp is single-threaded: dashboard --serve runs its requests in
 * its one loop).  It holds one task's trees; another task's listing
 * starts it again. */
static struct amp_treememo *memo;

struct walk {
	git_odb *odb;
	struct amp_treememo *m;
	amp_task_files *out;
};

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static struct slot *slot_of(struct amp_treememo *m, const git_oid *id)
{
	size_t h;

	memcpy(&h, id->id, sizeof(h));
	for (h &= m->nslots - 1; m->slot[h].raw && !git_oid_equal(&m->slot[h].id, id);
	     h = (h + 1) & (m->nslots - 1))
		;
	return &m->slot[h];
}

/* Room for one more tree (the table at most half full); -1 when out of
 * memory. */
static int memo_grow(struct amp_treememo *m)
{
	struct slot *old = m->slot;
	size_t i, n = m->nslots;

	if (m->slot && 2 * (m->used + 1) <= m->nslots)
		return 0;
	m->nslots = n ? 2 * n : 64;
	if (!(m->slot = calloc(m->nslots, sizeof(*m->slot)))) {
		m->slot = old;
		m->nslots = n;
		return -1;
	}
	for (i = 0; i < n; i++)
		if (old[i].raw)
			*slot_of(m, &old[i].id) = old[i];
	free(old);
	return 0;
}

static void memo_free(struct amp_treememo *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->nslots; i++)
		free(m->slot[i].owned);
	free(m->slot);
	free(m->file);
	free(m);
}

static int path_of(char *buf, size_t bufsz, const char *state_dir, const char *task_id,
		   int dir_only)
{
	int n = dir_only ? snprintf(buf, bufsz, "%s/trees", state_dir) :
		snprintf(buf, bufsz, "%s/trees/%s", state_dir, task_id);

	return n > 0 && (size_t)n < bufsz ? 0 : -1;
}

/* The memo of task_id: *held when it is that task's, else a new
 * one with the trees of the task's file (its framing only: each tree is
 * checked when it is used); NULL when out of memory. */
static struct amp_treememo *memo_of(struct amp_treememo **held, const char *state_dir,
				    const char *task_id)
{
	struct amp_treememo *m = *held;
	char path[PATH_MAX], *buf = NULL;
	size_t size = 0, off, len;
	struct slot *s;

	if (m && !strcmp(m->task_id, task_id))
		return m;
	memo_free(m);
	if (!(*held = m = calloc(1, sizeof(*m))))
		return NULL;
	snprintf(m->task_id, sizeof(m->task_id), "%s", task_id);
	if (!state_dir || path_of(path, sizeof(path), state_dir, task_id, 0) < 0 ||
	    amp_cache_read(path, AMP_TREECACHE_MAX, &buf, &size) < 0)
		return m;
	if (size < MAGIC_LEN || memcmp(buf, MAGIC, MAGIC_LEN)) {
		free(buf);
		return m;
	}
	m->file = (unsigned char *)buf;
	m->bytes = size;
	m->from_file = 1;
	/* a cut-short last entry is left out: its tree comes from git */
	for (off = MAGIC_LEN; size - off >= ID_LEN + 4; off += ID_LEN + 4 + len) {
		git_oid id;

		if ((len = get32(m->file + off + ID_LEN)) > size - off - ID_LEN - 4) {
			m->damaged = 1;
			break;
		}
		if (memo_grow(m) < 0)
			break;
		git_oid_fromraw(&id, m->file + off);
		if ((s = slot_of(m, &id))->raw)
			continue;
		git_oid_cpy(&s->id, &id);
		s->raw = m->file + off + ID_LEN + 4;
		s->len = len;
		m->used++;
	}
	return m;
}

/* 1 when raw (len bytes) is the content of git tree `id`: the object
 * id is the SHA-1 of "tree <len>\0" and the content (nettle's SHA-1: the
 * collision-detecting one of libgit2 costs five times more). */
static int tree_hashes_to(const unsigned char *raw, size_t len, const git_oid *id)
{
	struct sha1_ctx ctx;
	char head[32];
	uint8_t digest[SHA1_DIGEST_SIZE];
	int n = snprintf(head, sizeof(head), "tree %zu", len);

	sha1_init(&ctx);
	sha1_update(&ctx, (size_t)n + 1, (const uint8_t *)head);
	sha1_update(&ctx, len, raw);
	sha1_digest(&ctx, sizeof(digest), digest);
	return !memcmp(digest, id->id, ID_LEN);
}

/* Tree `id` from the memo when its content hashes to id, else from git
 * (and kept in the memo), added to out->trees: its index there, or -1. */
static int tree_get(struct walk *w, const git_oid *id)
{
	amp_task_files *f = w->out;
	git_odb_object *obj = NULL;
	struct slot *s;

	if (f->ntrees == f->talloc) {
		size_t alloc = f->talloc ? f->talloc * 2 : 16;
		struct amp_tc_tree *grown = realloc(f->trees, alloc * sizeof(*grown));

		if (!grown)
			return -1;
		f->trees = grown;
		f->talloc = alloc;
	}
	if (memo_grow(w->m) < 0)
		return -1;
	s = slot_of(w->m, id);
	if (s->raw && !s->checked && !(s->checked = tree_hashes_to(s->raw, s->len, id)))
		w->m->damaged = 1;
	if (s->raw && s->checked) {
		f->from_file++;
	} else {
		if (git_odb_read(&obj, w->odb, id) < 0 ||
		    git_odb_object_type(obj) != GIT_OBJECT_TREE ||
		    !(s->owned = malloc(git_odb_object_size(obj) + 1))) {
			git_odb_object_free(obj);
			return -1;
		}
		if (!s->raw)
			w->m->used++;
		git_oid_cpy(&s->id, id);
		s->len = git_odb_object_size(obj);
		w->m->bytes += s->len;
		memcpy(s->owned, git_odb_object_data(obj), s->len);
		s->raw = s->owned;
		s->checked = 1;
		git_odb_object_free(obj);
		f->from_git++;
	}
	git_oid_cpy(&f->trees[f->ntrees].id, id);
	f->trees[f->ntrees].raw = s->raw;
	f->trees[f->ntrees].len = s->len;
	return (int)f->ntrees++;
}

static int add_file(amp_task_files *f, const char *name, const unsigned char *id)
{
	if (f->count == f->alloc) {
		size_t alloc = f->alloc ? f->alloc * 2 : 64;
		amp_task_file *grown = realloc(f->v, alloc * sizeof(*grown));

		if (!grown)
			return -1;
		f->v = grown;
		f->alloc = alloc;
	}
	f->v[f->count].name = name;
	git_oid_fromraw(&f->v[f->count].id, id);
	f->count++;
	return 0;
}

/* Walks tree `id` as layout.c's flatten does: fan-out trees (named by
 * digits, `levels` deep at most, their path under SUB_MAX) are walked
 * through, every other entry is a file.  Git's tree format: "<octal mode>
 * <name>\0<20-byte id>" per entry; anything else fails the listing. */
static int walk(struct walk *w, const git_oid *id, int levels, size_t sublen)
{
	int at = tree_get(w, id);
	const unsigned char *p, *end;

	if (at < 0)
		return -1;
	p = w->out->trees[at].raw;
	end = p + w->out->trees[at].len;
	while (p < end) {
		unsigned mode = 0;
		const unsigned char *nul, *digits = p;
		const char *name;
		size_t namelen, below;
		git_oid sub;

		/* a mode fits 16 bits, as libgit2's parser requires */
		for (; p < end && *p >= '0' && *p <= '7' && mode <= 0177777; p++)
			mode = mode * 8 + (unsigned)(*p - '0');
		if (p == end || p == digits || mode > 0177777 || *p++ != ' ' ||
		    !(nul = memchr(p, 0, (size_t)(end - p))) || nul == p ||
		    (size_t)(end - nul) < 1 + ID_LEN)
			return -1;
		name = (const char *)p;
		namelen = (size_t)(nul - p);
		below = sublen ? sublen + 1 + namelen : namelen;
		p = nul + 1 + ID_LEN;
		if (levels > 0 && (mode & 0170000) == 0040000 && amp_store_is_fanout(name) &&
		    below < SUB_MAX) {
			git_oid_fromraw(&sub, nul + 1);
			if (walk(w, &sub, levels - 1, below) < 0)
				return -1;
			continue;
		}
		if (add_file(w->out, name, nul + 1) < 0)
			return -1;
	}
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const amp_task_file *)a)->name, ((const amp_task_file *)b)->name);
}

/* Writes every tree of the listing to the file (best effort). */
static void save(const char *state_dir, const char *task_id, const amp_task_files *f)
{
	char path[PATH_MAX], dir[PATH_MAX];
	unsigned char *buf, *p;
	size_t i, size = MAGIC_LEN;

	for (i = 0; i < f->ntrees; i++)
		size += ID_LEN + 4 + f->trees[i].len;
	if (size > AMP_TREECACHE_MAX || path_of(path, sizeof(path), state_dir, task_id, 0) < 0 ||
	    path_of(dir, sizeof(dir), state_dir, task_id, 1) < 0 || !(buf = malloc(size)))
		return;
	memcpy(buf, MAGIC, MAGIC_LEN);
	for (p = buf + MAGIC_LEN, i = 0; i < f->ntrees; i++) {
		uint32_t len = (uint32_t)f->trees[i].len;

		memcpy(p, f->trees[i].id.id, ID_LEN);
		p[ID_LEN] = (unsigned char)len;
		p[ID_LEN + 1] = (unsigned char)(len >> 8);
		p[ID_LEN + 2] = (unsigned char)(len >> 16);
		p[ID_LEN + 3] = (unsigned char)(len >> 24);
		memcpy(p + ID_LEN + 4, f->trees[i].raw, len);
		p += ID_LEN + 4 + len;
	}
	if ((mkdir(state_dir, 0777) == 0 || errno == EEXIST) &&
	    (mkdir(dir, 0777) == 0 || errno == EEXIST))
		(void)amp_tempfile_write_file(path, buf, size, 0);
	free(buf);
}

int amp_task_files_list(amp_store *st, const char *task_id, const git_oid *task_tree,
			amp_task_files *out)
{
	struct walk w = { NULL, NULL, out };
	size_t i;
	int status = -1;

	memset(out, 0, sizeof(*out));
	if (!(w.m = memo_of(&memo, st->state_dir, task_id)) ||
	    git_repository_odb(&w.odb, st->repo) < 0)
		return -1;
	/* three levels as amp_store_task_files: a six-digit sequence number
	 * in groups of two */
	if (walk(&w, task_tree, 3, 0) < 0)
		goto cleanup;
	/* Records come out in name order unless a tree mixes records and
	 * fan-out directories (made by hand). */
	for (i = 1; i < out->count; i++)
		if (strcmp(out->v[i - 1].name, out->v[i].name) > 0)
			break;
	if (i < out->count)
		qsort(out->v, out->count, sizeof(*out->v), cmp_name);
	/* Written again once a listing took AMP_TREECACHE_SLACK trees from
	 * git, or at once when it is damaged. */
	if (out->count >= AMP_TREECACHE_MIN_FILES && out->from_git &&
	    (out->from_git >= AMP_TREECACHE_SLACK || !w.m->from_file || w.m->damaged)) {
		save(st->state_dir, task_id, out);
		w.m->damaged = 0;
	}
	status = 0;
cleanup:
	git_odb_free(w.odb);
	if (status < 0) {
		git_error_clear();
		amp_task_files_free(out);
	}
	return status;
}

void amp_task_files_free(amp_task_files *f)
{
	/* A task too long for the file is not kept in memory either: a
	 * process that runs on (amp watch, dashboard --serve) would hold it
	 * until it lists another task. */
	if (memo && memo->bytes > AMP_TREECACHE_MAX) {
		memo_free(memo);
		memo = NULL;
	}
	free(f->trees);
	free(f->v);
	memset(f, 0, sizeof(*f));
}
