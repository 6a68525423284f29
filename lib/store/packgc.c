/* packgc.c - amp gc's repack, bounded by what it packs (packgc.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include "base/gitobj.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "packgc.h"
#include "base/proc.h"

/*
 * The name a record is given in the list git pack-objects reads, and the
 * attributes that mark it -delta: records are never stored as deltas (git
 * would chain similar records 50 deep, and every read of one would apply
 * the chain: pack.c attributes).  Other objects go by their paths
 * (name_objects).  pack-objects reads a name with its newline (git 2.39
 * keeps it: hence the '*', and why the paths' own patterns would not do).
 */
#define RECORD_HINT "amp-record"
static const char hint_attrs[] = RECORD_HINT "* -delta\n";

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int amp_dir_names_has(const struct amp_dir_names *d, const char *name)
{
	/* bsearch's array may not be NULL, even when empty (UBSan) */
	return d->n && bsearch(&name, d->v, d->n, sizeof(*d->v), by_name) != NULL;
}

void amp_dir_names_free(struct amp_dir_names *d)
{
	while (d->n)
		free(d->v[--d->n]);
	free(d->v);
	d->v = NULL;
}

/* Appends a copy of name to d: 0, or -1 when out of memory. */
static int names_add(struct amp_dir_names *d, size_t *alloc, const char *name)
{
	char **grown;

	if (d->n == *alloc) {
		*alloc = *alloc ? 2 * *alloc : 64;
		if (!(grown = realloc(d->v, *alloc * sizeof(*d->v))))
			return -1;
		d->v = grown;
	}
	if (!(d->v[d->n] = strdup(name)))
		return -1;
	d->n++;
	return 0;
}

int amp_dir_names_read(const char *dir, struct amp_dir_names *d)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	size_t alloc = 0;

	d->v = NULL;
	d->n = 0;
	if (!dp)
		return -1;
	while ((e = readdir(dp)))
		if (names_add(d, &alloc, e->d_name) < 0)
			break;
	closedir(dp);
	if (e) {
		amp_dir_names_free(d);
		return -1;
	}
	qsort(d->v, d->n, sizeof(*d->v), by_name);
	return 0;
}

static int by_objects(const void *a, const void *b)
{
	uint32_t x = ((const struct amp_pack_name *)a)->objects;
	uint32_t y = ((const struct amp_pack_name *)b)->objects;

	return x < y ? -1 : x > y;
}

size_t amp_pack_geometric_split(struct amp_pack_name *p, size_t n)
{
	size_t i, split;
	uint64_t total = 0;

	if (n < 2)
		return 0;
	qsort(p, n, sizeof(*p), by_objects);
	for (i = n - 1; i > 0; i--)
		if (p[i].objects < 2 * (uint64_t)p[i - 1].objects)
			break;
	split = i ? i + 1 : 0;
	for (i = 0; i < split; i++)
		total += p[i].objects;
	for (; split < n && p[split].objects < 2 * total; split++)
		total += p[split].objects;
	return split;
}

