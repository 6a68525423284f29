#include "packwrite.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <nettle/sha1.h>


#define OBJ_OFS_DELTA 6
#ifndef AMP_PACKWRITE_LEVEL
#define AMP_PACKWRITE_LEVEL Z_BEST_SPEED
#endif

struct slot {
	git_oid id;
	uint64_t offset; /* of the entry in the pack */
	uint32_t crc;    /* CRC-32 of the entry's bytes, for the index */
	unsigned depth;  /* deltas between it and a whole object */
	int used;
};

struct amp_packwrite {
	unsigned char *buf;
	size_t len, alloc;
	struct slot *slots;  /* open addressing, mask + 1 of them */
	size_t mask;
	size_t capacity, count;
	unsigned char *delta; /* scratch for one delta */
	size_t delta_alloc;
	z_stream zs;
	int zs_ready, finished;
	int stored;           /* zs is at level 0 */
	z_stream zs_big;      /* for objects of AMP_PACKWRITE_BIG bytes or more */
	int zs_big_ready;
};

static int grow(unsigned char **buf, size_t *alloc, size_t need)
{
	size_t n = *alloc ? *alloc : 4096;
	unsigned char *p;

	if (need <= *alloc)
		return 0;
	while (n < need)
		n *= 2;
	if (!(p = realloc(*buf, n)))
		return -1;
	*buf = p;
	*alloc = n;
	return 0;
}

static size_t slot_of(const amp_packwrite *pw, const git_oid *id)
{
	size_t h;

	memcpy(&h, id->id, sizeof(h)); /* an object name is uniform already */
	for (h &= pw->mask; pw->slots[h].used && !git_oid_equal(&pw->slots[h].id, id);
	     h = (h + 1) & pw->mask)
		;
	return h;
}

