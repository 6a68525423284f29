/*
 * seen.h - the last good tip of the messages ref, kept where amp can find
 * what a rewrite took away.
 *
 * `amp watch` keeps under refs/amp-seen/<name> (for the messages ref
 * refs/amp/<name>) the last tip it found intact, and moves it forward only
 * to a tip that holds every record of it.  The ref is outside refs/amp,
 * so amp sync and the hooks, which carry the refs under refs/amp, never push or fetch
 * it: it is this clone's own memory, which a rewrite of the shared history
 * cannot touch, and it keeps the rewritten records readable
 * (`git show refs/amp-seen/messages:<path>`).
 *
 * A tip is intact when every record of the seen tip is still there, with
 * the same content: records are compared by identity (their kind and id:
 * "msg" + msg_id, "ack" + the msg_id it acknowledges, "ctl" + its name)
 * and content (the blob), not by path and not by ancestry, because amp
 * sync replays local records onto the remote's tip under new sequence
 * numbers, in commits that do not descend from the old local tip.
 */
#ifndef AMP_SEEN_H
#define AMP_SEEN_H

#include <git2.h>
#include <jansson.h>

#include "base/error.h"
#include "store.h"

/* The seen ref of st's messages ref into buf ("refs/amp-seen/messages");
 * -1 when it does not fit. */
int amp_seen_ref(amp_store *st, char *buf, size_t bufsz);

/* The commit the seen ref names into *out: 1, or 0 when there is none
 * yet; AMP_EIO (err filled) when it cannot be read. */
int amp_seen_read(amp_store *st, git_oid *out, amp_error *err);

/* Points the seen ref at `to`, if it still names `from` (NULL: if it does
 * not exist), so two watchers never move it backwards.  AMP_OK (also when
 * another watcher moved it first) or AMP_EIO. */
int amp_seen_move(amp_store *st, const git_oid *from, const git_oid *to, amp_error *err);

/*
 * Appends to `lost` one object per record of tree `seen` that tree `tip`
 * does not hold with the same identity and content: {"task": task id,
 * "path": its path in `seen`, "change": "changed" (a record of that
 * identity is there, with other content) or "removed"}, in tree order.
 * Only the task directories that differ are read.  Returns 0, or -1 when
 * a tree cannot be read.
 */
int amp_seen_lost(git_repository *repo, git_tree *seen, git_tree *tip, json_t *lost);

#endif