int amp_pack_lock(amp_store *st, const char *name, int wait, int *busy, amp_error *err)
{
	char path[PATH_MAX];
	int fd;

	*busy = 0;
	if (snprintf(path, sizeof(path), "%s/%s", amp_store_state_dir(st), name) >=
	    (int)sizeof(path)) {
		amp_error_set(err, AMP_EIO, "", "path too long: %s/%s", amp_store_state_dir(st),
			      name);
		return -1;
	}
	mkdir(amp_store_state_dir(st), 0777);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) < 0) {
		amp_error_set(err, AMP_EIO, "", "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	while (flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK)
			*busy = 1;
		else
			amp_error_set(err, AMP_EIO, "", "cannot lock %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void claimed_path(amp_store *st, char *path, size_t size)
{
	snprintf(path, size, "%s/gc.claimed", amp_store_state_dir(st));
}

void amp_pack_unclaim(amp_store *st)
{
	char path[PATH_MAX];

	claimed_path(st, path, sizeof(path));
	unlink(path);
}

void amp_pack_claimed(amp_store *st, struct amp_dir_names *out)
{
	char path[PATH_MAX], line[128];
	amp_error ignored;
	size_t alloc = 0, n;
	FILE *f;
	int fd, busy;

	out->v = NULL;
	out->n = 0;
	/* A claim counts only while a repack holds gc.lock: one left by a
	 * killed repack claims nothing. */
	if ((fd = amp_pack_lock(st, "gc.lock", 0, &busy, &ignored)) >= 0) {
		close(fd);
		return;
	}
	claimed_path(st, path, sizeof(path));
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		n = strcspn(line, "\n");
		line[n] = '\0';
		if (n == 45 && !strncmp(line, "pack-", 5) && names_add(out, &alloc, line) < 0)
			break;
	}
	fclose(f);
	qsort(out->v, out->n, sizeof(*out->v), by_name);
}

int amp_pack_attributes(amp_store *st, const char *file, const char *attrs, char *opt,
			size_t size)
{
	char buf[256];
	const char *path;
	size_t len = strlen(attrs);
	int fd;
	ssize_t n;

	if (len >= sizeof(buf) || snprintf(opt, size, "core.attributesFile=%s/%s",
					   amp_store_state_dir(st), file) >= (int)size)
		return -1;
	path = opt + strlen("core.attributesFile=");
	/* O_NOFOLLOW: a link planted there is never written through;
	 * O_NONBLOCK: a FIFO there is never waited on (cache.h). */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) >= 0) {
		n = read(fd, buf, sizeof(buf));
		close(fd);
		if (n == (ssize_t)len && !memcmp(buf, attrs, len))
			return 0;
	}
	/* In place: only a repack reads it, under the same lock, and a
	 * write cut short is found different and written again. */
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
		       0666)) < 0)
		return -1;
	n = write(fd, attrs, len);
	if (close(fd) < 0 || n != (ssize_t)len)
		return -1;
	return 0;
}

/* ---- the packs and objects to pack --------------------------------------- */

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The object count of the index `name` (pack-<hex>.idx) of dir when it is
 * a pack amp may repack: a version 2 index, its pack beside it, no .keep,
 * .promisor, .mtimes or .bitmap (git's business); else 0. */
static uint32_t pack_objects(int dirfd, const struct amp_dir_names *d, const char *name)
{
	static const char *const others[] = { ".pack", ".keep", ".promisor", ".mtimes",
					      ".bitmap", NULL };
	unsigned char head[8 + 1024];
	char sibling[5 + 40 + 16];
	size_t i;
	int fd;
	ssize_t got;

	if (strlen(name) != 5 + 40 + 4 || strncmp(name, "pack-", 5) || strcmp(name + 45, ".idx") ||
	    strspn(name + 5, "0123456789abcdef") != 40)
		return 0;
	for (i = 0; others[i]; i++) {
		snprintf(sibling, sizeof(sibling), "%.45s%s", name, others[i]);
		if (amp_dir_names_has(d, sibling) != !i)
			return 0;
	}
	if ((fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) < 0)
		return 0;
	got = read(fd, head, sizeof(head));
	close(fd);
	if (got != (ssize_t)sizeof(head) || memcmp(head, "\377tOc\0\0\0\2", 8))
		return 0;
	return get32(head + 8 + 4 * 255);
}

int amp_pack_names_add(struct amp_pack_name **v, size_t *n, size_t *alloc, const char *file,
		       uint32_t objects)
{
	struct amp_pack_name *grown;

	if (*n == *alloc) {
		*alloc = *alloc ? 2 * *alloc : 32;
		if (!(grown = realloc(*v, *alloc * sizeof(**v))))
			return -1;
		*v = grown;
	}
	memcpy((*v)[*n].name, file, 45);
	(*v)[*n].name[45] = '\0';
	(*v)[(*n)++].objects = objects;
	return 0;
}

long amp_pack_list(const char *dir, struct amp_pack_name **out)
{
	struct amp_dir_names d;
	size_t n = 0, alloc = 0, i;
	uint32_t objects;
	int fd;

	*out = NULL;
	if (amp_dir_names_read(dir, &d) < 0)
		return errno == ENOENT ? 0 : -1;
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		amp_dir_names_free(&d);
		return -1;
	}
	for (i = 0; i < d.n; i++) {
		if ((objects = pack_objects(fd, &d, d.v[i])) &&
		    amp_pack_names_add(out, &n, &alloc, d.v[i], objects) < 0)
			break;
	}
	close(fd);
	amp_dir_names_free(&d);
	return i < d.n ? -1 : (long)n;
}

