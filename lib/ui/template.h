/*
 * template.h - example payloads and self-contained schemas, made from the
 * schemas in schemas/ so that they cannot drift from what amp validates:
 * `amp send TYPE --template` and `amp schema TYPE`.
 */
#ifndef AMP_TEMPLATE_H
#define AMP_TEMPLATE_H

#include <jansson.h>

#include "base/error.h"
#include "schema/schema.h"
#include "store/store.h"

/* The URI of the schema named `name` ("task_dispatch", "common", ...):
 * AMP_SCHEMA_BASE "<name>.schema.json", into buf.  Returns 0, or -1 when
 * name is not a plain word of [a-z_] or does not fit. */
int amp_template_schema_uri(const char *name, char *buf, size_t bufsz);

/* The names of the schemas amp loads (the *.schema.json files of
 * amp_schema_dir()), sorted, as a new array of {"name", "title"} the
 * caller decrefs.  No schema directory: AMP_EIO. */
int amp_template_schema_names(amp_schema_set *set, json_t **out,
			      amp_error *err);

/*
 * Copies the schema `uri` with every "$ref" replaced by what it names,
 * recursively, so that one document says everything (a "description"
 * beside a "$ref" is kept: it is the more specific one).  *out is new;
 * the caller decrefs it.  Unknown uri or a "$ref" that resolves nowhere:
 * AMP_EUSAGE / AMP_EIO.
 */
int amp_template_resolve(amp_schema_set *set, const char *uri, json_t **out,
			 amp_error *err);

/*
 * What the SSOT knows about one task, for a template that can be sent as
 * it is: {"msg_ids": [newest first], "values": {"task_status",
 * "reject_count", "last_successful_msg_id", "repo"}} -- "repo" the work
 * tree of the store's repository when it has one.  *out is new; the caller
 * decrefs it.  An unreadable task: AMP_EIO.
 */
int amp_template_facts(amp_store *st, const char *task_id, json_t **out,
		       amp_error *err);

/* Adds to `values` what the task's dispatch in force in `log` says: "repo"
 * (the work repository it names), "subtask_id" (its first subtask),
 * "criteria_met" (one true per acceptance criterion) and
 * "criteria_results" (one passed result per criterion).  Nothing when the
 * task has no dispatch. */
void amp_template_dispatch_facts(const amp_task_log *log, json_t *values);

/*
 * Builds an example instance of the schema `uri`, walking its properties:
 * only the required members, each with a value its own subschema accepts
 * (checked with the validator): a fact of `facts` (may be NULL) by member
 * name or, for a string, one of its msg_ids; else the const, the enum
 * value that sets off the fewest of the object's if/then conditions, an
 * example of the format or the pattern, "example-<name>", the maximum
 * (else minimum, else 0) of a number, false, one item of an array.  The
 * conditions the object then meets add their required members and
 * consts.  The whole instance is validated last: *out (new, the caller
 * decrefs it) conforms, or the result is AMP_ESCHEMA with the path of the
 * member no example could be made for.
 */
int amp_template_build(amp_schema_set *set, const char *uri,
		       const json_t *facts, json_t **out, amp_error *err);

#endif
