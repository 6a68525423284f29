/*
 * sync_hub.h - the hub's markers of its joins of the clones' inboxes
 * (sync_hub.c), read by a clone's sync.  Private to lib/sync/.
 *
 * refs/amp-joined/<id>/<name> says what the hub's join made of the inbox
 * refs/amp-in/<id>/<name>: the inbox's tip itself when it was joined into
 * refs/amp/<name>, or a blob "refused <tip>: <reason>\n" when the join
 * refused it (a conflicting record), or a blob "left <tip>\n" while a
 * push's hook left the inbox at <tip> to the join under way.  Only the hub
 * writes there (its pre-receive hook refuses a push to it).
 */
#ifndef AMP_SYNC_HUB_H
#define AMP_SYNC_HUB_H

#include <git2.h>

enum { AMP_SYNC_MARK_NONE, AMP_SYNC_MARK_JOINED, AMP_SYNC_MARK_REFUSED, AMP_SYNC_MARK_LEFT };

/*
 * What the marker ref `marker` (here: a clone's copy of the hub's) says of
 * the pushed tip `pushed`: AMP_SYNC_MARK_JOINED (it, or a later push of the
 * same inbox, was joined), AMP_SYNC_MARK_REFUSED (the reason into reason,
 * reasonsz bytes, may be 0), AMP_SYNC_MARK_LEFT (left to the join under
 * way, not joined yet) or AMP_SYNC_MARK_NONE (no marker, or one of another
 * tip: not joined yet).
 */
int amp_sync_mark_read(git_repository *repo, const char *marker, const git_oid *pushed,
		       char *reason, size_t reasonsz);

#endif
