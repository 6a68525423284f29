/* pack.c - amp's own storage maintenance (pack.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <nettle/sha1.h>

#include "pack.h"
#include "packcat.h"
#include "packgc.h"
#include "packwrite.h"
#include "base/proc.h"
#include "base/util.h"

int amp_pack_limit(amp_store *st, long long *limit, amp_error *err)
{
	char buf[64], what[64];
	const char *key = "amp.autoPack";

	*limit = AMP_AUTOPACK_DEFAULT;
	/* A repository that turned git's own auto gc down or off expects
	 * the same of amp unless told otherwise. */
	if (!amp_store_config(st, key, buf, sizeof(buf))) {
		key = "gc.auto";
		if (!amp_store_config(st, key, buf, sizeof(buf)))
			return AMP_OK;
	}
	snprintf(what, sizeof(what), "git config %s", key);
	return amp_parse_int(what, buf, 0, AMP_AUTOPACK_MAX, limit, err);
}

long long amp_pack_estimate(amp_store *st)
{
	char dir[PATH_MAX + 32];
	DIR *d;
	struct dirent *e;
	long long n = 0;

	if (snprintf(dir, sizeof(dir), "%s/17", amp_store_objects_dir(st)) >= (int)sizeof(dir))
		return 0;
	if (!(d = opendir(dir)))
		return 0;
	/* git's estimate (builtin/gc.c too_many_loose_objects): objects are
	 * spread evenly over the 256 fan-out directories by their hash. */
	while ((e = readdir(d)))
		if (strlen(e->d_name) == 38 && strspn(e->d_name, "0123456789abcdef") == 38)
			n++;
	closedir(d);
	return n * 256;
}

long long amp_pack_packs(amp_store *st)
{
	char dir[PATH_MAX + 32];
	DIR *d;
	struct dirent *e;
	size_t n;
	long long packs = 0;

	if (snprintf(dir, sizeof(dir), "%s/pack", amp_store_objects_dir(st)) >= (int)sizeof(dir))
		return 0;
	if (!(d = opendir(dir)))
		return 0;
	while ((e = readdir(d)))
		if ((n = strlen(e->d_name)) > 5 && !strcmp(e->d_name + n - 5, ".pack") &&
		    !strncmp(e->d_name, "pack-", 5))
			packs++;
	closedir(d);
	return packs;
}

/* 1 when the repository needs a repack: the loose objects past `limit`,
 * or more packs than AMP_AUTOPACK_PACKS (what amp import's batches and
 * fetches leave: every lookup tries each pack). */
static int due(amp_store *st, long long limit, long long packs)
{
	return limit > 0 && (amp_pack_estimate(st) > limit || packs > AMP_AUTOPACK_PACKS);
}