/* The objects a repack packs: each with its type and, once the walk
 * of its trees named it, its path (NULL: none). */
struct objlist {
	struct obj {
		git_oid id;
		git_object_t type;
		char *path;
	} *v;
	size_t n, alloc;
};

static int list_object(struct objlist *l, const unsigned char *raw, git_object_t type)
{
	struct obj *grown;

	if (l->n == l->alloc) {
		size_t alloc = l->alloc ? 2 * l->alloc : 1024;

		if (!(grown = realloc(l->v, alloc * sizeof(*grown))))
			return -1;
		l->v = grown;
		l->alloc = alloc;
	}
	git_oid_fromraw(&l->v[l->n].id, raw);
	l->v[l->n].type = type;
	l->v[l->n++].path = NULL;
	return 0;
}

static int by_id(const void *a, const void *b)
{
	return git_oid_cmp(&((const struct obj *)a)->id, &((const struct obj *)b)->id);
}

static struct obj *find_obj(struct objlist *l, const git_oid *id)
{
	struct obj key;

	git_oid_cpy(&key.id, id);
	return bsearch(&key, l->v, l->n, sizeof(*l->v), by_id);
}

static void objlist_free(struct objlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
}

/*
 * Names the trees and blobs of the list by their paths, walking down from
 * each commit of the list through the trees of the list only (a write's
 * pack holds its commit and every tree and blob it added; a tree outside
 * the list is one the repack keeps, and is not read): what git's
 * --stdin-packs walk learns, without its walk of every commit of the
 * history.  git pack-objects hashes the paths to find deltas between
 * versions of a tree; a record (tasks/ .. .json) is named RECORD_HINT.
 */
static int name_tree(git_repository *repo, struct objlist *l, struct obj *t, const char *path,
		     int depth)
{
	git_tree *tree = NULL;
	const git_tree_entry *e;
	struct obj *o;
	char *sub;
	size_t i, n;
	int status = 0;

	if (t->path || depth > 64 || !(t->path = strdup(path)))
		return t->path ? 0 : -1;
	if (amp_git_tree_lookup(&tree, repo, &t->id) < 0)
		return 0; /* git reads it, or says why */
	n = git_tree_entrycount(tree);
	for (i = 0; i < n && status == 0; i++) {
		e = git_tree_entry_byindex(tree, i);
		if (!(o = find_obj(l, git_tree_entry_id(e))) || o->path)
			continue;
		if (asprintf(&sub, "%s%s%s", path, *path ? "/" : "", git_tree_entry_name(e)) < 0) {
			status = -1;
			break;
		}
		if (o->type == GIT_OBJECT_TREE) {
			status = name_tree(repo, l, o, sub, depth + 1);
			free(sub);
		} else {
			o->path = sub;
		}
	}
	git_tree_free(tree);
	return status;
}

