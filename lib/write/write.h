#ifndef AMP_WRITE_LAYER_H
#define AMP_WRITE_LAYER_H

/* The public interface of lib/write/: the only header of this folder that
 * code outside it includes (share/doc/architecture.md). */
#include "control.h"
#include "coord_write.h"
#include "guard.h"
#include "import.h"
#include "record_writer.h"
#include "register.h"
#include "send.h"
#include "verdict.h"

#endif