/* The value of "key: N" in `git count-objects -v` output, 0 if absent. */
static long long counted(const char *out, const char *key)
{
	size_t n = strlen(key);
	const char *p = out;

	while (p && *p) {
		if (!strncmp(p, key, n) && p[n] == ':')
			return strtoll(p + n + 1, NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return 0;
}

int amp_pack_count(amp_store *st, amp_pack_counts *c, amp_error *err)
{
	const char *gitdir = git_repository_commondir(amp_store_repo(st));
	const char *argv[] = { "git", "--git-dir", gitdir, "count-objects", "-v", NULL };
	char *out = NULL;
	int code = 0, status;

	memset(c, 0, sizeof(*c));
	if ((status = amp_run(argv, NULL, 0, &out, NULL, &code, err)) < 0)
		return status;
	if (code != 0) {
		status = amp_error_set(err, AMP_EIO, "", "git count-objects failed (exit %d)", code);
		goto cleanup;
	}
	c->loose = counted(out, "count");
	c->loose_kib = counted(out, "size");
	c->packs = counted(out, "packs");
	c->pack_kib = counted(out, "size-pack");
cleanup:
	free(out);
	return status;
}

/*
 * The attributes the repack reads instead of core.attributesFile: records
 * (tasks/<year>/<shard>/<task>/<record>.json) are never stored as deltas.
 * git's pack-objects chains similar small blobs up to 50 deltas deep, so
 * reading a record meant applying up to 50 deltas and kept libgit2's delta
 * base cache (16 MiB, a constant of the library) full: amp status's first
 * listing at 100k messages held 36 MB of heap instead of 19 MB, and the
 * repack after an import of them took 30 s instead of 17 s, for 0.3 KB
 * more disk per message.  Writes <state dir>/pack-attributes when it is
 * not already what it should be (under the gc lock) and puts
 * "core.attributesFile=<that path>" into opt; -1 when it cannot (the
 * repack then deltifies as git chooses).
 */
static int attributes(amp_store *st, char *opt, size_t size)
{
	/* Layout 1's records and layout 2's (store.h "Layout") */
	static const char attrs[] = "tasks/*/*/*/*.json -delta\ntasks/*/*/*/*/*/*/*.json -delta\n";

	return amp_pack_attributes(st, "pack-attributes", attrs, opt, size);
}

/* 1 when the pack directory holds a multi-pack index: git repack
 * --write-midx wrote it and rewrites it, so git repacks there. */
static int has_midx(amp_store *st)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/pack/multi-pack-index", amp_store_objects_dir(st));
	return access(path, F_OK) == 0;
}

/* `git repack -d --geometric=2` (argv: git and its -c options), for a
 * repository with a multi-pack index, under rollup.lock: git chooses the
 * packs itself, so no roll-up may run meanwhile. */
static int git_repack(amp_store *st, const char **argv, size_t k, amp_error *err)
{
	int rfd, busy, code = 0, status;

	argv[k++] = "repack";
	argv[k++] = "-d";
	argv[k++] = "-q";
	argv[k++] = "--geometric=2";
	argv[k] = NULL;
	if ((rfd = amp_pack_lock(st, "rollup.lock", 1, &busy, err)) < 0)
		return AMP_EIO;
	status = amp_run(argv, NULL, 0, NULL, NULL, &code, err);
	close(rfd);
	if (status == AMP_OK && code != 0)
		status = amp_error_set(err, AMP_EIO, "", "git repack failed (exit %d)", code);
	return status;
}

/* packcat.h amp_pack_concat_deltified, then the packs it replaced let go
 * of (the lookups that follow read the new one): AMP_OK or AMP_EIO. */
static int concat_deltified(amp_store *st, amp_error *err)
{
	char dir[PATH_MAX];
	size_t taken = 0;
	int status;

	snprintf(dir, sizeof(dir), "%s/pack", amp_store_objects_dir(st));
	status = amp_pack_concat_deltified(st, dir, amp_store_fsync(st), &taken, err);
	if (taken)
		amp_store_release_packs(st);
	return status == AMP_NOOP ? AMP_OK : status;
}

int amp_pack_run(amp_store *st, int auto_, int *ran, amp_pack_counts *before,
		 amp_pack_counts *after, amp_error *err)
{
	const char *gitdir = git_repository_commondir(amp_store_repo(st));
	char attrs[PATH_MAX + 32];
	/* The pack and its index are on disk before the loose copies or the
	 * packs it holds go (amp.fsync: what amp reported written survives
	 * a power cut, packed or not). */
	const char *argv[16] = { "git", "--git-dir", gitdir, "-c",
				 amp_store_fsync(st) ? "core.fsync=objects,pack-metadata,reference" :
						       "core.fsync=none",
				 "-c", "repack.writeBitmaps=false", "-c", "pack.writeBitmaps=false" };
	size_t k = 9;
	long long limit;
	int fd, busy, did = 0, status;

	*ran = 0;
	if ((status = amp_pack_limit(st, &limit, err)) < 0)
		return status;
	if ((fd = amp_pack_lock(st, "gc.lock", !auto_, &busy, err)) < 0)
		return busy ? AMP_OK : AMP_EIO;
	/* What killed or failed writers, roll-ups and git gc left (a pack
	 * without its index, git's tmp_pack_*): git repack keeps them and
	 * git count-objects warns of them at every run. */
	amp_store_sweep(st);
	amp_pack_unclaim(st);
	/* Checked under the lock: the repack that held it may have done the
	 * work already. */
	if (auto_ && !due(st, limit, amp_pack_packs(st)))
		goto cleanup;
	if (before && (status = amp_pack_count(st, before, err)) < 0)
		goto cleanup;
	if (!has_midx(st)) {
		status = concat_deltified(st, err);
		if (status >= 0)
			status = amp_pack_gc_geometric(st, argv + 3, &did, err);
	} else {
		if (attributes(st, attrs, sizeof(attrs)) == 0) {
			argv[k++] = "-c";
			argv[k++] = attrs;
		}
		status = git_repack(st, argv, k, err);
	}
	if (status < 0)
		goto cleanup;
	*ran = 1;
	if (after && (status = amp_pack_count(st, after, err)) < 0)
		goto cleanup;
cleanup:
	close(fd);
	return status;
}

/* ---- amp's own roll-up of small packs ---------------------------------- */

/* One entry of a small pack, parsed (gitformat-pack). */
struct pack_entry {
	uint32_t off;        /* in the pack */
	uint32_t pos;        /* in the index: the name is names[pos] */
	unsigned type;       /* 1-4 whole, 6 OFS_DELTA */
	size_t size;         /* inflated */
	long base;           /* OFS_DELTA: the base's index position */
	const unsigned char *data; /* the zlib stream */
	size_t len;
};

/* One small pack read whole, checked, and its entries in pack order. */
struct small_pack {
	char base[PATH_MAX + NAME_MAX + 2]; /* <pack dir>/pack-<hex>, no extension */
	unsigned char *idx, *pack;
	size_t idx_len, pack_len;
	uint32_t n;
	struct pack_entry *entries; /* by offset */
};

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Index version 2 (gitformat-pack): header, fan-out, names, CRCs, 32-bit
 * offsets; a small pack needs no table of 64-bit ones. */
#define IDX_NAMES(sp) ((sp)->idx + 8 + 1024)
#define IDX_OFF(sp, i) get32((sp)->idx + 8 + 1024 + (size_t)(sp)->n * 24 + (size_t)(i) * 4)

/* The object count of the index `name` in dir (dirfd, its entries d),
 * from its size, when it is a small pack amp may roll up: a version 2
 * index without 64-bit offsets, of at most AMP_ROLLUP_OBJECTS objects,
 * whose pack is there, at most AMP_ROLLUP_BYTES, with no .keep, .promisor,
 * .mtimes or .bitmap beside it (git's business: kept, partial-clone, cruft
 * or bitmapped packs).  0 when not.  With size_only, the index's size
 * alone (one stat: every write counts them). */
static uint32_t small_objects(int dirfd, const struct amp_dir_names *d, const char *name,
			      int size_only)
{
	static const char *const others[] = { ".keep", ".promisor", ".mtimes", ".bitmap", NULL };
	char sibling[5 + 40 + 16];
	size_t i;
	struct stat sb;
	off_t body;

	if (strlen(name) != 5 + 40 + 4 || strncmp(name, "pack-", 5) || strcmp(name + 45, ".idx") ||
	    strspn(name + 5, "0123456789abcdef") != 40 ||
	    fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sb.st_mode))
		return 0;
	body = sb.st_size - 8 - 1024 - 40;
	if (body <= 0 || body % 28 || body / 28 > AMP_ROLLUP_OBJECTS)
		return 0;
	if (size_only)
		return (uint32_t)(body / 28);
	snprintf(sibling, sizeof(sibling), "%.45s.pack", name);
	if (fstatat(dirfd, sibling, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sb.st_mode) ||
	    sb.st_size > AMP_ROLLUP_BYTES)
		return 0;
	for (i = 0; others[i]; i++) {
		snprintf(sibling, sizeof(sibling), "%.45s%s", name, others[i]);
		if (amp_dir_names_has(d, sibling))
			return 0;
	}
	return (uint32_t)(body / 28);
}

