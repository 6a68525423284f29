/*
 * release.c - letting go of what libgit2 keeps of the objects a long walk
 * read (store.h amp_store_release_packs).
 */
#include <git2.h>
#include <git2/sys/repository.h>

#include "store_int.h"

/*
 * libgit2 keeps, per open pack, the delta bases it unpacked (up to 16 MiB
 * a pack, a limit no option changes) until the pack is closed, and the
 * repository keeps its packs open as long as its object database: a walk
 * of the whole history of an SSOT in 18 packs (30,000 messages, amp
 * import's batches) ended with 83 MB of them, 115 MB resident in all.
 * git_repository__cleanup drops the object database (and the parsed
 * objects' cache, the config and refdb handles), which the next lookup
 * opens again as the repository's default: the packs are closed, and
 * their caches freed, unless someone else holds the odb.  Not during a
 * batch, whose odb in front of the repository's holds new objects.
 */
void amp_store_release_packs(amp_store *st)
{
	if (st->batch)
		return;
	git_repository__cleanup(st->repo);
}
