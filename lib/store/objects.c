/*
 * objects.c - the object database a write or a batch puts in front of the
 * repository's (store_int.h): new objects in memory, then one pack.
 */
#include "store_int.h"
#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>
#include <git2/sys/repository.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "packcat.h"
#include "packwrite.h"

/*
 * A batch, and a single write too (update.c write_one), writes its
 * objects to memory (libgit2's mempack, in front of the repository's
 * objects) and from there to a pack: ~7 objects per commit as loose
 * files would cost a file each, where fast-import (the baseline of amp
 * import) writes one pack.  The repository's own odb is put back when the
 * batch ends, whatever happens.
 */

/*
 * The repository's objects, read-only, behind the mempack.  libgit2 asks
 * every backend whether an object exists before it writes one, and on a
 * "no" rescans the pack directory (git_odb_refresh): for a new object,
 * that is every write.  This backend answers "no" at once and has nothing
 * to rescan, so a write costs a hash and a copy; an object written again
 * that the disk had is one duplicate in a pack, which git gc drops.
 */
struct disk_reader {
	git_odb_backend parent;
	git_odb *disk; /* borrowed from the batch */
};

static int copy_out(git_odb_backend *b, git_odb_object *obj, void **data,
		    size_t *len, git_object_t *type)
{
	*len = git_odb_object_size(obj);
	*type = git_odb_object_type(obj);
	if (!(*data = git_odb_backend_data_alloc(b, *len + 1))) {
		git_odb_object_free(obj);
		return -1;
	}
	memcpy(*data, git_odb_object_data(obj), *len);
	git_odb_object_free(obj);
	return 0;
}

static int disk_read(void **data, size_t *len, git_object_t *type, git_odb_backend *b,
		     const git_oid *id)
{
	git_odb_object *obj;
	int rc = git_odb_read(&obj, ((struct disk_reader *)b)->disk, id);

	return rc < 0 ? rc : copy_out(b, obj, data, len, type);
}

static int disk_read_prefix(git_oid *out, void **data, size_t *len, git_object_t *type,
			    git_odb_backend *b, const git_oid *prefix, size_t n)
{
	git_odb_object *obj;
	int rc = git_odb_read_prefix(&obj, ((struct disk_reader *)b)->disk, prefix, n);

	if (rc < 0)
		return rc;
	git_oid_cpy(out, git_odb_object_id(obj));
	return copy_out(b, obj, data, len, type);
}

static int disk_read_header(size_t *len, git_object_t *type, git_odb_backend *b,
			    const git_oid *id)
{
	return git_odb_read_header(len, type, ((struct disk_reader *)b)->disk, id);
}

static int disk_exists(git_odb_backend *b, const git_oid *id)
{
	(void)b;
	(void)id;
	return 0;
}

static void disk_free(git_odb_backend *b)
{
	free(b);
}

/*
 * The mempack, behind a backend that remembers what was written: libgit2
 * 1.5's mempack cannot list its objects, and git_mempack_dump walks the
 * whole tree of every commit, a cost that grows with the SSOT.
 */
struct mem_recorder {
	git_odb_backend parent;
	git_odb_backend *mem; /* the mempack; owned */
	struct recorded {
		git_oid id;
		git_oid base;      /* for a tree: the tree it replaced (zero: none) */
		git_object_t type;
	} *rec;               /* what was written since the last flush */
	size_t n, alloc;
	size_t bytes;         /* their sizes, summed */
};

static int rec_read(void **data, size_t *len, git_object_t *type, git_odb_backend *b,
		    const git_oid *id)
{
	git_odb_backend *mem = ((struct mem_recorder *)b)->mem;

	return mem->read(data, len, type, mem, id);
}

static int rec_read_header(size_t *len, git_object_t *type, git_odb_backend *b,
			   const git_oid *id)
{
	git_odb_backend *mem = ((struct mem_recorder *)b)->mem;

	return mem->read_header(len, type, mem, id);
}

static int rec_exists(git_odb_backend *b, const git_oid *id)
{
	git_odb_backend *mem = ((struct mem_recorder *)b)->mem;

	return mem->exists(mem, id);
}

static int rec_write(git_odb_backend *b, const git_oid *id, const void *data, size_t len,
		     git_object_t type)
{
	struct mem_recorder *r = (struct mem_recorder *)b;

	if (r->n == r->alloc) {
		size_t alloc = r->alloc ? r->alloc * 2 : 1024;
		struct recorded *bigger = realloc(r->rec, alloc * sizeof(*bigger));

		if (!bigger)
			return -1;
		r->rec = bigger;
		r->alloc = alloc;
	}
	memset(&r->rec[r->n], 0, sizeof(r->rec[r->n]));
	git_oid_cpy(&r->rec[r->n].id, id);
	r->rec[r->n++].type = type;
	r->bytes += len;
	return r->mem->write(r->mem, id, data, len, type);
}

