/*
 * packgc.h - amp gc's repack, bounded by what it packs (pack.c calls it;
 * it calls nothing of pack.c).
 *
 * `git repack -d --geometric=2` chose the packs well but then ran `git
 * pack-objects --stdin-packs`, whose name-hash walk goes through every
 * commit of the history whatever it packs: at 100k messages 23 s (wall,
 * loaded machine) and 389 MB for two tiny packs, at 1M 9.5-15 s and 1.55
 * GB (issue 35).  amp now chooses the packs as --geometric=2 does, lists
 * their objects from their indexes (and the loose objects from their
 * directories), types them from the packs' entry headers, names them by a
 * walk down from the listed commits through listed trees only, and gives
 * that list to `git pack-objects`, which reuses the deltas it finds and
 * deltifies the rest (trees; records never: see RECORD_HINT in packgc.c),
 * and never walks the history.
 *
 * Locks (files in <git common dir>/amp/): gc.lock, held by a repack for
 * all its run (one at a time); rollup.lock, held by a write's roll-up of
 * small packs (pack.c) for all its run, and by a repack only while it
 * chooses its packs and while it deletes them, so that writes keep rolling
 * their packs up while git packs (8 writers had left 312-399 packs behind
 * a repack at 1M); gc.claimed, the packs the running repack chose, which
 * a roll-up leaves alone (read only while gc.lock is held by someone).
 */
#ifndef AMP_PACKGC_H
#define AMP_PACKGC_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* The names of a directory's entries, sorted: one read of the directory
 * answers "is there a .keep beside it" for every pack. */
struct amp_dir_names {
	char **v;
	size_t n;
};

/* Reads dir's entry names into *d: 0, or -1 (d empty). */
int amp_dir_names_read(const char *dir, struct amp_dir_names *d);
/* 1 when d holds `name`. */
int amp_dir_names_has(const struct amp_dir_names *d, const char *name);
void amp_dir_names_free(struct amp_dir_names *d);

/* A pack of the pack directory, by its name (pack-<hex>, no extension)
 * and its object count. */
struct amp_pack_name {
	char name[5 + 40 + 1];
	uint32_t objects;
};

/* Appends the pack of the index file `file` (pack-<hex>.idx) with its
 * object count to (*v)[0..*n) (*alloc slots): 0, or -1 out of memory. */
int amp_pack_names_add(struct amp_pack_name **v, size_t *n, size_t *alloc, const char *file,
		       uint32_t objects);

/* The packs of dir a repack may take (a version 2 index, its pack beside
 * it, no .keep, .promisor, .mtimes or .bitmap) into *out, which the
 * caller frees: their count, or -1 (out of memory, dir unreadable). */
long amp_pack_list(const char *dir, struct amp_pack_name **out);

/*
 * Sorts p[0..n) by object count and returns how many of the smallest to
 * roll up, git repack --geometric=2's way (builtin/repack.c): the biggest
 * packs that each hold at least twice the objects of the next smaller one
 * stay, as do those at least twice what the roll-up will hold.
 */
size_t amp_pack_geometric_split(struct amp_pack_name *p, size_t n);

/*
 * The flock on <state dir>/<name> (gc.lock, rollup.lock): a descriptor
 * to close, or -1 (with *busy set when another process holds it and
 * `wait` is 0; else err filled).
 */
int amp_pack_lock(amp_store *st, const char *name, int wait, int *busy, amp_error *err);

/*
 * The packs a running repack claimed (gc.claimed), sorted, into *out
 * (empty when no repack runs: gc.lock is free).  Called under rollup.lock.
 */
void amp_pack_claimed(amp_store *st, struct amp_dir_names *out);

/* Deletes gc.claimed: called by a repack that just took gc.lock, for
 * which what a killed repack claimed would be its own claims (it would
 * skip the packs it is to lay end to end, packcat.h). */
void amp_pack_unclaim(amp_store *st);

/*
 * Writes <state dir>/<file> with `attrs` (a gitattributes text) when it
 * does not hold that already (under gc.lock) and puts
 * "core.attributesFile=<that path>" into opt: 0, or -1 when it cannot.
 */
int amp_pack_attributes(amp_store *st, const char *file, const char *attrs, char *opt,
			size_t size);

/*
 * The repack itself, called under gc.lock: chooses the packs (above) and
 * packs them and every loose object into one pack with `git pack-objects`
 * (git_opts: its -c options, at most 12, NULL-terminated), then deletes the packs it
 * chose (each index before its pack) and, with `git prune-packed`, the
 * loose objects now packed.  Nothing else of the history is read.  *did
 * is 1 when it wrote a pack.  AMP_EIO when git fails (nothing deleted).
 */
int amp_pack_gc_geometric(amp_store *st, const char *const *git_opts, int *did,
			  amp_error *err);

#endif
