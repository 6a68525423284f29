/*
 * reccache.c - the records of a long task, parsed once (reccache.h).
 *
 * The file: "AMPRECS1", the number of entries (4 bytes, little-endian),
 * each entry as its blob id (20 bytes), the length of its value (4 bytes)
 * and the value, then the CRC-32 of everything before it (4 bytes).  A
 * value is a tag byte and what it needs:
 *
 *   '{' count, then count times: key length, key bytes, value
 *   '[' count, then count values
 *   '"' length, bytes
 *   'i' a json_int_t, 'd' the bits of a double, 8 bytes little-endian
 *   't' true, 'f' false, 'n' null
 *
 * where count and length are unsigned LEB128 varints.  Members keep the
 * order jansson gave them, so a decoded record prints as the parsed one.
 */
#include "reccache.h"
#include "json/json.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "record/record.h"
#include "cache.h"
#include "base/tempfile.h"
#include "base/util.h"

#define MAGIC "AMPRECS1"
#define MAGIC_LEN 8
/* After the magic, the build that wrote the file (amp_build_id, cache.h:
 * 32 hex digits); a file of another build is not read. */
#define BUILD_LEN 32
#define COUNT_AT (MAGIC_LEN + BUILD_LEN)
#define HEADER_LEN (COUNT_AT + 4)
#define ENTRY_HEADER_LEN (GIT_OID_RAWSZ + 4)
/* A record is at most AMP_LIMIT_MESSAGE_BYTES as JSON, and its binary
 * form is no larger; a task's file is bounded by its records. */
#define FILE_MAX ((size_t)1 << 31)

struct rslot {
	git_oid id;
	uint32_t off; /* of the value; 0: an empty slot (the header is there) */
	uint32_t len;
};

struct amp_reccache {
	unsigned char *buf;
	struct rslot *slot;
	size_t nslots; /* a power of two */
};

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void set32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void set64(unsigned char *p, uint64_t v)
{
	set32(p, (uint32_t)v);
	set32(p + 4, (uint32_t)(v >> 32));
}

static struct rslot *find_slot(const amp_reccache *c, const git_oid *id)
{
	size_t h;

	memcpy(&h, id->id, sizeof(h));
	for (h &= c->nslots - 1; c->slot[h].off && !git_oid_equal(&c->slot[h].id, id);
	     h = (h + 1) & (c->nslots - 1))
		;
	return &c->slot[h];
}

void amp_reccache_free(amp_reccache *c)
{
	if (!c)
		return;
	free(c->buf);
	free(c->slot);
	free(c);
}

static int cache_path(char *buf, size_t bufsz, const char *state_dir, const char *task_id)
{
	int n = snprintf(buf, bufsz, "%s/records/%s", state_dir, task_id);

	return n > 0 && (size_t)n < bufsz ? 0 : -1;
}

/* Reads the whole file; 0, or -1 when it is absent, not a regular file,
 * too short or too big, or unreadable (amp_cache_read). */
static int read_file(const char *path, unsigned char **out, size_t *size)
{
	char *buf;

	if (amp_cache_read(path, FILE_MAX, &buf, size) < 0)
		return -1;
	if (*size < HEADER_LEN + 4) {
		free(buf);
		return -1;
	}
	*out = (unsigned char *)buf;
	return 0;
}