/*
 * Every AMP_STORE_RELEASE_EVERY commits the packs are let go of, as amp
 * log does (store.h amp_store_release_packs): each tree read here is a
 * delta, and libgit2 keeps the bases it unpacked, up to 16 MiB per open
 * pack, until the pack is closed; an import leaves a pack per 2,000
 * commits, and over the 2,006 packs of a 1M-message import this walk grew
 * to 9.4 GB of heap before it was stopped.
 */
static int name_objects(amp_store *st, struct objlist *l)
{
	git_repository *repo = amp_store_repo(st);
	git_commit *c;
	struct obj *t;
	size_t i, walked = 0;
	int status = 0;

	for (i = 0; i < l->n && status == 0; i++) {
		if (l->v[i].type != GIT_OBJECT_COMMIT || amp_git_commit_lookup(&c, repo, &l->v[i].id) < 0)
			continue;
		if ((t = find_obj(l, git_commit_tree_id(c))))
			status = name_tree(repo, l, t, "", 0);
		git_commit_free(c);
		if (++walked % AMP_STORE_RELEASE_EVERY == 0)
			amp_store_release_packs(st);
	}
	return status;
}

/* 1 when path is a record's (tasks/.../<name>.json). */
static int is_record(const char *path)
{
	size_t n = path ? strlen(path) : 0;

	return n > 11 && !strncmp(path, "tasks/", 6) && !strcmp(path + n - 5, ".json");
}

/* Writes the list for git pack-objects, "<id>[ <name>]" a line, commits,
 * tags, trees, then blobs (git's order in a pack), each once. */
static int write_list(struct objlist *l, FILE *f)
{
	static const git_object_t order[] = { GIT_OBJECT_COMMIT, GIT_OBJECT_TAG, GIT_OBJECT_TREE,
					      GIT_OBJECT_BLOB };
	char hex[GIT_OID_HEXSZ + 1];
	const char *name;
	size_t i, k;

	for (k = 0; k < 4; k++)
		for (i = 0; i < l->n; i++) {
			if (l->v[i].type != order[k] || (i && git_oid_equal(&l->v[i].id, &l->v[i - 1].id)))
				continue;
			git_oid_tostr(hex, sizeof(hex), &l->v[i].id);
			name = is_record(l->v[i].path) ? RECORD_HINT : l->v[i].path;
			if (fprintf(f, name ? "%s %s\n" : "%s\n", hex, name) < 0)
				return -1;
		}
	return 0;
}

/* A pack entry: its offset and its index position. */
struct entry {
	uint64_t off;
	uint32_t pos;
	uint8_t type; /* resolved: 1-4 */
};

static int by_off(const void *a, const void *b)
{
	uint64_t x = ((const struct entry *)a)->off, y = ((const struct entry *)b)->off;

	return x < y ? -1 : x > y;
}

/* The type of the entry at e->off (its base's, for a delta; an OFS_DELTA's
 * base is an earlier entry, already typed), from its header alone, or 0
 * when the header is not one amp reads (a REF_DELTA: libgit2 is asked). */
static uint8_t entry_type(const unsigned char *pack, size_t len, const struct entry *v,
			  size_t k)
{
	const unsigned char *p = pack + v[k].off, *stop = pack + len - 20;
	uint64_t rel, base;
	size_t lo = 0, hi = k, mid;
	unsigned type = (*p >> 4) & 7;

	while (*p++ & 0x80)
		if (p >= stop)
			return 0;
	if (type >= 1 && type <= 4)
		return (uint8_t)type;
	if (type != 6 || p >= stop)
		return 0;
	rel = *p & 0x7f;
	while (*p++ & 0x80) {
		if (p >= stop || rel >> 56)
			return 0;
		rel = ((rel + 1) << 7) | (*p & 0x7f);
	}
	if (rel == 0 || rel > v[k].off)
		return 0;
	base = v[k].off - rel;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (v[mid].off < base)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < k && v[lo].off == base ? v[lo].type : 0;
}

