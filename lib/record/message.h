/*
 * message.h - AMP/1.0 message types, their defaults, and envelopes.
 */
#ifndef AMP_MESSAGE_H
#define AMP_MESSAGE_H

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"
#include "schema/schema.h"

#define AMP_PROTOCOL "AMP/1.0"

/* The longest ACK timeout a message may ask for, 7 days: the "maximum" of
 * ack_timeout_sec in message.schema.json. */
#define AMP_ACK_TIMEOUT_MAX 604800

/* What AMP/1.0 says about one message type. */
typedef struct amp_type_info {
	const char *name;
	int requires_ack;     /* default of requires_ack */
	int ack_timeout_sec;  /* default of ack_timeout_sec (0: none) */
	const char *default_to; /* the addressee when none is named (who may
				 * write to whom is message.schema.json's) */
} amp_type_info;

/* The type called `name`, or NULL. */
const amp_type_info *amp_type_lookup(const char *name);

/* 1 when `role` is one of the space-separated words of `list`. */
int amp_role_in(const char *role, const char *list);

/* The role names AMP/1.0 knows ("admin coordinator executor reviewer system"). */
int amp_role_valid(const char *role);

/* What amp_message_build needs; -1 in an int field means "the type's
 * default". */
typedef struct amp_message_fields {
	const char *type;
	const char *task_id;
	const char *from;
	const char *to;
	json_t *payload;      /* borrowed; NULL = {} */
	json_t *context_ref;  /* borrowed array of msg_ids, or NULL */
	int requires_ack;
	int ack_timeout_sec;
	int64_t now_ms;
} amp_message_fields;

/* Builds a complete envelope: msg_id "{type}-{task_id}-{now_ms}",
 * protocol_version, timestamp, ACK fields from the type's defaults unless
 * overridden.  The caller owns *out.  Does not validate. */
int amp_message_build(json_t **out, const amp_message_fields *f,
		      amp_error *err);

/* Writes "{type}-{task_id}-{ms}" into buf; -1 when it does not fit. */
int amp_msg_id_format(char *buf, size_t bufsz, const char *type,
		       const char *task_id, int64_t ms);

/* The unix_ms part of a msg_id, or -1 when msg_id is not one
 * (amp_msg_id_parse, common.schema.json's pattern). */
int64_t amp_msg_id_ms(const char *msg_id);

/* The string member `key` of obj, or NULL. */
const char *amp_json_str(const json_t *obj, const char *key);

/* Serialises a record as amp stores it (2-space indent, member order kept,
 * trailing newline).  The caller frees the string. */
char *amp_message_dump(const json_t *msg);

#define AMP_RECORD_DUMP_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER)

/* Validates msg against the AMP/1.0 message schema (AMP_OK or
 * AMP_ESCHEMA, every error appended), or against the ACK schema when
 * `ack` is set.  A record past the bounds (bounds.h) is refused with those
 * errors only, before the schema is applied. */
int amp_message_validate(amp_schema_set *set, json_t *msg, int ack,
			 amp_errlist *errors);

/* Validates one of amp's control records (write/control.h: resume,
 * approve, claim, register, ...) as amp_message_validate does, against
 * schemas/control.schema.json: AMP_OK, AMP_ESCHEMA with the errors
 * appended, or AMP_EIO. */
#define AMP_SCHEMA_CONTROL AMP_SCHEMA_BASE "control.schema.json"
int amp_control_validate(amp_schema_set *set, json_t *doc, amp_errlist *errors);

/* When msg requires an ACK: its deadline in Unix ms (timestamp +
 * ack_timeout_sec, the type's default when absent).  -1 when no ACK is
 * required or the timestamp is unreadable. */
int64_t amp_message_ack_deadline(const json_t *msg);

#endif
