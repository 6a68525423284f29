/*
 * recindex.h - which commit brought each record of the messages ref, kept
 * beside the SSOT so that a question about one record reads no history
 * (issue 35, item 0: `amp show` of the oldest message of 1M walked every
 * commit back from the tip, diffing its trees, for 127 s).
 *
 * <state dir>/recindex/ holds sorted runs of fixed-size entries (a key
 * hashed from the record's task, kind and id; the commit that added it to
 * its first parent; that commit's time) and a head naming the runs, newest
 * first, and the tip of the messages ref they cover.  When the ref moved,
 * the next lookup walks the first parents from the new tip down to the
 * covered one (only the new commits), and when the history was rewritten
 * (a sync's replay, a ref moved back) down to where the two meet, the old
 * side's records marked gone; only a missing or unreadable head walks the
 * whole history.  Runs are merged as git's geometric repack merges packs
 * (a run at least half the next older one's size is merged into it), each
 * merge streamed from the two files, so a rebuild of any history holds at
 * most AMP_RECINDEX_BATCH entries in memory.
 *
 * It is a derived file like the others (cache.h), safe to delete, and
 * never trusted: each answer is checked against the commit it names (that
 * commit's tree differs from its first parent's by that record), and a
 * lookup that finds nothing or an entry that does not check out says so,
 * for the caller to walk the history as before.  The entries do not depend
 * on how a build derives states, so the directory names a format, not the
 * build (a new build would otherwise walk a 1M history again).
 */
#ifndef AMP_RECINDEX_H
#define AMP_RECINDEX_H

#include <git2.h>
#include <stdint.h>

#include "store.h"

/* Entries gathered in memory before they are sorted into a run. */
#define AMP_RECINDEX_BATCH 65536
/* Commits walked from the new tip looking for the covered one before the
 * two are compared for a rewritten history (git_merge_base). */
#define AMP_RECINDEX_FF_WALK 1024

/*
 * The commit that added record `id` of `kind` in task `task` to the
 * messages ref, found in the index (brought up to the ref's tip first,
 * best effort) and checked against that commit.  1 with *commit (and
 * *ms, its committer time in ms, when not NULL); 0 when the index cannot
 * tell (no entry, an entry that does not check out, the index busy or
 * unwritable): the caller walks the history.  Never an error.
 */
int amp_recindex_find(amp_store *st, const char *task, amp_entry_kind kind, const char *id,
		      git_oid *commit, int64_t *ms);

/*
 * Brings the index up to the messages ref's tip now (amp_recindex_find
 * does it first too), building it when absent.  AMP_OK, or AMP_EIO when
 * it could not (the index is then left as it was).  *walked, when not
 * NULL, gets how many commits were read.
 */
int amp_recindex_update(amp_store *st, unsigned long *walked, amp_error *err);

#endif