amp_reccache *amp_reccache_load(const char *state_dir, const char *task_id)
{
	char path[PATH_MAX];
	amp_reccache *c = NULL;
	unsigned char *buf = NULL;
	size_t size = 0, off, i, n;
	uint32_t len;

	if (cache_path(path, sizeof(path), state_dir, task_id) < 0 ||
	    read_file(path, &buf, &size) < 0)
		return NULL;
	if (memcmp(buf, MAGIC, MAGIC_LEN) || strlen(amp_build_id()) != BUILD_LEN ||
	    memcmp(buf + MAGIC_LEN, amp_build_id(), BUILD_LEN) ||
	    crc32(0L, buf, (uInt)(size - 4)) != get32(buf + size - 4))
		goto invalid;
	n = get32(buf + COUNT_AT);
	/* Each entry takes its header and a tag at least. */
	if (n > (size - HEADER_LEN - 4) / (ENTRY_HEADER_LEN + 1) ||
	    !(c = calloc(1, sizeof(*c))))
		goto invalid;
	for (c->nslots = 16; c->nslots < n * 2; c->nslots *= 2)
		;
	if (!(c->slot = calloc(c->nslots, sizeof(*c->slot))))
		goto invalid;
	for (i = 0, off = HEADER_LEN; i < n; i++) {
		git_oid id;
		struct rslot *s;

		if (size - 4 - off < ENTRY_HEADER_LEN)
			goto invalid;
		memcpy(id.id, buf + off, GIT_OID_RAWSZ);
		len = get32(buf + off + GIT_OID_RAWSZ);
		off += ENTRY_HEADER_LEN;
		if (!len || len > size - 4 - off)
			goto invalid;
		if (!(s = find_slot(c, &id))->off) { /* the first one wins */
			git_oid_cpy(&s->id, &id);
			s->off = (uint32_t)off;
			s->len = len;
		}
		off += len;
	}
	if (off != size - 4)
		goto invalid;
	c->buf = buf;
	return c;
invalid:
	free(buf);
	amp_reccache_free(c);
	return NULL;
}

/* ---- decoding ------------------------------------------------------------- */

struct reader {
	const unsigned char *p, *end;
};

