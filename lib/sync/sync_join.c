/*
 * sync_join.c - a local ref joined with its mirror of the remote (amp
 * sync) or with a clone's inbox (the hub's amp_sync_absorb), moved by
 * compare-and-swap (sync_join.h).
 */
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "store/store.h"
#include "sync.h"
#include "sync_join.h"
#include "sync_replay.h"
#include "sync_tell.h"

/* Reads ref into *id; 1 when it exists, 0 when not, AMP_EIO. */
int amp_sync_read_ref(git_repository *repo, const char *ref, git_oid *id, amp_error *err)
{
	int rc = git_reference_name_to_id(id, repo, ref);

	if (rc == 0)
		return 1;
	if (rc == GIT_ENOTFOUND) {
		git_error_clear();
		return 0;
	}
	return amp_error_git(err, AMP_EIO, "cannot read %s", ref);
}

/* Moves ref from `old` (NULL: must not exist) to `next`, a compare-and-swap
 * like the store's own writers do.  0 moved, 1 someone else moved it
 * first (join again), or AMP_EIO. */
static int cas_ref(git_repository *repo, const char *ref, const git_oid *old,
		   const git_oid *next, const char *why, amp_error *err)
{
	git_reference *out = NULL;
	int rc = git_reference_create_matching(&out, repo, ref, next, old != NULL, old, why);

	git_reference_free(out);
	if (rc == 0)
		return 0;
	if (rc == GIT_EMODIFIED || rc == GIT_EEXISTS || rc == GIT_ELOCKED) {
		git_error_clear();
		return 1;
	}
	return amp_error_git(err, AMP_EIO, "cannot update %s", ref);
}

#define AMP_SYNC_JOIN_TRIES 100

/*
 * Joins local `ref` with its mirror.  Diverged histories are joined by
 * replaying the local records onto the mirror's tip (`records`: the
 * messages ref, replay) or the local files (the errors ref, amp_sync_replay_union);
 * so is a history the mirror is behind when `aside` names records the
 * hub's hook refused, to set them aside.  A local writer moving the ref
 * meanwhile makes the join start over.
 */
int amp_sync_join(amp_store *st, amp_schema_set *set, const char *ref, const char *mirror,
		  int records, json_t *refused, json_t *aside, struct joined *j,
		  struct conflict *c, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	git_oid local, base, next;
	int have_local, rc, tries;
	char why[300];

	snprintf(why, sizeof(why), "amp sync: joined with %s", mirror);
	for (tries = 0; tries < AMP_SYNC_JOIN_TRIES; tries++) {
		memset(j, 0, sizeof(*j));
		if (refused)
			json_array_clear(refused);
		if ((have_local = amp_sync_read_ref(repo, ref, &local, err)) < 0 ||
		    (j->have_remote = amp_sync_read_ref(repo, mirror, &j->remote, err)) < 0)
			return AMP_EIO;
		if (!j->have_remote) {
			if (!have_local)
				return AMP_OK; /* nothing on either side */
			git_oid_cpy(&j->tip, &local);
			j->push = 1;
			return AMP_OK;
		}
		if (have_local && git_oid_equal(&local, &j->remote)) {
			git_oid_cpy(&j->tip, &local);
			return AMP_OK;
		}
		rc = have_local ? git_merge_base(&base, repo, &local, &j->remote) : GIT_ENOTFOUND;
		if (rc < 0 && rc != GIT_ENOTFOUND)
			return amp_error_git(err, AMP_EIO, "cannot compare %s with %s", ref, mirror);
		git_error_clear();
		if (rc == 0 && git_oid_equal(&base, &j->remote) &&
		    !(records && aside && json_object_size(aside))) {
			git_oid_cpy(&j->tip, &local); /* the remote is behind */
			j->push = 1;
			return AMP_OK;
		}
		if (!have_local || (rc == 0 && git_oid_equal(&base, &local))) {
			git_oid_cpy(&next, &j->remote); /* fast-forward */
		} else if (!records) {
			int status = amp_sync_replay_union(st, &local, rc == 0 ? &base : NULL,
							   &j->remote, &next, err);
			if (status < 0)
				return status;
			j->push = !git_oid_equal(&next, &j->remote);
		} else {
			int status = amp_sync_replay(st, set, &local, rc == 0 ? &base : NULL,
						     &j->remote, refused, aside, &next,
						     &j->replayed, &j->superseded, c, err);
			if (status < 0)
				return status;
			j->push = !git_oid_equal(&next, &j->remote);
		}
		if ((rc = cas_ref(repo, ref, have_local ? &local : NULL, &next, why, err)) < 0)
			return rc;
		if (rc == 0) {
			git_oid_cpy(&j->tip, &next);
			return AMP_OK;
		}
	}
	return amp_error_set(err, AMP_EIO, "", "%s kept moving while it was joined (%d tries)",
			     ref, AMP_SYNC_JOIN_TRIES);
}