/* Maps path read-only into *map (its size in *len): 0, or -1. */
static int map_file(const char *path, unsigned char **map, size_t *len)
{
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	void *m;

	*map = NULL;
	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size < 32) {
		close(fd);
		return -1;
	}
	m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	*map = m;
	*len = (size_t)sb.st_size;
	return 0;
}

/* The offsets of the index (version 2, n objects) into v, sorted by
 * offset: 0, or -1 when an offset is out of the pack. */
static int read_offsets(const unsigned char *idx, size_t idx_len, uint32_t n, size_t pack_len,
			struct entry *v)
{
	const unsigned char *off32 = idx + 8 + 1024 + (size_t)n * 24;
	const unsigned char *off64 = off32 + (size_t)n * 4;
	uint32_t i, o;

	for (i = 0; i < n; i++) {
		o = get32(off32 + 4 * (size_t)i);
		v[i].pos = i;
		if (o & 0x80000000u) {
			o &= 0x7fffffffu;
			if (off64 + 8 * ((size_t)o + 1) > idx + idx_len - 40)
				return -1;
			v[i].off = (uint64_t)get32(off64 + 8 * (size_t)o) << 32 |
				   get32(off64 + 8 * (size_t)o + 4);
		} else {
			v[i].off = o;
		}
		if (v[i].off < 12 || v[i].off >= pack_len - 20)
			return -1;
	}
	qsort(v, n, sizeof(*v), by_off);
	return 0;
}

/* Lists the objects of the pack dir/name with their types: 0, or an error
 * status (a pack that cannot be read: nothing is deleted). */
static int list_pack(amp_store *st, git_odb *odb, const char *dir, const char *name,
		     struct objlist *list, amp_error *err)
{
	char path[PATH_MAX + 64];
	unsigned char *idx = NULL, *pack = NULL;
	size_t idx_len = 0, pack_len = 0, k;
	struct entry *v = NULL;
	uint32_t n;
	git_oid id;
	size_t size;
	git_object_t type;
	int status = AMP_OK;

	(void)st;
	snprintf(path, sizeof(path), "%s/%s.idx", dir, name);
	if (map_file(path, &idx, &idx_len) < 0 || idx_len < 8 + 1024 + 40 ||
	    memcmp(idx, "\377tOc\0\0\0\2", 8) ||
	    idx_len < 8 + 1024 + (size_t)(n = get32(idx + 8 + 4 * 255)) * 28 + 40) {
		status = amp_error_set(err, AMP_EIO, "", "cannot read %s", path);
		goto cleanup;
	}
	snprintf(path, sizeof(path), "%s/%s.pack", dir, name);
	if (map_file(path, &pack, &pack_len) < 0 || memcmp(pack, "PACK", 4) ||
	    get32(pack + 8) != n) {
		status = amp_error_set(err, AMP_EIO, "", "cannot read %s", path);
		goto cleanup;
	}
	if (!(v = malloc((n ? n : 1) * sizeof(*v)))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if (read_offsets(idx, idx_len, n, pack_len, v) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "%s: an offset out of the pack", path);
		goto cleanup;
	}
	for (k = 0; k < n; k++) {
		const unsigned char *raw = idx + 8 + 1024 + 20 * (size_t)v[k].pos;

		if (!(v[k].type = entry_type(pack, pack_len, v, k))) {
			git_oid_fromraw(&id, raw);
			if (git_odb_read_header(&size, &type, odb, &id) < 0) {
				status = amp_error_git(err, AMP_EIO, "cannot read an object of %s",
						       path);
				goto cleanup;
			}
			v[k].type = (uint8_t)type;
		}
		if (list_object(list, raw, (git_object_t)v[k].type) < 0) {
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
			goto cleanup;
		}
	}
cleanup:
	free(v);
	if (pack)
		munmap(pack, pack_len);
	if (idx)
		munmap(idx, idx_len);
	return status;
}

/* Lists the loose objects of objects_dir (the files of its 256 fan-out
 * directories) with their types; *count is how many. */
