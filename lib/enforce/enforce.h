#ifndef AMP_ENFORCE_LAYER_H
#define AMP_ENFORCE_LAYER_H

/* The public interface of lib/enforce/: the only header of this folder that
 * code outside it includes (share/doc/architecture.md). */
#include "fsck.h"
#include "proofs.h"
#include "arrival.h"
#include "hook.h"
#include "notify.h"
#include "watch.h"

#endif
