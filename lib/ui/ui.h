#ifndef AMP_UI_LAYER_H
#define AMP_UI_LAYER_H

/* The public interface of lib/ui/: the only header of this folder that
 * code outside it includes (share/doc/architecture.md). */
#include "cli.h"
#include "cli_write.h"
#include "dashboard.h"
#include "mcp.h"
#include "template.h"

#endif