static int absorb_locked(amp_store *st, amp_schema_set *set, const char *ref,
			 const git_oid *from, int records, json_t *refused, struct conflict *cp,
			 const char *why, amp_sync_absorbed *out, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	git_oid tip, base, next;
	int tries, rc, status;

	for (tries = 0; tries < AMP_SYNC_JOIN_TRIES; tries++) {
		json_array_clear(refused);
		if ((rc = amp_sync_read_ref(repo, ref, &tip, err)) < 0)
			return AMP_EIO;
		if (!rc) {
			/* The hub's first history: the inbox's as it is (the
			 * hook checked it whole). */
			if ((rc = cas_ref(repo, ref, NULL, from, why, err)) < 0)
				return rc;
			if (rc == 0) {
				git_oid_cpy(&out->tip, from);
				return AMP_OK;
			}
			continue;
		}
		if (git_oid_equal(&tip, from) || git_graph_descendant_of(repo, &tip, from) == 1) {
			git_oid_cpy(&out->tip, &tip);
			return AMP_OK; /* it holds all of it already */
		}
		rc = git_merge_base(&base, repo, &tip, from);
		if (rc < 0 && rc != GIT_ENOTFOUND)
			return amp_error_git(err, AMP_EIO, "cannot compare %s with %s", ref,
					     git_oid_tostr_s(from));
		git_error_clear();
		/* Every record is checked again in its place: nothing of the
		 * inbox was checked against the rules here. */
		if (records)
			status = amp_sync_replay(st, set, from, rc == 0 ? &base : NULL, &tip, refused,
						 NULL, &next, &out->replayed, &out->superseded, cp,
						 err);
		else
			status = amp_sync_replay_union(st, from, rc == 0 ? &base : NULL, &tip, &next,
						       err);
		if (status < 0)
			return status;
		/* Every record there already (an inbox taken again after a
		 * join died before its marker): the ref stays, and its
		 * reflog says the inbox was joined once. */
		if (git_oid_equal(&next, &tip)) {
			git_oid_cpy(&out->tip, &tip);
			return AMP_OK;
		}
		if ((rc = cas_ref(repo, ref, &tip, &next, why, err)) < 0)
			return rc;
		if (rc == 0) {
			git_oid_cpy(&out->tip, &next);
			return AMP_OK;
		}
	}
	return amp_error_set(err, AMP_EIO, "", "%s kept moving while it was joined (%d tries)",
			     ref, AMP_SYNC_JOIN_TRIES);
}

int amp_sync_absorb(amp_store *st, amp_schema_set *set, const char *ref, const git_oid *from,
		    const char *inbox, amp_sync_absorbed *out, amp_error *err)
{
	int records = !strcmp(ref, amp_store_messages_ref(st)), lock, status;
	int64_t t0 = amp_monotonic_ms(), t1;
	struct conflict c;
	char why[300];
	json_t *refused = json_array();

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	if (!refused)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	snprintf(why, sizeof(why), "amp hook: joined %.40s", git_oid_tostr_s(from));
	/* Joins on a hub take turns, as amp's writers do: one replay each,
	 * instead of every push's join racing every other's. */
	if ((lock = amp_store_lock(st, ref, err)) < 0) {
		json_decref(refused);
		return AMP_EIO;
	}
	t1 = amp_monotonic_ms();
	status = absorb_locked(st, set, ref, from, records, refused, &c, why, out, err);
	amp_store_unlock(lock);
	out->waited_ms = t1 - t0;
	out->joined_ms = amp_monotonic_ms() - t1;
	/* What the join set aside is logged, as a clone's join logs it (the
	 * join escalated each right after it, sync_escalate.h). */
	if (status == AMP_OK && json_array_size(refused))
		amp_sync_tell_refused(st, set, inbox, refused);
	json_decref(refused);
	return status;
}
