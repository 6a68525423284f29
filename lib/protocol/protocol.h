#ifndef AMP_PROTOCOL_LAYER_H
#define AMP_PROTOCOL_LAYER_H

/* The public interface of lib/protocol/: the only header of this folder that
 * code outside it includes (share/doc/architecture.md). */
#include "coord.h"
#include "progress.h"
#include "question.h"
#include "registry.h"
#include "round.h"
#include "rules.h"
#include "task.h"
#include "task_fold.h"

#endif