static int get_varint(struct reader *r, size_t *out)
{
	size_t v = 0;
	int shift;

	for (shift = 0; shift < 64 && r->p < r->end; shift += 7) {
		unsigned char b = *r->p++;

		v |= (size_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

/* The bytes of a string or a key: UTF-8 without a NUL, as amp's parser
 * reads them (jansson's own check, in json_stringn, cost a third of the
 * decoding). */
static const char *get_bytes(struct reader *r, size_t *len)
{
	const char *s;

	if (get_varint(r, len) < 0 || *len > (size_t)(r->end - r->p))
		return NULL;
	s = (const char *)r->p;
	if (!amp_utf8_validn(s, *len))
		return NULL;
	r->p += *len;
	return s;
}

static json_t *decode(struct reader *r, int depth)
{
	json_t *v = NULL, *item;
	const char *s;
	size_t n, i, len;
	unsigned char tag;
	uint64_t bits;
	double d;

	if (r->p >= r->end)
		return NULL;
	tag = *r->p++;
	switch (tag) {
	case '{':
	case '[':
		/* Records are JSON objects nested at most AMP_LIMIT_DEPTH. */
		if (depth >= AMP_LIMIT_DEPTH || get_varint(r, &n) < 0 ||
		    n > (size_t)(r->end - r->p) || !(v = tag == '{' ? json_object() : json_array()))
			return NULL;
		for (i = 0; i < n; i++) {
			s = NULL;
			len = 0;
			if ((tag == '{' && !(s = get_bytes(r, &len))) ||
			    !(item = decode(r, depth + 1)))
				goto fail;
			if (tag == '[' ? json_array_append_new(v, item) < 0 :
			    json_object_setn_new_nocheck(v, s, len, item) < 0 ||
			    json_object_size(v) != i + 1) /* a duplicate */
				goto fail;
		}
		return v;
	case '"':
		if (!(s = get_bytes(r, &len)))
			return NULL;
		return json_stringn_nocheck(s, len);
	case 'i':
	case 'd':
		if (r->end - r->p < 8)
			return NULL;
		bits = get64(r->p);
		r->p += 8;
		if (tag == 'i')
			return json_integer((json_int_t)(int64_t)bits);
		memcpy(&d, &bits, sizeof(d));
		return json_real(d); /* NULL when not finite */
	case 't':
		return json_true();
	case 'f':
		return json_false();
	case 'n':
		return json_null();
	default:
		return NULL;
	}
fail:
	json_decref(v);
	return NULL;
}

/* ---- the decoding arena (amp_reccache_arena) ------------------------------ */

#if defined(__SANITIZE_ADDRESS__)
#define ARENA_POSSIBLE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_POSSIBLE 0
#endif
#endif
#ifndef ARENA_POSSIBLE
#define ARENA_POSSIBLE 1
#endif

/* One reservation of address space, whose pages the kernel gives memory
 * as they are first written (a record takes about 2 KiB of it).  Being
 * one range, it tells a value of the arena from one of malloc in one
 * comparison: 8 blocks of 1 MiB searched at each free, and malloc past
 * them, were a third of a send into a task of 10,000 records (310M ->
 * 206M instructions, callgrind; peak memory 34.7 -> 32.0 MB). */
#define ARENA_SIZE ((size_t)32 << 20)
/* Larger values (a long string) come from malloc as usual. */
#define ARENA_LARGEST 4096

static struct {
	int enabled;  /* amp_reccache_arena was called */
	int decoding; /* inside amp_reccache_get */
	char *base;   /* the reservation; NULL: not made (or failed) */
	int failed;
	size_t used;
} arena;

static void *arena_malloc(size_t size)
{
	size_t need = (size + 15) & ~(size_t)15;
	char *b;

	if (!arena.decoding || !need || need > ARENA_LARGEST)
		return malloc(size);
	if (!arena.base && !arena.failed) {
		void *p = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED)
			arena.failed = 1;
		else
			arena.base = p;
	}
	if (!arena.base || ARENA_SIZE - arena.used < need)
		return malloc(size);
	b = arena.base + arena.used;
	arena.used += need;
	return b;
}

/* Every value jansson frees comes here once the arena is on: a value of
 * the arena is given back with the process, anything else to free(). */
static void arena_free(void *p)
{
	if (arena.base && (char *)p >= arena.base && (char *)p < arena.base + ARENA_SIZE)
		return;
	free(p);
}

void amp_reccache_arena(void)
{
	if (ARENA_POSSIBLE && !arena.enabled) {
		amp_json_set_alloc(arena_malloc, arena_free);
		arena.enabled = 1;
	}
}

json_t *amp_reccache_get(amp_reccache *c, const git_oid *id)
{
	struct rslot *s;
	struct reader r;
	json_t *doc;

	if (!c || !(s = find_slot(c, id))->off)
		return NULL;
	r.p = c->buf + s->off;
	r.end = r.p + s->len;
	arena.decoding = arena.enabled;
	doc = decode(&r, 0);
	arena.decoding = 0;
	if (!json_is_object(doc) || r.p != r.end) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* ---- encoding ------------------------------------------------------------- */

struct writer {
	unsigned char *buf;
	size_t len, cap;
	int failed;
};

static unsigned char *reserve(struct writer *w, size_t n)
{
	unsigned char *more;
	size_t cap;

	if (w->failed)
		return NULL;
	if (n > w->cap - w->len) {
		for (cap = w->cap ? w->cap : 65536; cap - w->len < n; cap *= 2)
			if (cap > FILE_MAX) {
				w->failed = 1;
				return NULL;
			}
		if (!(more = realloc(w->buf, cap))) {
			w->failed = 1;
			return NULL;
		}
		w->buf = more;
		w->cap = cap;
	}
	return w->buf + w->len;
}

static void put(struct writer *w, const void *data, size_t n)
{
	unsigned char *p = reserve(w, n);

	if (p) {
		memcpy(p, data, n);
		w->len += n;
	}
}

static void put_byte(struct writer *w, unsigned char b)
{
	put(w, &b, 1);
}

static void put_varint(struct writer *w, size_t v)
{
	unsigned char b[10];
	size_t n = 0;

	do {
		b[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		b[n] |= v ? 0x80 : 0;
		n++;
	} while (v);
	put(w, b, n);
}

static void encode(struct writer *w, const json_t *v)
{
	unsigned char bytes[8];
	void *it;
	size_t i;
	uint64_t bits;
	double d;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		put_byte(w, '{');
		put_varint(w, json_object_size(v));
		for (it = json_object_iter((json_t *)v); it;
		     it = json_object_iter_next((json_t *)v, it)) {
			put_varint(w, json_object_iter_key_len(it));
			put(w, json_object_iter_key(it), json_object_iter_key_len(it));
			encode(w, json_object_iter_value(it));
		}
		break;
	case JSON_ARRAY:
		put_byte(w, '[');
		put_varint(w, json_array_size(v));
		for (i = 0; i < json_array_size(v); i++)
			encode(w, json_array_get(v, i));
		break;
	case JSON_STRING:
		put_byte(w, '"');
		put_varint(w, json_string_length(v));
		put(w, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		put_byte(w, 'i');
		set64(bytes, (uint64_t)(int64_t)json_integer_value(v));
		put(w, bytes, 8);
		break;
	case JSON_REAL:
		put_byte(w, 'd');
		d = json_real_value(v);
		memcpy(&bits, &d, sizeof(bits));
		set64(bytes, bits);
		put(w, bytes, 8);
		break;
	case JSON_TRUE:
		put_byte(w, 't');
		break;
	case JSON_FALSE:
		put_byte(w, 'f');
		break;
	default:
		put_byte(w, 'n');
		break;
	}
}

/* One entry: the id, the length and the value, `raw` when not NULL (an
 * entry of the old file, copied) or `doc` encoded. */
static void put_entry(struct writer *w, const git_oid *id, const unsigned char *raw,
		      size_t rawlen, const json_t *doc)
{
	size_t at;

	put(w, id->id, GIT_OID_RAWSZ);
	at = w->len;
	put(w, "\0\0\0\0", 4);
	if (raw)
		put(w, raw, rawlen);
	else
		encode(w, doc);
	if (!w->failed) {
		if (w->len - at - 4 > UINT32_MAX)
			w->failed = 1;
		else
			set32(w->buf + at, (uint32_t)(w->len - at - 4));
	}
}

int amp_reccache_save(const char *state_dir, const char *task_id, const amp_reccache *old,
		      const git_oid *ids, const amp_entry *entries, size_t n)
{
	char path[PATH_MAX], dir[PATH_MAX];
	struct writer w = { 0 };
	unsigned char *kept = NULL;
	size_t i, count = 0, extra = 0;
	struct rslot *s;
	int status = -1;

	if (cache_path(path, sizeof(path), state_dir, task_id) < 0 ||
	    snprintf(dir, sizeof(dir), "%s/records", state_dir) >= (int)sizeof(dir) ||
	    (old && !(kept = calloc(old->nslots, 1))))
		goto cleanup;
	put(&w, MAGIC, MAGIC_LEN);
	put(&w, amp_build_id(), BUILD_LEN);
	put(&w, "\0\0\0\0", 4);
	for (i = 0; i < n; i++) {
		s = old ? find_slot(old, &ids[i]) : NULL;
		if (s && s->off && kept[s - old->slot])
			continue; /* the same record twice */
		if (s && s->off)
			kept[s - old->slot] = 1;
		put_entry(&w, &ids[i], s && s->off ? old->buf + s->off : NULL,
			  s && s->off ? s->len : 0, entries[i].doc);
		count++;
	}
	for (i = 0; old && i < old->nslots && extra < n; i++)
		if (old->slot[i].off && !kept[i]) {
			put_entry(&w, &old->slot[i].id, old->buf + old->slot[i].off,
				  old->slot[i].len, NULL);
			count++;
			extra++;
		}
	if (!reserve(&w, 4) || count > UINT32_MAX)
		goto cleanup;
	set32(w.buf + COUNT_AT, (uint32_t)count);
	set32(w.buf + w.len, (uint32_t)crc32(0L, w.buf, (uInt)w.len));
	w.len += 4;
	if ((mkdir(state_dir, 0777) < 0 && errno != EEXIST) ||
	    (mkdir(dir, 0777) < 0 && errno != EEXIST) ||
	    amp_tempfile_write_file(path, w.buf, w.len, 0) < 0)
		goto cleanup;
	status = 0;
cleanup:
	free(kept);
	free(w.buf);
	return status;
}