static void rec_free(git_odb_backend *b)
{
	struct mem_recorder *r = (struct mem_recorder *)b;

	r->mem->free(r->mem);
	free(r->rec);
	free(r);
}

/* commit.c's tree_insert wrote `tree` in place of `replaced` (the same
 * path on the parent commit), remembered when the write was new (the last
 * object recorded): the pack stores `replaced` as a delta against `tree`
 * when both are in it (amp_store_batch_flush). */
void amp_store_batch_hint(amp_store *st, const git_oid *tree, const git_tree *replaced)
{
	struct mem_recorder *r = st->batch;

	if (r->n && git_oid_equal(&r->rec[r->n - 1].id, tree))
		git_oid_cpy(&r->rec[r->n - 1].base, git_tree_id(replaced));
}

size_t amp_store_batch_bytes(const struct batch_odb *b)
{
	return b->mem ? b->mem->bytes : 0;
}

/* Puts the repository's own odb back. */
void amp_store_batch_close(amp_store *st, struct batch_odb *b)
{
	st->batch = NULL;
	amp_store_docs_share(st, 0);
	free(b->packs);
	if (b->disk)
		git_repository_set_odb(st->repo, b->disk);
	git_odb_free(b->disk);
	git_odb_free(b->odb);
	memset(b, 0, sizeof(*b));
}

/*
 * Puts in front of the repository's odb one of the mempack (behind the
 * recorder), which receives the new objects and is asked first, and of a
 * disk reader, which reads the repository's objects and answers "no" to
 * "does it exist?" at once (see struct disk_reader); with `shared`, reads
 * share up to that many records (amp_store_docs_share).  AMP_EIO with the
 * repository's odb in place.
 */
int amp_store_batch_open(amp_store *st, struct batch_odb *b, size_t shared, amp_error *err)
{
	struct disk_reader *reader = NULL;

	memset(b, 0, sizeof(*b));
	if (!(b->mem = calloc(1, sizeof(*b->mem))) || git_mempack_new(&b->mem->mem) < 0) {
		free(b->mem);
		b->mem = NULL;
		return amp_error_git(err, AMP_EIO, "cannot open an object database in memory");
	}
	b->mem->parent.version = GIT_ODB_BACKEND_VERSION;
	b->mem->parent.read = rec_read;
	b->mem->parent.read_header = rec_read_header;
	b->mem->parent.exists = rec_exists;
	b->mem->parent.write = rec_write;
	b->mem->parent.free = rec_free;
	if (git_repository_odb(&b->disk, st->repo) < 0 || git_odb_new(&b->odb) < 0 ||
	    git_odb_add_backend(b->odb, &b->mem->parent, 2) < 0) {
		rec_free(&b->mem->parent);
		goto fail;
	}
	if (!(reader = calloc(1, sizeof(*reader))))
		goto fail;
	reader->parent.version = GIT_ODB_BACKEND_VERSION;
	reader->parent.read = disk_read;
	reader->parent.read_prefix = disk_read_prefix;
	reader->parent.read_header = disk_read_header;
	reader->parent.exists = disk_exists;
	reader->parent.free = disk_free;
	reader->disk = b->disk;
	if (git_odb_add_backend(b->odb, &reader->parent, 1) < 0) {
		free(reader);
		goto fail;
	}
	if (git_repository_set_odb(st->repo, b->odb) < 0)
		goto fail;
	st->batch = b->mem;
	if (shared)
		amp_store_docs_share(st, shared);
	return AMP_OK;
fail:
	git_odb_free(b->odb); /* and the recorder, once added to it */
	git_odb_free(b->disk);
	memset(b, 0, sizeof(*b));
	return amp_error_git(err, AMP_EIO, "cannot open an object database in memory");
}

/* A tree and the tree that replaced it at the same path (amp_store_batch_hint's
 * link, turned around), sorted by the older's id. */
struct successor {
	git_oid older, newer;
};

static int cmp_successor(const void *a, const void *b)
{
	return git_oid_cmp(&((const struct successor *)a)->older,
			   &((const struct successor *)b)->older);
}

/* The tree that replaced `id` in this batch, or NULL. */
static const git_oid *successor_of(const struct successor *s, size_t n, const git_oid *id)
{
	struct successor key;
	const struct successor *hit;

	git_oid_cpy(&key.older, id);
	hit = bsearch(&key, s, n, sizeof(*s), cmp_successor);
	return hit ? &hit->newer : NULL;
}

