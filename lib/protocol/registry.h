/*
 * registry.h - the agent registry: what each named instance declares it
 * is (its roles) and can do (its capabilities), in the SSOT.
 *
 * A register record belongs to no task, so it lives in a top-level
 * directory of its own on the messages ref:
 *
 *   agents/<agent>/register-<unix_ms>-<blob12>.json
 *
 *   {"protocol_version", "type":"register", "from":ROLE, "agent":NAME,
 *    "roles":[ROLE...], "capabilities":[C...]?, "timestamp"}
 *
 * <unix_ms> is the record's timestamp and <blob12> the first 12 hex digits
 * of its git blob id, so a name is one content: two clones that register
 * offline never write the same path twice, and amp sync's join is a plain
 * union of paths, with no rule that depends on the order (the declaration
 * in force is decided from the records alone).  Append-only, like every
 * record: an agent declares again to change what it declared.
 *
 * In force: an agent's newest register record by timestamp (the greater
 * name on a tie) that is well formed in its place.  Who may write one: the
 * instance itself, as one of the roles it declares (the commit names it:
 * its Amp-Agent trailer is the record's agent; in strict signing mode the
 * key's principal is "<agent>@<from>"), or the admin (any agent).
 */
#ifndef AMP_REGISTRY_H
#define AMP_REGISTRY_H

#include <git2.h>
#include <jansson.h>
#include <stdint.h>

#include "base/error.h"
#include "schema/schema.h"
#include "store/store.h"

#define AMP_CAPABILITIES_MAX 64 /* capabilities of one declaration */
#define AMP_ROLES_MAX 4         /* admin coordinator executor reviewer */

/*
 * The form and the role of register record `doc` at `path` whose blob is
 * `blob` (what a push, a fetch or fsck brings): its place (the path's
 * agent, time and blob prefix are the record's), its schema, and that its
 * `from` is "admin" or one of its roles.  With commit_agent not NULL (the
 * Amp-Agent trailer of the commit that adds it, "" for none), a record
 * not from the admin must be written by the instance itself.  AMP_OK,
 * AMP_ESCHEMA (form) or AMP_ERULE (role), the reasons appended to errors
 * (paths are JSON pointers into the record); AMP_EIO.
 */
int amp_registry_check(amp_schema_set *set, const char *path, const git_oid *blob,
		       const json_t *doc, const char *commit_agent, amp_errlist *errors);

/* 1 when `role` is one of the strings of array `roles`. */
int amp_registry_has_role(const json_t *roles, const char *role);

/*
 * The declarations in force on tip tree `tip` (NULL: none), as a new JSON
 * object agent -> {"roles", "capabilities" (arrays of strings, sorted),
 * "from", "declared" (the record's timestamp), "record" (its path)}.
 * Reads the agents/ directory only, each agent's records newest first
 * until one is in force (amp_registry_check without the commit: amp fsck
 * and the hub's hook check that one); the others are passed over.  AMP_OK or AMP_EIO.
 */
int amp_registry_read(amp_store *st, amp_schema_set *set, git_tree *tip, json_t **out,
		      amp_error *err);

/*
 * Adds to `added` (path -> blob id, hex) every file below agents/ that
 * tree b holds and tree a (NULL: empty) does not hold with the same blob;
 * subtrees with the same id are skipped.  0, or -1 when a tree cannot be
 * read.
 */
int amp_registry_diff(git_repository *repo, git_tree *a, git_tree *b, json_t *added);

#endif
