/*
 * sync_git.h - the fetch and the push of amp sync (sync_git.c).  Private
 * to lib/sync/.
 */
#ifndef AMP_SYNC_GIT_H
#define AMP_SYNC_GIT_H

#include "base/error.h"
#include "store/store.h"

/* What amp_sync_push returns besides a negative status. */
enum { PUSHED, PUSH_RACED, PUSH_REFUSED };

/* Fetches the remote's refs/amp/... into the mirror refs/amp-sync/<key>/
 * (pruned); AMP_EIO when git fails (its reason went to stderr). */
int amp_sync_fetch(amp_store *st, const char *remote, const char *key, amp_error *err);

/*
 * Pushes the messages ref (and the errors ref when `errors`) to `dst` and
 * `edst`, forced when `force`: PUSHED, PUSH_RACED (someone pushed first),
 * PUSH_REFUSED (records the hub's hook refused, in `refused` as {path:
 * reason}; err filled), or a negative status.
 */
int amp_sync_push(amp_store *st, const char *remote, const char *dst, const char *edst,
		  int force, int errors, json_t *refused, amp_error *err);

#endif