/* Adds the pack of checksum sum (n objects) to the batch's. */
static int remember_pack(struct batch_odb *b, const unsigned char *sum, size_t n,
			 amp_error *err)
{
	char name[5 + 40 + 1];
	int i;

	memcpy(name, "pack-", 5);
	for (i = 0; i < 20; i++)
		snprintf(name + 5 + 2 * i, 3, "%02x", sum[i]);
	if (amp_pack_names_add(&b->packs, &b->npacks, &b->packs_alloc, name, (uint32_t)n) < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	return AMP_OK;
}

void amp_store_batch_pack_up(amp_store *st, struct batch_odb *b)
{
	char dir[sizeof(st->objects_dir) + 8];
	amp_error ignored;
	size_t taken = 0;

	snprintf(dir, sizeof(dir), "%s/pack", st->objects_dir);
	/* A failure leaves the packs as they were: amp gc's to repack. */
	if (b->npacks >= 2 &&
	    amp_pack_concat(st, dir, b->packs, b->npacks, st->fsync, &taken, &ignored) == AMP_OK &&
	    taken)
		(void)git_odb_refresh(b->disk);
	b->npacks = 0;
}

/*
 * Writes the objects held in memory to one pack of the repository,
 * commits, then trees, then blobs (a reader of the tip's trees then finds
 * them together: the first listing of 12,500 tasks peaked at 74 MB instead
 * of 86 MB), with its index (packwrite.h); then the repository's odb looks
 * at the pack directory again.  An object the odb cannot then find is a
 * pack amp wrote wrong: the batch fails before the ref moves.
 *
 * Trees go newest first, each stored as a delta against the tree that
 * replaced it at the same path when that one is in the pack, as git's
 * pack-objects chooses: the tip's trees are whole and an older version
 * costs the deltas between it and the newest.  The other way round (each
 * tree a delta against the one it replaced), every read of the tip went
 * down a chain of up to AMP_PACKWRITE_DEPTH deltas, each a copy of the
 * whole tree: a send into a task of 1,000 records spent 46M of its 157M
 * instructions there, and amp status (all) 34M of 186M on the shard trees.
 */
int amp_store_batch_flush(amp_store *st, struct batch_odb *b, amp_error *err)
{
	static const git_object_t order[3] = { GIT_OBJECT_COMMIT, GIT_OBJECT_TREE,
					       GIT_OBJECT_BLOB };
	struct mem_recorder *r = b->mem;
	git_odb_backend *mem = r->mem;
	amp_packwrite *pw = NULL;
	struct successor *succ = NULL;
	void *data = NULL, *base = NULL;
	char dir[sizeof(st->objects_dir) + 8];
	size_t i, k, len, base_len = 0, nsucc = 0;
	git_object_t type;
	int status, pass;

	snprintf(dir, sizeof(dir), "%s/pack", st->objects_dir);
	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return amp_error_set(err, AMP_EIO, "", "cannot create %s: %s", dir,
				     strerror(errno));
	if ((status = amp_packwrite_new(&pw, r->n, err)) < 0)
		goto cleanup;
	if (r->n && !(succ = malloc(r->n * sizeof(*succ)))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	for (i = 0; i < r->n; i++)
		if (!git_oid_is_zero(&r->rec[i].base)) {
			git_oid_cpy(&succ[nsucc].older, &r->rec[i].base);
			git_oid_cpy(&succ[nsucc++].newer, &r->rec[i].id);
		}
	qsort(succ, nsucc, sizeof(*succ), cmp_successor);
	/* Grouped by type, as git orders a pack: commits, trees, blobs. */
	for (pass = 0; pass < 3; pass++)
		for (k = 0; k < r->n; k++) {
			/* trees newest first: a tree's base comes before it */
			const struct recorded *o = &r->rec[order[pass] == GIT_OBJECT_TREE ?
							   r->n - 1 - k : k];
			const git_oid *newer;
			int delta;

			if (o->type != order[pass])
				continue;
			newer = o->type == GIT_OBJECT_TREE ? successor_of(succ, nsucc, &o->id) : NULL;
			delta = newer && amp_packwrite_can_base(pw, newer);
			if (mem->read(&data, &len, &type, mem, &o->id) < 0 ||
			    (delta && mem->read(&base, &base_len, &type, mem, newer) < 0)) {
				status = amp_error_git(err, AMP_EIO, "cannot read a new object");
				goto cleanup;
			}
			if ((status = amp_packwrite_add(pw, &o->id, o->type, data, len,
							delta ? newer : NULL, base, base_len,
							err)) < 0)
				goto cleanup;
			git_odb_backend_data_free(mem, data);
			data = NULL;
			if (base)
				git_odb_backend_data_free(mem, base);
			base = NULL;
		}
	if ((status = amp_packwrite_store(pw, dir, st->fsync, err)) < 0 ||
	    (status = remember_pack(b, amp_packwrite_checksum(pw), r->n, err)) < 0)
		goto cleanup;
	if (git_odb_refresh(b->disk) < 0 ||
	    (r->n && !git_odb_exists(b->disk, &r->rec[r->n - 1].id))) {
		status = amp_error_git(err, AMP_EIO, "the pack amp wrote in %s cannot be read", dir);
		goto cleanup;
	}
	git_mempack_reset(mem);
	r->n = 0;
	r->bytes = 0;
cleanup:
	if (data)
		git_odb_backend_data_free(mem, data);
	if (base)
		git_odb_backend_data_free(mem, base);
	free(succ);
	amp_packwrite_free(pw);
	return status;
}
