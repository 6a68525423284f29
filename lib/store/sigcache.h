/*
 * sigcache.h - signatures verified once, not again: <git dir>/amp/record-sigs.
 *
 * A record signature is kept by (signature blob, record blob, time), a
 * commit signature by (commit id, the role asked for): both name their
 * bytes, so a result stays true as long as the allowed-signers file it
 * was checked against is the same.  The file starts with that file's size
 * and modification time; a cache made against another (rotated keys) is
 * not used, and the next entry starts it again.  Derived, safe to delete;
 * a line cut by a crash is skipped.  Only successes of ssh-keygen are
 * kept: a signature that fails is checked again, and refused again, each
 * time, and one verified in process (sshsig.h, ~0.2 ms) is verified
 * again rather than kept, since every process that looks an entry up
 * reads the whole file (200,000 entries: 0.5 s).
 */
#ifndef AMP_SIGCACHE_H
#define AMP_SIGCACHE_H

#include <jansson.h>
#include <limits.h>

typedef struct amp_sigcache {
	char path[PATH_MAX + 32];  /* the cache file */
	char allowed[PATH_MAX];    /* amp.allowedSigners, as read */
	json_t *map;               /* key -> principal, once loaded */
	int timeless;              /* the file bounds no key in time */
} amp_sigcache;

/* Starts c for the state directory `state_dir` and the allowed-signers
 * file `allowed` (nothing is read yet). */
void amp_sigcache_init(amp_sigcache *c, const char *state_dir, const char *allowed);
void amp_sigcache_free(amp_sigcache *c);

/* 1 when no line of the allowed-signers file has valid-after or
 * valid-before: when a key signed then does not matter. */
int amp_sigcache_timeless(amp_sigcache *c);

/* The principal verified for `key` ("<40 hex> <up to 40 chars> <time>"),
 * or NULL; owned by c. */
const char *amp_sigcache_get(amp_sigcache *c, const char *key);

/* Keeps key -> principal, in c and in its file (best effort). */
void amp_sigcache_put(amp_sigcache *c, const char *key, const char *principal);

#endif
