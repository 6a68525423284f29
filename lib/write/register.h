/*
 * register.h - writing the agent registry's records (protocol/registry.h
 * says what they are and which is in force).
 */
#ifndef AMP_REGISTER_H
#define AMP_REGISTER_H

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"
#include "schema/schema.h"
#include "store/store.h"

/*
 * Writes the register record of `agent` by `from` at now_ms: its roles
 * (1..AMP_ROLES_MAX, each once) and capabilities (0..AMP_CAPABILITIES_MAX,
 * each once).  `from` must be "admin" or one of the roles (AMP_ERULE,
 * logged).  The path written goes to path[0..pathsz).  The commit's
 * author is `from`; its Amp-Agent is the store's instance (amp_store_set_
 * agent), which the caller sets to `agent` unless the admin writes.
 */
int amp_registry_write(amp_store *st, amp_schema_set *set, const char *agent,
		       const char *from, const char *const *roles, size_t nroles,
		       const char *const *caps, size_t ncaps, int64_t now_ms,
		       char *path, size_t pathsz, amp_errlist *errors);

#endif
