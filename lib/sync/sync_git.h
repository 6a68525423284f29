/*
 * sync_git.h - the fetch and the push of amp sync (sync_git.c).  Private
 * to lib/sync/.
 */
#ifndef AMP_SYNC_GIT_H
#define AMP_SYNC_GIT_H

#include "base/error.h"
#include "store/store.h"

/* What amp_sync_push returns besides a negative status. */
enum { PUSHED, PUSH_RACED, PUSH_REFUSED, PUSH_RESET };

/* What amp_sync_fetch returns when the server reset the connection. */
#define FETCH_RESET 1

/* Where a clone keeps the hub's markers of its inbox (sync_hub.h):
 * refs/amp-joined/<id>/<name> as refs/amp-sync-joined/<key>/<name>. */
#define AMP_SYNC_MARKS "refs/amp-sync-joined/"

/* Fetches the remote's refs/amp/... into the mirror refs/amp-sync/<key>/
 * (pruned), and with `id` (inbox mode: this clone's inbox) the hub's
 * markers of that inbox into AMP_SYNC_MARKS<key>/; FETCH_RESET when the
 * server reset the connection (git exit 128, "Connection reset by peer":
 * nothing changed, try again); AMP_EIO when git fails otherwise (its
 * reason went to stderr). */
int amp_sync_fetch(amp_store *st, const char *remote, const char *key, const char *id,
		   amp_error *err);

/*
 * Pushes the messages ref (and the errors ref when `errors`) to `dst` and
 * `edst`, forced when `force`: PUSHED, PUSH_RACED (someone pushed first),
 * PUSH_RESET (the server reset the connection: try again, a push is
 * idempotent),
 * PUSH_REFUSED (records the hub's hook refused, in `refused` as {path:
 * reason}; err filled), or a negative status.  *left (when not NULL) is 1
 * when PUSHED and the hub's hook said it left `dst` to the join under way
 * (a hub before the "left" marker, sync_hub.h, says so only there), or
 * `dst` held it already (no hook ran): the hub's marker says the rest.
 */
int amp_sync_push(amp_store *st, const char *remote, const char *dst, const char *edst,
		  int force, int errors, json_t *refused, int *left, amp_error *err);

#endif
