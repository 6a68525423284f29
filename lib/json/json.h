#ifndef AMP_JSON_LAYER_H
#define AMP_JSON_LAYER_H

/* The public interface of lib/json/: the only header of this folder that
 * code outside it includes (share/doc/architecture.md). */
#include "jsonparse.h"

#endif
