/*
 * names.h - the names amp gives things in the SSOT and reads back from it:
 * agent instances, the places of register records, the refs a hub takes
 * clones' pushes in.  Pure functions of strings: no repository here.
 */
#ifndef AMP_NAMES_H
#define AMP_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* An agent instance's name (store.h amp_store_set_agent): 1..AMP_AGENT_MAX
 * of [A-Za-z0-9._-] (as a signing principal's instance part, sign.h), so
 * it is safe in a trailer and on a terminal, and not one git refuses as a
 * directory name. */
#define AMP_AGENT_MAX 64
/* NULL when name[0..len) is an agent name, else why not (static): "(1
 * to 64 of A-Z a-z 0-9 . _ -)", a name git refuses as a directory
 * (gitpath.h: ".", "..", ".git", ".gitmodules", ".GITATTRIBUTES.", ...)
 * or only dots ("...": git drops them from the commits' author name). */
const char *amp_agent_problem(const char *name, size_t len);
/* 1 when name[0..len) is an agent name (amp_agent_problem is NULL). */
int amp_agent_valid(const char *name, size_t len);

/* The directory of the agent registry (registry.h) on the messages ref. */
#define AMP_REGISTRY_DIR "agents"
/* The head of a register record's name there. */
#define AMP_REGISTER_HEAD "register-"

/*
 * Splits path "agents/<agent>/register-<ms>-<hex12>.json" into the agent
 * (agentsz >= AMP_AGENT_MAX + 1), the time and the blob prefix (hex, 13
 * bytes).  0, or -1 when the path is not a register record's place.
 */
int amp_registry_parse_path(const char *path, char *agent, size_t agentsz, int64_t *ms,
			    char hex[13]);

/* The namespace a hub takes clones' pushes in (git config amp.syncPush
 * inbox, sync.h): refs/amp-in/<sync id>/messages and .../errors. */
#define AMP_SYNC_INBOX "refs/amp-in/"
/* Where the hub's join says what it made of each inbox (lib/sync/sync_hub.c):
 * refs/amp-joined/<sync id>/<name>, written by the hub only. */
#define AMP_SYNC_JOINED "refs/amp-joined/"

#endif