static int list_loose(const char *objects_dir, git_odb *odb, struct objlist *list,
		      size_t *count, amp_error *err)
{
	char dir[PATH_MAX + 8], hex[GIT_OID_HEXSZ + 1];
	struct dirent *e;
	git_oid id;
	git_object_t type;
	size_t size;
	unsigned b;
	DIR *dp;
	int status = AMP_OK;

	*count = 0;
	for (b = 0; b < 256 && status == AMP_OK; b++) {
		snprintf(dir, sizeof(dir), "%s/%02x", objects_dir, b);
		if (!(dp = opendir(dir)))
			continue;
		while ((e = readdir(dp))) {
			if (strlen(e->d_name) != 38 || strspn(e->d_name, "0123456789abcdef") != 38)
				continue;
			snprintf(hex, sizeof(hex), "%02x%.38s", b, e->d_name);
			/* one a racing gc deleted, or not an object: git's to judge */
			if (git_oid_fromstr(&id, hex) < 0 ||
			    git_odb_read_header(&size, &type, odb, &id) < 0)
				continue;
			if (list_object(list, id.id, type) < 0) {
				status = amp_error_set(err, AMP_EIO, "", "out of memory");
				break;
			}
			(*count)++;
		}
		closedir(dp);
	}
	return status;
}

/* Runs git (-c options, then args) with stdin from fd (-1: none) and
 * stdout into *out (may be NULL). */
