/*
 * inbox_agent.h - one instance's view of its role's inbox (amp inbox
 * --agent NAME): several agents per role share the role's messages, and
 * a message sent to one of them (amp send --to NAME@ROLE) is kept with an
 * "address" control record beside it (control.schema.json), since
 * AMP/1.0's envelope names roles only.
 */
#ifndef AMP_INBOX_AGENT_H
#define AMP_INBOX_AGENT_H

#include <stdint.h>

#include "base/error.h"
#include "store/store.h"
#include "inbox.h"

/*
 * Narrows in->messages (read by amp_inbox_read for the role) to what
 * instance `agent` sees at now_ms, read from the tasks at in->tip:
 *   - a message with an address record is kept only for the instance it
 *     names, and gets "for_agent": NAME;
 *   - a message to the role without one is kept unless it is taken by
 *     another instance: the task's whole-task lease (coord.h) in force
 *     at now_ms is another instance's (it gets "for_agent": null).
 * Returns AMP_OK, or AMP_EIO when a task cannot be read (never a partial
 * view).
 */
int amp_inbox_for_agent(amp_store *st, const char *agent, int64_t now_ms,
			amp_inbox *in, amp_error *err);

#endif