int amp_packwrite_new(amp_packwrite **out, size_t capacity, amp_error *err)
{
	amp_packwrite *pw = calloc(1, sizeof(*pw));
	size_t n = 16;

	*out = NULL;
	while (pw && n < 2 * capacity)
		n *= 2;
	if (!pw || !(pw->slots = calloc(n, sizeof(*pw->slots))) ||
	    grow(&pw->buf, &pw->alloc, 12 + 20) < 0 ||
	    /* memLevel 3: a hash table of 1,024 heads, which deflateReset
	     * clears for every object (zlib's default, 8, is 64 KiB of
	     * memset per object, most of the time of a pack of small
	     * objects); windowBits 15, so any inflate reads it. */
	    deflateInit2(&pw->zs, AMP_PACKWRITE_LEVEL, Z_DEFLATED, 15, 3,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		amp_packwrite_free(pw);
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	}
	pw->zs_ready = 1;
	pw->mask = n - 1;
	pw->capacity = capacity;
	memcpy(pw->buf, "PACK\0\0\0\2\0\0\0\0", 12);
	pw->len = 12;
	*out = pw;
	return AMP_OK;
}

static int want_stored(size_t len)
{
	return len < 128;
}

/*
 * The stream for an object of len bytes, reset.  zs's memLevel 3 keeps its
 * reset cheap, but makes zlib end a block (and build its Huffman tables)
 * every 512 symbols: a task tree of 1,000 records (85 KB) was ~100 blocks,
 * 11.6M instructions, a fifth of a send into that task.  Objects of
 * AMP_PACKWRITE_BIG bytes or more get a stream of zlib's default memLevel
 * (blocks of 16,384 symbols), whose 64 KiB reset they can afford.
 */
#define AMP_PACKWRITE_BIG 16384

static z_stream *stream_for(amp_packwrite *pw, size_t len)
{
	if (len < AMP_PACKWRITE_BIG) {
		if (deflateReset(&pw->zs) != Z_OK ||
		    /* zlib builds Huffman tables for every block it
		     * compresses, which costs more than a delta of a few
		     * dozen bytes would save: those are stored (level 0). */
		    (want_stored(len) != pw->stored &&
		     deflateParams(&pw->zs, (pw->stored = want_stored(len)) ? 0 : AMP_PACKWRITE_LEVEL,
				   Z_DEFAULT_STRATEGY) != Z_OK))
			return NULL;
		return &pw->zs;
	}
	if (!pw->zs_big_ready) {
		if (deflateInit2(&pw->zs_big, AMP_PACKWRITE_LEVEL, Z_DEFLATED, 15, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
			return NULL;
		pw->zs_big_ready = 1;
		return &pw->zs_big;
	}
	return deflateReset(&pw->zs_big) == Z_OK ? &pw->zs_big : NULL;
}

int amp_packwrite_has(const amp_packwrite *pw, const git_oid *id)
{
	return pw->slots[slot_of(pw, id)].used;
}

int amp_packwrite_can_base(const amp_packwrite *pw, const git_oid *id)
{
	const struct slot *s = &pw->slots[slot_of(pw, id)];

	return s->used && s->depth < AMP_PACKWRITE_DEPTH;
}

/* A delta varint: 7 bits a byte, low first. */
static size_t put_size(unsigned char *p, size_t v)
{
	size_t n = 0;

	do {
		p[n] = v & 0x7f;
		v >>= 7;
		p[n] |= v ? 0x80 : 0;
		n++;
	} while (v);
	return n;
}

/* A copy of base[off..off+size): offset and size bytes present when not
 * zero, flagged in the command byte.  size <= 0xffff (0 would mean 64K). */
static size_t put_copy(unsigned char *p, size_t off, size_t size)
{
	unsigned char cmd = 0x80;
	size_t n = 1;
	int i;

	for (i = 0; i < 4; i++, off >>= 8)
		if (off & 0xff) {
			p[n++] = off & 0xff;
			cmd |= 1 << i;
		}
	for (i = 0; i < 2; i++, size >>= 8)
		if (size & 0xff) {
			p[n++] = size & 0xff;
			cmd |= 0x10 << i;
		}
	p[0] = cmd;
	return n;
}

static size_t put_copies(unsigned char *p, size_t off, size_t size)
{
	size_t n = 0, chunk;

	for (; size; off += chunk, size -= chunk) {
		chunk = size < 0xffff ? size : 0xffff;
		n += put_copy(p + n, off, chunk);
	}
	return n;
}

/*
 * The delta from base to target (git's delta format: the two sizes, then
 * copy and insert commands): the common prefix copied, the middle
 * inserted, the common suffix copied.  Returns its length in pw->delta,
 * or 0 when it would not be worth it.
 */
static size_t make_delta(amp_packwrite *pw, const unsigned char *base, size_t blen,
			 const unsigned char *target, size_t tlen)
{
	size_t min = blen < tlen ? blen : tlen, pre = 0, suf = 0, mid, n, chunk;

	while (pre < min && base[pre] == target[pre])
		pre++;
	while (suf < min - pre && base[blen - 1 - suf] == target[tlen - 1 - suf])
		suf++;
	mid = tlen - pre - suf;
	/* sizes, copies (at most 7 bytes per 64K), inserts (1 per 127) */
	n = 20 + 2 * 7 * (blen / 0xffff + 1) + mid + mid / 127 + 1;
	if (mid + 32 >= tlen || grow(&pw->delta, &pw->delta_alloc, n) < 0)
		return 0;
	n = put_size(pw->delta, blen);
	n += put_size(pw->delta + n, tlen);
	n += put_copies(pw->delta + n, 0, pre);
	for (target += pre; mid; target += chunk, mid -= chunk) {
		chunk = mid < 127 ? mid : 127;
		pw->delta[n++] = (unsigned char)chunk;
		memcpy(pw->delta + n, target, chunk);
		n += chunk;
	}
	n += put_copies(pw->delta + n, blen - suf, suf);
	return n;
}

/* The entry header of an object of pack type ptype, size bytes inflated
 * (gitformat-pack: type and size in 3 and 4 bits, then 7 bits a byte),
 * followed for an OFS_DELTA by the distance `rel` back to its base
 * (big-endian, each byte but the last offset by one).  Returns its length
 * (at most 32 bytes). */
static size_t entry_head(unsigned char head[32], unsigned ptype, size_t size, uint64_t rel)
{
	size_t hdr = 0;

	head[hdr] = (unsigned char)(ptype << 4 | (size & 15));
	for (size >>= 4; size; size >>= 7) {
		head[hdr++] |= 0x80;
		head[hdr] = size & 0x7f;
	}
	hdr++;
	if (ptype == OBJ_OFS_DELTA) {
		unsigned char ofs[16];
		size_t pos = sizeof(ofs) - 1;

		ofs[pos] = rel & 127;
		while (rel >>= 7)
			ofs[--pos] = 128 | (--rel & 127);
		memcpy(head + hdr, ofs + pos, sizeof(ofs) - pos);
		hdr += sizeof(ofs) - pos;
	}
	return hdr;
}

/* Why the object `id` cannot go into the pack at slot `at`, or NULL. */
static const char *refusal(const amp_packwrite *pw, size_t at)
{
	if (pw->finished || pw->count >= pw->capacity)
		return "the pack is full";
	return pw->slots[at].used ? "packed twice" : NULL;
}

/* Records the entry just appended at `off` for `id` (slot `at`), against
 * base slot b or none. */
static void took(amp_packwrite *pw, size_t at, const git_oid *id, uint64_t off,
		 const struct slot *b)
{
	pw->slots[at].crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), pw->buf + off,
					    (uInt)(pw->len - off));
	pw->slots[at].used = 1;
	git_oid_cpy(&pw->slots[at].id, id);
	pw->slots[at].offset = off;
	pw->slots[at].depth = b ? b->depth + 1 : 0;
	pw->count++;
}

int amp_packwrite_add(amp_packwrite *pw, const git_oid *id, git_object_t type,
		      const void *data, size_t len, const git_oid *base,
		      const void *base_data, size_t base_len, amp_error *err)
{
	size_t at = slot_of(pw, id), hdr, dlen = 0, bound;
	struct slot *b = NULL;
	unsigned char head[32];
	unsigned ptype = (unsigned)type;
	uint64_t off = pw->len;
	const char *why;
	z_stream *zs;
	int rc;

	if ((why = refusal(pw, at)))
		return amp_error_set(err, AMP_EIO, "", "cannot pack %s: %s",
				     git_oid_tostr_s(id), why);
	if (base && amp_packwrite_can_base(pw, base) &&
	    (dlen = make_delta(pw, base_data, base_len, data, len)) > 0) {
		b = &pw->slots[slot_of(pw, base)];
		data = pw->delta;
		len = dlen;
		ptype = OBJ_OFS_DELTA;
	}
	hdr = entry_head(head, ptype, len, b ? off - b->offset : 0);
	if (!(zs = stream_for(pw, len)))
		return amp_error_set(err, AMP_EIO, "", "zlib: cannot reset a stream");
	bound = deflateBound(zs, len);
	if (grow(&pw->buf, &pw->alloc, pw->len + hdr + bound + 20) < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	memcpy(pw->buf + pw->len, head, hdr);
	zs->next_in = (unsigned char *)data;
	zs->avail_in = (uInt)len;
	zs->next_out = pw->buf + pw->len + hdr;
	zs->avail_out = (uInt)bound;
	if ((rc = deflate(zs, Z_FINISH)) != Z_STREAM_END)
		return amp_error_set(err, AMP_EIO, "", "zlib: cannot compress %s (%d)",
				     git_oid_tostr_s(id), rc);
	pw->len += hdr + zs->total_out;
	took(pw, at, id, off, b);
	return AMP_OK;
}

int amp_packwrite_add_raw(amp_packwrite *pw, const git_oid *id, unsigned ptype, size_t size,
			  const git_oid *base, const void *data, size_t len, amp_error *err)
{
	size_t at = slot_of(pw, id), hdr;
	struct slot *b = NULL;
	unsigned char head[32];
	uint64_t off = pw->len;
	const char *why = refusal(pw, at);

	if (!why && ptype == OBJ_OFS_DELTA) {
		b = base ? &pw->slots[slot_of(pw, base)] : NULL;
		if (!b || !b->used)
			why = "its delta base is not in the pack";
	} else if (!why && (ptype < GIT_OBJECT_COMMIT || ptype > GIT_OBJECT_TAG)) {
		why = "not a whole object or an OFS_DELTA";
	}
	if (why)
		return amp_error_set(err, AMP_EIO, "", "cannot pack %s: %s",
				     git_oid_tostr_s(id), why);
	hdr = entry_head(head, ptype, size, b ? off - b->offset : 0);
	if (grow(&pw->buf, &pw->alloc, pw->len + hdr + len + 20) < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	memcpy(pw->buf + pw->len, head, hdr);
	memcpy(pw->buf + pw->len + hdr, data, len);
	pw->len += hdr + len;
	took(pw, at, id, off, b);
	return AMP_OK;
}

/* Ends the pack (object count, trailer) and points *data and *len at it,
 * owned by pw.  No object can be added after. */
static void finish(amp_packwrite *pw, const unsigned char **data, size_t *len)
{
	struct sha1_ctx sha;

	if (!pw->finished) {
		pw->buf[8] = (unsigned char)(pw->count >> 24);
		pw->buf[9] = (unsigned char)(pw->count >> 16);
		pw->buf[10] = (unsigned char)(pw->count >> 8);
		pw->buf[11] = (unsigned char)pw->count;
		sha1_init(&sha);
		sha1_update(&sha, pw->len, pw->buf);
		/* room for the trailer was kept by every add (and new) */
		sha1_digest(&sha, SHA1_DIGEST_SIZE, pw->buf + pw->len);
		pw->len += 20;
		pw->finished = 1;
	}
	*data = pw->buf;
	*len = pw->len;
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static int cmp_slot(const void *a, const void *b)
{
	return git_oid_cmp(&(*(const struct slot *const *)a)->id,
			   &(*(const struct slot *const *)b)->id);
}

/* The version 2 index of the finished pack (gitformat-pack): fan-out,
 * names, CRCs, offsets (31 bits, else an index into a table of 64-bit
 * ones), the pack's checksum, its own.  *out is the caller's to free. */
static int build_index(const amp_packwrite *pw, unsigned char **out, size_t *outlen)
{
	const struct slot **sorted = malloc((pw->count ? pw->count : 1) * sizeof(*sorted));
	size_t n = 0, i, big = 0, len, at;
	uint32_t fan[256] = { 0 };
	unsigned char *idx = NULL, *p;
	struct sha1_ctx sha;

	if (!sorted)
		return -1;
	for (i = 0; i <= pw->mask; i++)
		if (pw->slots[i].used) {
			sorted[n++] = &pw->slots[i];
			big += pw->slots[i].offset >= 0x80000000u;
		}
	qsort(sorted, n, sizeof(*sorted), cmp_slot);
	len = 8 + 256 * 4 + n * (20 + 4 + 4) + big * 8 + 20 + 20;
	if (!(idx = malloc(len))) {
		free(sorted);
		return -1;
	}
	memcpy(idx, "\377tOc\0\0\0\2", 8);
	for (i = 0; i < n; i++)
		fan[sorted[i]->id.id[0]]++;
	for (i = 1; i < 256; i++)
		fan[i] += fan[i - 1];
	for (i = 0, p = idx + 8; i < 256; i++, p += 4)
		put32(p, fan[i]);
	for (i = 0; i < n; i++, p += 20)
		memcpy(p, sorted[i]->id.id, 20);
	for (i = 0; i < n; i++, p += 4)
		put32(p, sorted[i]->crc);
	at = (size_t)(p - idx) + n * 4; /* the 64-bit table */
	for (i = 0, big = 0; i < n; i++, p += 4) {
		uint64_t off = sorted[i]->offset;

		if (off < 0x80000000u) {
			put32(p, (uint32_t)off);
			continue;
		}
		put32(p, 0x80000000u | (uint32_t)big);
		put32(idx + at + big * 8, (uint32_t)(off >> 32));
		put32(idx + at + big * 8 + 4, (uint32_t)off);
		big++;
	}
	p += big * 8;
	memcpy(p, pw->buf + pw->len - 20, 20);
	p += 20;
	sha1_init(&sha);
	sha1_update(&sha, (size_t)(p - idx), idx);
	sha1_digest(&sha, SHA1_DIGEST_SIZE, p);
	free(sorted);
	*out = idx;
	*outlen = len;
	return 0;
}

/* Writes data to dir/<tmp>, fsyncs it when asked, renames it to
 * dir/<final>, read-only as git makes its packs. */
static int place(const char *dir, const char *final, const unsigned char *data,
		 size_t len, int sync, amp_error *err)
{
	char tmp[4096], path[4096];
	size_t done = 0;
	ssize_t n;
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s/tmp_amp_pack_XXXXXX", dir) >= (int)sizeof(tmp) ||
	    snprintf(path, sizeof(path), "%s/%s", dir, final) >= (int)sizeof(path))
		return amp_error_set(err, AMP_EIO, "", "path too long: %s", dir);
	if ((fd = mkstemp(tmp)) < 0)
		return amp_error_set(err, AMP_EIO, "", "cannot create a file in %s: %s", dir,
				     strerror(errno));
	while (done < len && ((n = write(fd, data + done, len - done)) > 0 || errno == EINTR))
		done += n > 0 ? (size_t)n : 0;
	if (done < len || fchmod(fd, 0444) < 0 || (sync && fsync(fd) < 0)) {
		int e = errno;

		close(fd);
		unlink(tmp);
		return amp_error_set(err, AMP_EIO, "", "cannot write %s: %s", tmp, strerror(e));
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		int e = errno;

		unlink(tmp);
		return amp_error_set(err, AMP_EIO, "", "cannot write %s: %s", path, strerror(e));
	}
	return AMP_OK;
}

int amp_packwrite_store(amp_packwrite *pw, const char *pack_dir, int sync,
			amp_error *err)
{
	const unsigned char *pack;
	unsigned char *idx = NULL;
	size_t pack_len, idx_len;
	char name[64], hex[41];
	int status, i, fd;

	finish(pw, &pack, &pack_len);
	for (i = 0; i < 20; i++)
		snprintf(hex + 2 * i, 3, "%02x", pack[pack_len - 20 + i]);
	if (build_index(pw, &idx, &idx_len) < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	/* The pack first: git and libgit2 see a pack by its index. */
	snprintf(name, sizeof(name), "pack-%s.pack", hex);
	if ((status = place(pack_dir, name, pack, pack_len, sync, err)) < 0)
		goto cleanup;
	snprintf(name, sizeof(name), "pack-%s.idx", hex);
	if ((status = place(pack_dir, name, idx, idx_len, sync, err)) < 0)
		goto cleanup;
	if (sync && (fd = open(pack_dir, O_RDONLY | O_DIRECTORY)) >= 0) {
		if (fsync(fd) < 0)
			status = amp_error_set(err, AMP_EIO, "", "cannot fsync %s: %s", pack_dir,
					       strerror(errno));
		close(fd);
	}
cleanup:
	free(idx);
	return status;
}

const unsigned char *amp_packwrite_checksum(const amp_packwrite *pw)
{
	return pw->finished ? pw->buf + pw->len - 20 : NULL;
}

void amp_packwrite_free(amp_packwrite *pw)
{
	if (!pw)
		return;
	if (pw->zs_ready)
		deflateEnd(&pw->zs);
	if (pw->zs_big_ready)
		deflateEnd(&pw->zs_big);
	free(pw->buf);
	free(pw->slots);
	free(pw->delta);
	free(pw);
}
