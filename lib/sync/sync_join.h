/*
 * sync_join.h - a local ref joined with its mirror (sync_join.c).
 * Private to lib/sync/.
 */
#ifndef AMP_SYNC_JOIN_H
#define AMP_SYNC_JOIN_H

#include "schema/schema.h"
#include "sync_index.h"

/* What a join left to do. */
struct joined {
	git_oid tip;       /* the local ref now */
	int have_remote;   /* the remote has the ref */
	git_oid remote;    /* its tip, when it has */
	int push;          /* the remote lacks commits of tip */
	unsigned long replayed;
	unsigned long superseded;
};

/* Reads ref into *id; 1 when it exists, 0 when not, AMP_EIO. */
int amp_sync_read_ref(git_repository *repo, const char *ref, git_oid *id, amp_error *err);

/*
 * Joins local `ref` with its mirror: diverged histories by replaying the
 * local records onto the mirror's tip (`records`: the messages ref) or the
 * local files (the errors ref); *j says what is left to do.  `refused`
 * and `aside` as amp_sync_replay's.  AMP_OK, AMP_ERULE with *c filled,
 * AMP_EIO.
 */
int amp_sync_join(amp_store *st, amp_schema_set *set, const char *ref, const char *mirror,
		  int records, json_t *refused, json_t *aside, struct joined *j,
		  struct conflict *c, amp_error *err);

#endif
