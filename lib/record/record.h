#ifndef AMP_RECORD_LAYER_H
#define AMP_RECORD_LAYER_H

/* The public interface of lib/record/: the only header of this folder that
 * code outside it includes (share/doc/architecture.md). */
#include "bounds.h"
#include "message.h"
#include "names.h"
#include "validate.h"

#endif
