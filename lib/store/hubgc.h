/*
 * hubgc.h - a hub's `git gc --auto`, run only when it has work (hubgc.c).
 *
 * git's receive-pack runs `git gc --auto` after every push (receive.autogc),
 * a process that, almost every time, looks at the object directory and
 * finds nothing to do.  amp's server hooks turn that off (amp hook install
 * --server sets receive.autogc false) and the post-receive hook asks the
 * same questions git does, in process, and runs `git gc --auto` only when
 * one of them says yes (issue 32: a process less per push on the hub).
 */
#ifndef AMP_HUBGC_H
#define AMP_HUBGC_H

#include "base/error.h"
#include "store.h"

/*
 * When receive.autogc is false: whether `git gc --auto` would find work,
 * asked as git 2.39 asks it (gc.c: too_many_loose_objects, too_many_packs):
 * more than ceil(gc.auto / 256) loose objects in objects/17 (gc.auto,
 * default 6700; 0 or less: never), or more than gc.autoPackLimit packs
 * without a .keep (default 50; 0 or less: never).  Then runs it (git
 * detaches it, gc.autoDetach); *ran 1.  *ran 0 when receive.autogc is not
 * false (git runs it itself) or nothing is due.  AMP_OK, or AMP_EIO when
 * git could not be run or failed (its reason in err).
 */
int amp_store_hub_gc(amp_store *st, int *ran, amp_error *err);

/* Sets receive.autogc false in the repository's own config (amp hook
 * install --server), so that its post-receive runs amp_store_hub_gc
 * instead.  AMP_OK or AMP_EIO. */
int amp_store_hub_gc_install(amp_store *st, amp_error *err);

#endif
