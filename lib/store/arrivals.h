/*
 * arrivals.h - when each push first reached the hub, by the hub's clock
 * (issue 32: deadlines run from an arrival the team trusts, never from a
 * timestamp or commit date the writer chose).
 *
 * The hub's post-receive hook (amp hook install --server) notes on
 * AMP_ARRIVALS_REF, in git's notes format, the tip of each update of
 * refs/amp/<ref> it takes (and of each join it makes) with the hub's time:
 * "Amp-Arrived-Ms: <ms>".  A note is never replaced: the first arrival
 * stands.  A commit below a noted tip arrived no later than that tip, so a
 * record's arrival is the note of the nearest noted commit at or above the
 * one that added it (amp_watch_walk_records).  The ref is under refs/amp/,
 * so every clone's amp sync fetches it (and keeps it under the same name),
 * and the hub's pre-receive refuses any push to it ("amp defines no such
 * ref"): only the hub's hook writes it.  A record no note covers (written
 * here and not yet pushed, a hook-less hub, an SSOT older than this) counts
 * from the commit that brought it, as before.
 */
#ifndef AMP_ARRIVALS_H
#define AMP_ARRIVALS_H

#include <git2.h>
#include <stdint.h>

#include "base/error.h"
#include "store.h"

#define AMP_ARRIVALS_REF "refs/amp/arrivals"

/* Notes that `commit` arrived at `ms` (the hub's clock), unless it has a
 * note already.  Retried when another hook moved the ref meanwhile.
 * AMP_OK or AMP_EIO (err filled). */
int amp_arrivals_note(git_repository *repo, const git_oid *commit, int64_t ms, amp_error *err);

/*
 * A clone's own memory of what its fetches brought (a clone without a hub
 * that notes arrivals trusts its own clock): AMP_FIRST_SEEN_REF, outside
 * refs/amp/ so that no sync or hook carries it.  Each fetch that brings a
 * new tip of the messages ref notes on it the time of this clone's fetch
 * before ("Amp-Unseen-Ms": what the new commits were not there at) and
 * the local tip then ("Amp-Local": from there down, the commits were this
 * clone's already).  A record fetched counts from no earlier than that:
 * a backdated commit date cannot move it before a fetch that did not see
 * it.
 */
#define AMP_FIRST_SEEN_REF "refs/amp-first-seen"

/* After a fetch from the remote named `key` (the sync's mirror key):
 * notes `mirror_tip` (what the fetch brought) when it is new since this
 * clone's last fetch of that remote, then remembers this fetch (`now`) in
 * <state dir>/first-seen.json.  `local_tip` may be NULL (no local ref).
 * AMP_OK or AMP_EIO. */
int amp_arrivals_fetched(amp_store *st, const char *key, const git_oid *mirror_tip,
			 const git_oid *local_tip, int64_t now, amp_error *err);

/* The notes of a notes ref as read once; NULL members when there are
 * none.  Free with amp_arrivals_close. */
typedef struct amp_arrivals {
	git_repository *repo;
	git_commit *notes;
} amp_arrivals;

/* Opens the notes of ref `name` (none when the ref is missing or
 * unreadable: an old SSOT, or a hub without amp's hook). */
void amp_arrivals_open(amp_arrivals *a, git_repository *repo, const char *name);
void amp_arrivals_close(amp_arrivals *a);

/* The hub's arrival time (ms) noted on `commit`, or -1. */
int64_t amp_arrivals_get(const amp_arrivals *a, const git_oid *commit);

/* The first-seen note on `commit` (AMP_FIRST_SEEN_REF): 1 with *unseen
 * and *local (zero when the clone had no tip), or 0 when it has none. */
int amp_arrivals_get_seen(const amp_arrivals *a, const git_oid *commit, int64_t *unseen,
			  git_oid *local);

/* Sets local AMP_ARRIVALS_REF to `mirror` (what a fetch brought of the
 * hub's), when it exists: the hub's notes replace the clone's, which only
 * ever come from a hub.  AMP_OK (also when there is none) or AMP_EIO. */
int amp_arrivals_take(git_repository *repo, const char *mirror, amp_error *err);

#endif