static int run_git(amp_store *st, const char *const *git_opts, const char *const *args, int fd,
		   char **out, amp_error *err)
{
	const char *argv[40];
	char attrs[PATH_MAX + 32];
	size_t k = 0, i;
	int code = 0, status;

	argv[k++] = "git";
	argv[k++] = "--git-dir";
	argv[k++] = git_repository_commondir(amp_store_repo(st));
	for (i = 0; git_opts[i] && k < 16; i++)
		argv[k++] = git_opts[i];
	/* the last core.attributesFile given wins */
	if (amp_pack_attributes(st, "pack-list-attributes", hint_attrs, attrs, sizeof(attrs)) == 0) {
		argv[k++] = "-c";
		argv[k++] = attrs;
	}
	for (i = 0; args[i] && k < 39; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	if ((status = amp_run_stdin_fd(argv, fd, out, NULL, &code, err)) < 0)
		return status;
	if (code != 0)
		return amp_error_set(err, AMP_EIO, "", "git %s failed (exit %d)", args[0], code);
	return AMP_OK;
}

/* Chooses the packs (under rollup.lock, so that no roll-up takes them
 * meanwhile) and claims them: their count in *n, the names in (*p)[0..n). */
static int choose(amp_store *st, const char *dir, struct amp_pack_name **p, size_t *n,
		  amp_error *err)
{
	char path[PATH_MAX];
	long all;
	size_t i;
	FILE *f;

	*n = 0;
	if ((all = amp_pack_list(dir, p)) < 0)
		return amp_error_set(err, AMP_EIO, "", "cannot read %s", dir);
	*n = amp_pack_geometric_split(*p, (size_t)all);
	claimed_path(st, path, sizeof(path));
	if (!(f = fopen(path, "we")))
		return amp_error_set(err, AMP_EIO, "", "cannot write %s: %s", path,
				     strerror(errno));
	for (i = 0; i < *n; i++)
		fprintf(f, "%s\n", (*p)[i].name);
	if (fclose(f) != 0)
		return amp_error_set(err, AMP_EIO, "", "cannot write %s", path);
	return AMP_OK;
}

/* Deletes the pack dir/name: its index first, so that no reader finds an
 * index without its pack. */
static void remove_pack(const char *dir, const char *name)
{
	static const char *const exts[] = { ".idx", ".pack", ".rev", NULL };
	char path[PATH_MAX + 64];
	size_t i;

	for (i = 0; exts[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s%s", dir, name, exts[i]);
		unlink(path);
	}
}

/* The list git pack-objects reads (write_list) of the packs p[0..n) and
 * the loose objects (*loose: how many), in the temporary file *out, at
 * its start; NULL when there is nothing to pack. */
static int build_list(amp_store *st, const char *dir, const struct amp_pack_name *p, size_t n,
		      FILE **out, size_t *loose, amp_error *err)
{
	struct objlist l = { NULL, 0, 0 };
	git_odb *odb = NULL;
	size_t i;
	int status = AMP_OK;

	*out = NULL;
	*loose = 0;
	if (git_repository_odb(&odb, amp_store_repo(st)) < 0)
		return amp_error_git(err, AMP_EIO, "cannot open the object database");
	for (i = 0; i < n; i++)
		if ((status = list_pack(st, odb, dir, p[i].name, &l, err)) < 0)
			goto cleanup;
	if ((status = list_loose(amp_store_objects_dir(st), odb, &l, loose, err)) < 0 ||
	    (!n && !*loose))
		goto cleanup;
	qsort(l.v, l.n, sizeof(*l.v), by_id);
	/* Let go of, or amp_store_release_packs could not close the packs. */
	git_odb_free(odb);
	odb = NULL;
	if (name_objects(st, &l) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if (!(*out = tmpfile()) || write_list(&l, *out) < 0 || fflush(*out) != 0 ||
	    fseek(*out, 0, SEEK_SET) != 0)
		status = amp_error_set(err, AMP_EIO, "", "cannot write a temporary file: %s",
				       strerror(errno));
cleanup:
	if (status < 0 && *out) {
		fclose(*out);
		*out = NULL;
	}
	objlist_free(&l);
	git_odb_free(odb);
	return status;
}

int amp_pack_gc_geometric(amp_store *st, const char *const *git_opts, int *did,
			  amp_error *err)
{
	static const char *const pack_args[] = { "pack-objects", "-q", "--delta-base-offset",
						 "--non-empty", NULL, NULL };
	static const char *const prune_args[] = { "prune-packed", "-q", NULL };
	char dir[PATH_MAX], prefix[PATH_MAX + 8], path[PATH_MAX];
	const char *args[6];
	struct amp_pack_name *p = NULL;
	FILE *list = NULL;
	char *out = NULL;
	size_t n = 0, i, loose = 0;
	int rfd, busy, status;

	*did = 0;
	snprintf(dir, sizeof(dir), "%s/pack", amp_store_objects_dir(st));
	snprintf(prefix, sizeof(prefix), "%s/pack", dir);
	claimed_path(st, path, sizeof(path));
	if ((rfd = amp_pack_lock(st, "rollup.lock", 1, &busy, err)) < 0)
		return AMP_EIO;
	status = choose(st, dir, &p, &n, err);
	close(rfd);
	if (status < 0 || (status = build_list(st, dir, p, n, &list, &loose, err)) < 0 || !list)
		goto cleanup;
	memcpy(args, pack_args, sizeof(pack_args));
	args[4] = prefix;
	if ((status = run_git(st, git_opts, args, fileno(list), &out, err)) < 0)
		goto cleanup;
	*did = 1;
	/* The new pack and its index are in place (fsynced with amp.fsync):
	 * only now do the packs it holds go, under rollup.lock again. */
	out[strcspn(out, "\n")] = '\0';
	if ((rfd = amp_pack_lock(st, "rollup.lock", 1, &busy, err)) < 0) {
		status = AMP_EIO;
		goto cleanup;
	}
	for (i = 0; i < n; i++)
		if (strcmp(p[i].name + 5, out))
			remove_pack(dir, p[i].name);
	unlink(path);
	close(rfd);
	if (loose)
		status = run_git(st, git_opts, prune_args, -1, NULL, err);
cleanup:
	unlink(path);
	if (list)
		fclose(list);
	free(out);
	free(p);
	return status;
}