/* The small packs of dir (small_objects, size_only for a quick count), at
 * most `max`, into *out (the caller frees it), but those a running repack
 * claimed (`claimed`, may be NULL): their count.  None in a repository
 * with a multi-pack index: it names the packs it covers, and git repack
 * --write-midx, which writes it, rewrites it. */
static size_t list_small(const char *dir, int size_only, const struct amp_dir_names *claimed,
			 struct amp_pack_name **out, size_t max)
{
	struct amp_dir_names d;
	size_t n = 0, alloc = 0, i;
	uint32_t objects;
	int fd;

	*out = NULL;
	if (amp_dir_names_read(dir, &d) < 0)
		return 0;
	if (amp_dir_names_has(&d, "multi-pack-index") ||
	    (fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		amp_dir_names_free(&d);
		return 0;
	}
	for (i = 0; i < d.n && n < max; i++) {
		if (!(objects = small_objects(fd, &d, d.v[i], size_only)))
			continue;
		if (claimed) {
			char name[5 + 40 + 1];

			snprintf(name, sizeof(name), "%.45s", d.v[i]);
			if (amp_dir_names_has(claimed, name))
				continue;
		}
		if (amp_pack_names_add(out, &n, &alloc, d.v[i], objects) < 0)
			break;
	}
	close(fd);
	amp_dir_names_free(&d);
	return n;
}

static int sha1_matches(const unsigned char *data, size_t len, const unsigned char *want)
{
	unsigned char got[20];
	struct sha1_ctx c;

	sha1_init(&c);
	sha1_update(&c, len, data);
	sha1_digest(&c, SHA1_DIGEST_SIZE, got);
	return !memcmp(got, want, 20);
}

static int by_offset(const void *a, const void *b)
{
	uint32_t x = ((const struct pack_entry *)a)->off, y = ((const struct pack_entry *)b)->off;

	return x < y ? -1 : x > y;
}

/* The position in sp's index of the entry at pack offset `off`, or -1. */
static long entry_at(const struct small_pack *sp, uint64_t off)
{
	size_t lo = 0, hi = sp->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (sp->entries[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sp->n && sp->entries[lo].off == off ? (long)sp->entries[lo].pos : -1;
}

/* Parses entry e (its off set), which ends at end: 0, or -1 when it is
 * not one amp copies (a REF_DELTA, whose base may be outside the pack; a
 * bad header).  Its bytes are the pack's checksum's (load_small), so no
 * CRC-32 is checked: git checks one when it reuses an entry because it
 * does not read the whole pack. */
static int parse_entry(const struct small_pack *sp, uint64_t end, struct pack_entry *e)
{
	const unsigned char *p = sp->pack + e->off, *stop = sp->pack + end;
	uint64_t rel, off = e->off;
	unsigned shift = 4;

	e->type = (*p >> 4) & 7;
	e->size = *p & 15;
	while (*p++ & 0x80) {
		if (p == stop || shift > 57)
			return -1;
		e->size |= (size_t)(*p & 0x7f) << shift;
		shift += 7;
	}
	e->base = -1;
	if (e->type == 6) {
		if (p == stop)
			return -1;
		rel = *p & 0x7f;
		while (*p++ & 0x80) {
			if (p == stop || rel >> 56)
				return -1;
			rel = ((rel + 1) << 7) | (*p & 0x7f);
		}
		if (rel == 0 || rel > off || (e->base = entry_at(sp, off - rel)) < 0)
			return -1;
	} else if (e->type < 1 || e->type > 4) {
		return -1;
	}
	e->data = p;
	e->len = (size_t)(stop - p);
	return e->len ? 0 : -1;
}

/* Reads and checks the small pack `base` (a path without extension): its
 * index's layout, sorted names and checksum, the pack's header, object
 * count and checksum (the one the index names), and every entry's header
 * (parse_entry).
 * 0, or -1 when it is not one amp rolls up as it is (left where it is). */
static int load_small(struct small_pack *sp)
{
	char path[sizeof(sp->base) + 8];
	amp_error ignored;
	uint32_t i, fan_prev = 0;
	uint64_t end;

	snprintf(path, sizeof(path), "%s.idx", sp->base);
	if (amp_read_file_max(path, 8 + 1024 + 28 * AMP_ROLLUP_OBJECTS + 40, (char **)&sp->idx,
			      &sp->idx_len, &ignored) < 0 ||
	    sp->idx_len > 8 + 1024 + 28 * AMP_ROLLUP_OBJECTS + 40 ||
	    sp->idx_len < 8 + 1024 + 40 || (sp->idx_len - 8 - 1024 - 40) % 28 ||
	    memcmp(sp->idx, "\377tOc\0\0\0\2", 8))
		return -1;
	sp->n = (uint32_t)((sp->idx_len - 8 - 1024 - 40) / 28);
	for (i = 0; i < 256; i++) {
		uint32_t f = get32(sp->idx + 8 + 4 * i);

		if (f < fan_prev || f > sp->n)
			return -1;
		fan_prev = f;
	}
	if (fan_prev != sp->n || !sha1_matches(sp->idx, sp->idx_len - 20, sp->idx + sp->idx_len - 20))
		return -1;
	/* sorted and unique: an index git or libgit2 could search */
	for (i = 1; i < sp->n; i++)
		if (memcmp(IDX_NAMES(sp) + 20 * (i - 1), IDX_NAMES(sp) + 20 * i, 20) >= 0)
			return -1;
	snprintf(path, sizeof(path), "%s.pack", sp->base);
	if (amp_read_file_max(path, AMP_ROLLUP_BYTES, (char **)&sp->pack, &sp->pack_len,
			      &ignored) < 0 ||
	    sp->pack_len > AMP_ROLLUP_BYTES || sp->pack_len < 12 + 20 ||
	    memcmp(sp->pack, "PACK", 4) || (get32(sp->pack + 4) != 2 && get32(sp->pack + 4) != 3) ||
	    get32(sp->pack + 8) != sp->n ||
	    memcmp(sp->pack + sp->pack_len - 20, sp->idx + sp->idx_len - 40, 20) ||
	    !sha1_matches(sp->pack, sp->pack_len - 20, sp->pack + sp->pack_len - 20))
		return -1;
	if (!(sp->entries = calloc(sp->n ? sp->n : 1, sizeof(*sp->entries))))
		return -1;
	for (i = 0; i < sp->n; i++) {
		if (IDX_OFF(sp, i) < 12 || IDX_OFF(sp, i) >= sp->pack_len - 20)
			return -1;
		sp->entries[i].off = IDX_OFF(sp, i);
		sp->entries[i].pos = i;
	}
	qsort(sp->entries, sp->n, sizeof(*sp->entries), by_offset);
	for (i = 0; i < sp->n; i++) {
		end = i + 1 < sp->n ? sp->entries[i + 1].off : sp->pack_len - 20;
		if (end <= sp->entries[i].off || parse_entry(sp, end, &sp->entries[i]) < 0)
			return -1;
	}
	return 0;
}

static void free_small(struct small_pack *sp)
{
	free(sp->idx);
	free(sp->pack);
	free(sp->entries);
	memset(sp, 0, sizeof(*sp));
}

/* Copies every entry of sp into pw, in pack order (a delta's base comes
 * first), skipping objects pw holds already (the same object written by
 * two writes). */
static int copy_small(amp_packwrite *pw, const struct small_pack *sp, amp_error *err)
{
	const struct pack_entry *e;
	git_oid id, base;
	uint32_t i;
	int status;

	for (i = 0; i < sp->n; i++) {
		e = &sp->entries[i];
		git_oid_fromraw(&id, IDX_NAMES(sp) + 20 * (size_t)e->pos);
		if (amp_packwrite_has(pw, &id))
			continue;
		if (e->base >= 0)
			git_oid_fromraw(&base, IDX_NAMES(sp) + 20 * (size_t)e->base);
		if ((status = amp_packwrite_add_raw(pw, &id, e->type, e->size,
						    e->base >= 0 ? &base : NULL, e->data, e->len,
						    err)) < 0)
			return status;
	}
	return AMP_OK;
}

/* Deletes the pack `base` (no extension): its index first, so that no
 * reader finds an index without its pack (a reader that opened it keeps
 * reading it; one that looks it up later finds its objects in the new
 * pack: git, libgit2 and repo.c's moved_reader read the directory again
 * when an object is missing). */
static void remove_pack(const char *base)
{
	static const char *const exts[] = { ".idx", ".pack", ".rev", NULL };
	char path[PATH_MAX + NAME_MAX + 16];
	size_t i;

	for (i = 0; exts[i]; i++) {
		snprintf(path, sizeof(path), "%s%s", base, exts[i]);
		unlink(path);
	}
}

int amp_pack_rollup(amp_store *st, size_t *rolled, amp_error *err)
{
	char dir[PATH_MAX], newbase[PATH_MAX + NAME_MAX + 2];
	struct amp_pack_name *names = NULL;
	struct small_pack *packs = NULL;
	amp_packwrite *pw = NULL;
	struct amp_dir_names claimed = { NULL, 0 };
	const unsigned char *sum;
	size_t n, i, tiny = 0, used = 0, objects = 0, bytes = 0;
	int fd = -1, busy, status = AMP_OK;

	if (rolled)
		*rolled = 0;
	if (snprintf(dir, sizeof(dir), "%s/pack", amp_store_objects_dir(st)) >= (int)sizeof(dir))
		return amp_error_set(err, AMP_EIO, "", "path too long: %s/pack",
				     amp_store_objects_dir(st));
	/* The quick look every write takes (the index sizes only): enough
	 * packs the size of a write's?  A fetch leaves packs of 100 objects
	 * or more (fewer, git unpacks them), which may hold REF_DELTAs: they
	 * alone would make every write read them only to leave them. */
	n = list_small(dir, 1, NULL, &names, AMP_ROLLUP_MAX_PACKS);
	for (i = 0; i < n; i++)
		tiny += names[i].objects <= AMP_ROLLUP_TINY;
	if (tiny < AMP_ROLLUP_PACKS)
		goto cleanup;
	free(names);
	names = NULL;
	/* One roll-up at a time; a busy lock means one is running (or a
	 * repack is choosing or deleting its packs), and this write's pack is
	 * the next one's.  A repack that runs meanwhile holds gc.lock, not
	 * this one: writes keep rolling up their packs, but for those it
	 * claimed (packgc.h). */
	if ((fd = amp_pack_lock(st, "rollup.lock", 0, &busy, err)) < 0) {
		status = busy ? AMP_OK : AMP_EIO;
		goto cleanup;
	}
	/* Listed again under the lock: the holder before may have taken them. */
	amp_pack_claimed(st, &claimed);
	n = list_small(dir, 0, &claimed, &names, AMP_ROLLUP_MAX_PACKS);
	if ((n = amp_pack_geometric_split(names, n)) < 2)
		goto cleanup;
	if (!(packs = calloc(n, sizeof(*packs)))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	for (i = 0; i < n && bytes < AMP_ROLLUP_TOTAL; i++) {
		struct small_pack *sp = &packs[used];

		/* A pack amp cannot copy as it is stays for git repack. */
		if (snprintf(sp->base, sizeof(sp->base), "%s/%s", dir, names[i].name) >=
		    (int)sizeof(sp->base) || load_small(sp) < 0) {
			free_small(sp);
			continue;
		}
		objects += sp->n;
		bytes += sp->pack_len;
		used++;
	}
	if (used < 2)
		goto cleanup;
	if ((status = amp_packwrite_new(&pw, objects, err)) < 0)
		goto cleanup;
	for (i = 0; i < used; i++)
		if ((status = copy_small(pw, &packs[i], err)) < 0)
			goto cleanup;
	if ((status = amp_packwrite_store(pw, dir, amp_store_fsync(st), err)) < 0)
		goto cleanup;
	sum = amp_packwrite_checksum(pw);
	snprintf(newbase, sizeof(newbase), "%s/pack-", dir);
	for (i = 0; i < 20; i++)
		snprintf(newbase + strlen(newbase), 3, "%02x", sum[i]);
	/* The new pack and its index are in place (and on disk, with
	 * amp.fsync): only now do the old ones go. */
	for (i = 0; i < used; i++)
		if (strcmp(packs[i].base, newbase))
			remove_pack(packs[i].base);
	if (rolled)
		*rolled = used;
cleanup:
	for (i = 0; packs && i < used; i++)
		free_small(&packs[i]);
	free(packs);
	free(names);
	amp_dir_names_free(&claimed);
	amp_packwrite_free(pw);
	if (fd >= 0)
		close(fd);
	return status;
}

/* Runs amp-gc --auto on the store's repository: next to this program when
 * it is there (the build tree, <prefix>/libexec/amp), else `amp gc` from
 * PATH.  Only returns on failure. */
static void exec_gc(amp_store *st)
{
	const char *gitdir = git_repository_commondir(amp_store_repo(st));
	char dir[PATH_MAX], prog[PATH_MAX + 8];

	if (amp_exe_dir(dir, sizeof(dir)) == 0 &&
	    snprintf(prog, sizeof(prog), "%s/amp-gc", dir) < (int)sizeof(prog) &&
	    access(prog, X_OK) == 0)
		execl(prog, "amp-gc", "--auto", "--quiet", "--repo", gitdir, (char *)NULL);
	execlp("amp", "amp", "gc", "--auto", "--quiet", "--repo", gitdir, (char *)NULL);
}

void amp_pack_maybe(amp_store *st)
{
	amp_error err;
	long long limit;
	int detach = 1, ran, fd, busy;
	long long packs;
	size_t rolled = 0;
	pid_t pid;

	if (amp_pack_limit(st, &limit, &err) < 0 || limit == 0)
		return;
	/* A roll-up that fails leaves the packs as they were, for the next
	 * write or git repack.  One that ran left one pack for those it
	 * rolled: the count needs no second read of the directory. */
	if ((packs = amp_pack_packs(st)) >= AMP_ROLLUP_PACKS &&
	    amp_pack_rollup(st, &rolled, &err) == AMP_OK && rolled)
		packs -= (long long)rolled - 1;
	if (!due(st, limit, packs))
		return;
	if (amp_store_config_bool(st, "amp.autoPackDetach", 1, &detach, &err) < 0)
		return;
	if (!detach) {
		/* The repack's failure is the next write's to retry. */
		(void)amp_pack_run(st, 1, &ran, NULL, NULL, &err);
		return;
	}
	/* While a repack runs (it holds the lock), one started now would
	 * only find the lock busy and exit: with 8 writers on 2 cores, ~10
	 * such starts (two forks, an exec, a repository opened) per repack,
	 * 12% of the CPU of their sends. */
	if ((fd = amp_pack_lock(st, "gc.lock", 0, &busy, &err)) < 0)
		return;
	close(fd);
	/* Twice forked, so the repack is nobody's child to wait for and
	 * outlives a caller that exits at once. */
	if ((pid = fork()) < 0)
		return;
	if (pid == 0) {
		if (setsid() < 0 || fork() != 0)
			_exit(0);
		amp_null_stdio();
		exec_gc(st);
		_exit(127);
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}
