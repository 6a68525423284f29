/* packcat.c - amp's packs laid end to end as one (packcat.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nettle/sha1.h>

#include "packcat.h"

/* Index entries read at a time per pack: 2,000 packs hold ~6 MB of
 * buffers, whatever their size. */
#define CHUNK 128

/* Index version 2 (gitformat-pack): header, 256 fan-out words, n names,
 * n CRCs, n 32-bit offsets, [64-bit offsets], the pack's checksum, its
 * own. */
#define IDX_HEAD (8 + 1024)

/* One pack to take, and its cursor in the merge. */
struct src {
	int idx, pack;        /* descriptors */
	uint32_t n;           /* objects */
	uint64_t body;        /* bytes of entries: the pack less its header and trailer */
	uint64_t start;       /* where its entries start in the new pack */
	uint32_t pos;         /* the merge's next entry (index order) */
	uint32_t at, got;     /* names[] and pay[] hold entries at..at+got */
	unsigned char names[CHUNK * 20];
	unsigned char pay[CHUNK * 4]; /* CRCs or offsets, as the pass reads */
};

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* Reads exactly len bytes at off: 0, or -1. */
static int read_at(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done, off + (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* Opens dir/name.{idx,pack} into s and checks that they are what a merge
 * can take: 0, -1 (AMP_NOOP: not such a pack), -2 (cannot be read) or -3
 * (gone: a roll-up took it). */
static int open_src(struct src *s, const char *dir, const char *name)
{
	char path[PATH_MAX];
	unsigned char head[IDX_HEAD], phead[12];
	struct stat ist, pst;

	s->idx = s->pack = -1;
	snprintf(path, sizeof(path), "%s/%s.idx", dir, name);
	if ((s->idx = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return errno == ENOENT ? -3 : -2;
	snprintf(path, sizeof(path), "%s/%s.pack", dir, name);
	if ((s->pack = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return -2;
	if (fstat(s->idx, &ist) < 0 || fstat(s->pack, &pst) < 0 ||
	    read_at(s->idx, head, sizeof(head), 0) < 0 || read_at(s->pack, phead, 12, 0) < 0)
		return -2;
	s->n = get32(head + IDX_HEAD - 4);
	/* No 64-bit offsets: the index is exactly its tables (pack < 2 GiB). */
	if (memcmp(head, "\377tOc\0\0\0\2", 8) || memcmp(phead, "PACK\0\0\0\2", 8) ||
	    get32(phead + 8) != s->n || pst.st_size >= (off_t)0x80000000 ||
	    pst.st_size < 12 + 20 || (uint64_t)ist.st_size != IDX_HEAD + (uint64_t)s->n * 28 + 40)
		return -1;
	s->body = (uint64_t)pst.st_size - 12 - 20;
	return 0;
}

static void close_src(struct src *s)
{
	if (s->idx >= 0)
		close(s->idx);
	if (s->pack >= 0)
		close(s->pack);
	s->idx = s->pack = -1;
}

/* The name of s's entry at s->pos (index order), reading the next chunk
 * of names and of the table at `table` (4 bytes an entry; 0: none) when
 * needed: NULL past its end or when the index cannot be read. */
static const unsigned char *cur(struct src *s, off_t table)
{
	uint32_t k;

	if (s->pos >= s->n)
		return NULL;
	if (s->pos >= s->at + s->got) {
		k = s->n - s->pos < CHUNK ? s->n - s->pos : CHUNK;
		if (read_at(s->idx, s->names, (size_t)k * 20, IDX_HEAD + (off_t)s->pos * 20) < 0 ||
		    (table && read_at(s->idx, s->pay, (size_t)k * 4,
				      table + (off_t)s->pos * 4) < 0))
			return NULL;
		s->at = s->pos;
		s->got = k;
	}
	return s->names + (size_t)(s->pos - s->at) * 20;
}

/* ---- the output, hashed as it is written ------------------------------- */

struct out {
	FILE *f;
	struct sha1_ctx sha;
	int bad;
};

static void emit(struct out *o, const void *p, size_t len)
{
	sha1_update(&o->sha, len, p);
	if (!o->bad && fwrite(p, 1, len, o->f) != len)
		o->bad = 1;
}

/* A temporary file of dir for *o, its path in tmp: 0, or -1. */
static int out_open(struct out *o, const char *dir, char *tmp, size_t size)
{
	int fd;

	memset(o, 0, sizeof(*o));
	sha1_init(&o->sha);
	if (snprintf(tmp, size, "%s/tmp_amp_pack_XXXXXX", dir) >= (int)size ||
	    (fd = mkstemp(tmp)) < 0)
		return -1;
	if (!(o->f = fdopen(fd, "w"))) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* Writes the trailer (the checksum, also into sum), fsyncs when asked and
 * closes: 0, or -1. */
static int out_close(struct out *o, int sync, unsigned char sum[20])
{
	sha1_digest(&o->sha, SHA1_DIGEST_SIZE, sum);
	if (!o->bad && fwrite(sum, 1, 20, o->f) != 20)
		o->bad = 1;
	if (fflush(o->f) != 0 || fchmod(fileno(o->f), 0444) < 0 ||
	    (sync && fsync(fileno(o->f)) < 0))
		o->bad = 1;
	if (fclose(o->f) != 0)
		o->bad = 1;
	o->f = NULL;
	return o->bad ? -1 : 0;
}

/* ---- the merge of the indexes -------------------------------------------- */

struct merge {
	struct src *s;
	size_t n;
	size_t *heap; /* sources by their current name */
	size_t len;
	uint32_t big; /* offsets past 31 bits so far */
};

/* a before b: by name, then by source (the same name twice is refused) */
static int before(struct merge *m, size_t a, size_t b)
{
	int c = memcmp(m->s[a].names + (size_t)(m->s[a].pos - m->s[a].at) * 20,
		       m->s[b].names + (size_t)(m->s[b].pos - m->s[b].at) * 20, 20);

	return c < 0 || (c == 0 && a < b);
}

static void sift(struct merge *m, size_t i)
{
	size_t l, best, t;

	for (;;) {
		l = 2 * i + 1;
		best = i;
		if (l < m->len && before(m, m->heap[l], m->heap[best]))
			best = l;
		if (l + 1 < m->len && before(m, m->heap[l + 1], m->heap[best]))
			best = l + 1;
		if (best == i)
			return;
		t = m->heap[i];
		m->heap[i] = m->heap[best];
		m->heap[best] = t;
		i = best;
	}
}

enum pass { NAMES, CRCS, OFFSETS, BIG };

/* The table a pass reads beside the names (0: none). */
static off_t table_of(const struct src *s, enum pass pass)
{
	if (pass == CRCS)
		return IDX_HEAD + (off_t)s->n * 20;
	if (pass == OFFSETS || pass == BIG)
		return IDX_HEAD + (off_t)s->n * 24;
	return 0;
}

/* Writes one table of the new index, every source's entries in name
 * order: 0, -1 (the same name in two packs) or -2 (an index unreadable). */
static int merge_pass(struct merge *m, enum pass pass, struct out *o)
{
	unsigned char buf[8], last[20];
	const unsigned char *name;
	size_t i, top;
	uint64_t off;
	int any = 0, c;

	m->len = 0;
	m->big = 0;
	for (i = 0; i < m->n; i++) {
		m->s[i].pos = m->s[i].at = m->s[i].got = 0;
		if (cur(&m->s[i], table_of(&m->s[i], pass)))
			m->heap[m->len++] = i;
		else if (m->s[i].n)
			return -2;
	}
	for (i = m->len; i-- > 0;)
		sift(m, i);
	while (m->len) {
		struct src *s = &m->s[top = m->heap[0]];
		const unsigned char *pay = s->pay + (size_t)(s->pos - s->at) * 4;

		name = s->names + (size_t)(s->pos - s->at) * 20;
		if (pass == NAMES) {
			/* the same name twice; or out of order: an index amp
			 * cannot trust, never copied */
			if (any && (c = memcmp(last, name, 20)) >= 0)
				return c ? -2 : -1;
			memcpy(last, name, 20);
			any = 1;
			emit(o, name, 20);
		} else if (pass == CRCS) {
			emit(o, pay, 4);
		} else {
			/* an offset out of its pack's entries: not amp's pack */
			if ((off = get32(pay)) < 12 || off >= 12 + s->body)
				return -2;
			off = off - 12 + s->start;
			if (pass == OFFSETS && off < 0x80000000u) {
				put32(buf, (uint32_t)off);
				emit(o, buf, 4);
			} else if (pass == OFFSETS) {
				put32(buf, 0x80000000u | m->big++);
				emit(o, buf, 4);
			} else if (off >= 0x80000000u) {
				put32(buf, (uint32_t)(off >> 32));
				put32(buf + 4, (uint32_t)off);
				emit(o, buf, 8);
			}
		}
		s->pos++;
		if (cur(s, table_of(s, pass))) {
			sift(m, 0);
		} else if (s->pos < s->n) {
			return -2;
		} else {
			m->heap[0] = m->heap[--m->len];
			sift(m, 0);
		}
	}
	return 0;
}

/* The new index: header, fan-out (the sources' summed), the four tables,
 * the pack's checksum: 0, -1 or -2 as merge_pass. */
static int write_index(struct merge *m, const unsigned char pack_sum[20], struct out *o)
{
	unsigned char fan[1024], word[4];
	uint64_t total[256] = { 0 };
	size_t i, b;
	int rc;

	emit(o, "\377tOc\0\0\0\2", 8);
	for (i = 0; i < m->n; i++) {
		if (read_at(m->s[i].idx, fan, sizeof(fan), 8) < 0)
			return -2;
		for (b = 0; b < 256; b++)
			total[b] += get32(fan + 4 * b);
	}
	for (b = 0; b < 256; b++) {
		put32(word, (uint32_t)total[b]);
		emit(o, word, 4);
	}
	if ((rc = merge_pass(m, NAMES, o)) < 0 || (rc = merge_pass(m, CRCS, o)) < 0 ||
	    (rc = merge_pass(m, OFFSETS, o)) < 0 || (rc = merge_pass(m, BIG, o)) < 0)
		return rc;
	emit(o, pack_sum, 20);
	return 0;
}

/* The new pack: header, every source's entries in turn, checksum (into
 * sum); each source's start set.  0, -1 (a file unreadable or
 * unwritable) or -2 (a pack whose bytes are not its checksum's). */
static int write_pack(struct merge *m, uint64_t objects, int sync, struct out *o,
		      unsigned char sum[20])
{
	static unsigned char buf[1 << 20];
	unsigned char head[12] = "PACK\0\0\0\2", got[20];
	struct sha1_ctx one;
	uint64_t at = 12, done;
	size_t i, k;

	put32(head + 8, (uint32_t)objects);
	emit(o, head, 12);
	for (i = 0; i < m->n; i++) {
		struct src *s = &m->s[i];

		s->start = at;
		/* Each pack checked as it is copied: its checksum, the one its
		 * index names (a damaged pack is never copied, and the packs
		 * are deleted only once the copy is whole). */
		sha1_init(&one);
		if (read_at(s->pack, buf, 12, 0) < 0)
			return -1;
		sha1_update(&one, 12, buf);
		for (done = 0; done < s->body; done += k) {
			k = s->body - done < sizeof(buf) ? (size_t)(s->body - done) : sizeof(buf);
			if (read_at(s->pack, buf, k, 12 + (off_t)done) < 0)
				return -1;
			sha1_update(&one, k, buf);
			emit(o, buf, k);
		}
		sha1_digest(&one, SHA1_DIGEST_SIZE, got);
		if (read_at(s->pack, buf, 20, 12 + (off_t)s->body) < 0 ||
		    read_at(s->idx, buf + 20, 20, IDX_HEAD + (off_t)s->n * 28) < 0 ||
		    memcmp(got, buf, 20) || memcmp(got, buf + 20, 20))
			return -2;
		at += s->body;
	}
	return out_close(o, sync, sum);
}

/* Renames tmp to dir/pack-<sum><ext>: 0, or -1. */
static int place(const char *tmp, const char *dir, const unsigned char sum[20], const char *ext,
		 char *final, size_t size)
{
	int i, n = snprintf(final, size, "%s/pack-", dir);

	for (i = 0; i < 20 && n > 0 && (size_t)n + 3 < size; i++)
		n += snprintf(final + n, size - (size_t)n, "%02x", sum[i]);
	if (i < 20 || snprintf(final + n, size - (size_t)n, "%s", ext) >= (int)(size - (size_t)n))
		return -1;
	return rename(tmp, final);
}

/* Deletes dir/name's index, then its pack (packgc.c's order). */
static void remove_src(const char *dir, const char *name)
{
	static const char *const exts[] = { ".idx", ".pack", ".rev", NULL };
	char path[PATH_MAX];
	size_t i;

	for (i = 0; exts[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s%s", dir, name, exts[i]);
		unlink(path);
	}
}

/* The packs of p[0..n) that a running repack did not claim and that can
 * be taken as they are, opened into m->s: AMP_OK, AMP_NOOP (fewer than
 * two) or AMP_EIO. */
static int open_all(amp_store *st, struct merge *m, const char *dir,
		    const struct amp_pack_name *p, size_t n, const char **names, uint64_t *objects,
		    amp_error *err)
{
	struct amp_dir_names claimed;
	size_t i;
	int rc, status = AMP_OK;

	amp_pack_claimed(st, &claimed);
	*objects = 0;
	for (i = 0; i < n && status == AMP_OK; i++) {
		if (amp_dir_names_has(&claimed, p[i].name))
			continue;
		names[m->n] = p[i].name;
		if ((rc = open_src(&m->s[m->n++], dir, p[i].name)) == -1 || rc == -3)
			close_src(&m->s[--m->n]);
		else if (rc < 0)
			status = amp_error_set(err, AMP_EIO, "", "cannot read %s/%s", dir,
					       p[i].name);
		else
			*objects += m->s[m->n - 1].n;
	}
	amp_dir_names_free(&claimed);
	if (status == AMP_OK && (m->n < 2 || *objects >= 0xffffffffu))
		status = AMP_NOOP;
	return status;
}

int amp_pack_concat(amp_store *st, const char *pack_dir, const struct amp_pack_name *p, size_t n,
		    int sync, size_t *taken, amp_error *err)
{
	char tmp_pack[PATH_MAX] = "", tmp_idx[PATH_MAX] = "", path[PATH_MAX];
	unsigned char pack_sum[20], idx_sum[20];
	struct merge m = { NULL, 0, NULL, 0, 0 };
	const char **names = NULL;
	struct out o;
	uint64_t objects = 0;
	size_t i;
	int lock, busy, rc = 0, status = AMP_OK;

	memset(&o, 0, sizeof(o));
	if (taken)
		*taken = 0;
	if (n < 2)
		return AMP_NOOP;
	if (!(m.s = calloc(n, sizeof(*m.s))) || !(m.heap = calloc(n, sizeof(*m.heap))) ||
	    !(names = calloc(n, sizeof(*names)))) {
		free(m.s);
		free(m.heap);
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	}
	if ((lock = amp_pack_lock(st, "rollup.lock", 1, &busy, err)) < 0) {
		status = AMP_EIO;
		goto cleanup;
	}
	status = open_all(st, &m, pack_dir, p, n, names, &objects, err);
	/* Held only to choose and to delete, as a repack holds it
	 * (packgc.h): the copy may take minutes (2.2 GB at 1M), and writes
	 * keep rolling their packs up meanwhile.  A pack a roll-up takes
	 * from under the copy is read through its descriptor; its objects
	 * are then in two packs until the next repack, which git allows. */
	close(lock);
	lock = -1;
	if (status != AMP_OK)
		goto cleanup;
	if (out_open(&o, pack_dir, tmp_pack, sizeof(tmp_pack)) < 0 ||
	    (rc = write_pack(&m, objects, sync, &o, pack_sum)) == -2) {
		status = amp_error_set(err, AMP_EIO, "",
				       "a pack of %s does not match its checksum: nothing copied",
				       pack_dir);
		goto cleanup;
	}
	if (rc < 0 || out_open(&o, pack_dir, tmp_idx, sizeof(tmp_idx)) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "cannot write a pack in %s: %s", pack_dir,
				       strerror(errno));
		goto cleanup;
	}
	if ((rc = write_index(&m, pack_sum, &o)) < 0 || out_close(&o, sync, idx_sum) < 0) {
		status = rc == -1 ? AMP_NOOP :
				    amp_error_set(err, AMP_EIO, "", "cannot write an index in %s",
						  pack_dir);
		goto cleanup;
	}
	/* The pack before its index: git and libgit2 see a pack by its index. */
	if (place(tmp_pack, pack_dir, pack_sum, ".pack", path, sizeof(path)) < 0 ||
	    (tmp_pack[0] = '\0', place(tmp_idx, pack_dir, pack_sum, ".idx", path, sizeof(path))) <
		    0) {
		status = amp_error_set(err, AMP_EIO, "", "cannot write %s: %s", path,
				       strerror(errno));
		goto cleanup;
	}
	tmp_idx[0] = '\0';
	if (sync && (rc = open(pack_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		if (fsync(rc) < 0)
			status = amp_error_set(err, AMP_EIO, "", "cannot fsync %s: %s", pack_dir,
					       strerror(errno));
		close(rc);
		if (status < 0)
			goto cleanup;
	}
	/* The new pack is in place (on disk, with amp.fsync): only now do
	 * the old ones go. */
	if ((lock = amp_pack_lock(st, "rollup.lock", 1, &busy, err)) < 0) {
		status = AMP_EIO;
		goto cleanup;
	}
	for (i = 0; i < m.n; i++)
		remove_src(pack_dir, names[i]);
	if (taken)
		*taken = m.n;
cleanup:
	if (o.f)
		fclose(o.f);
	if (tmp_pack[0])
		unlink(tmp_pack);
	if (tmp_idx[0])
		unlink(tmp_idx);
	for (i = 0; m.s && i < m.n; i++)
		close_src(&m.s[i]);
	free(m.s);
	free(m.heap);
	free(names);
	if (lock >= 0)
		close(lock);
	return status;
}

/* Entries has_delta reads at most: index order is by name, a sample of
 * the pack whatever its order, and a pack without deltas (a roll-up of
 * writes' packs: up to ~50,000 objects) costs this many reads, not one
 * per object, at every amp gc --auto. */
#define DELTA_SAMPLE 4096

/* 1 when the pack dir/name holds a delta among its first DELTA_SAMPLE
 * entries in index order (their first bytes), 0 when none or when it
 * cannot be read. */
static int has_delta(const char *dir, const char *name, uint32_t n)
{
	unsigned char offs[CHUNK * 4], type;
	struct src s;
	uint32_t i, k, j;
	int found = 0;

	if (open_src(&s, dir, name) < 0) {
		close_src(&s);
		return 0;
	}
	if (n > DELTA_SAMPLE)
		n = DELTA_SAMPLE;
	for (i = 0; i < n && !found; i += k) {
		k = n - i < CHUNK ? n - i : CHUNK;
		if (read_at(s.idx, offs, (size_t)k * 4, IDX_HEAD + (off_t)s.n * 24 + (off_t)i * 4) < 0)
			break;
		for (j = 0; j < k && !found; j++)
			found = read_at(s.pack, &type, 1, get32(offs + 4 * j)) == 0 &&
				((type >> 4) & 7) >= 6;
	}
	close_src(&s);
	return found;
}

int amp_pack_concat_deltified(amp_store *st, const char *pack_dir, int sync, size_t *taken,
			      amp_error *err)
{
	struct amp_pack_name *p = NULL;
	long all;
	size_t i, k = 0;
	int status;

	if (taken)
		*taken = 0;
	if ((all = amp_pack_list(pack_dir, &p)) < 0)
		return amp_error_set(err, AMP_EIO, "", "cannot read %s", pack_dir);
	for (i = 0; i < (size_t)all; i++)
		if (has_delta(pack_dir, p[i].name, p[i].objects))
			p[k++] = p[i];
	k = amp_pack_geometric_split(p, k);
	status = k >= 2 ? amp_pack_concat(st, pack_dir, p, k, sync, taken, err) : AMP_NOOP;
	free(p);
	return status;
}
