#include "message.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "base/clock.h"
#include "base/util.h"

/* AMP/1.0 §01-§05: ACK timeouts, and the addressee: a dispatch goes to the
 * executor unless told otherwise, every other type has one receiver. */
static const amp_type_info types[] = {
	{ "task_dispatch", 1, 300, "executor" },
	{ "task_result", 1, 120, "coordinator" },
	{ "review_request", 1, 600, "reviewer" },
	{ "review_verdict", 1, 60, "coordinator" },
	{ "escalation", 0, 0, "admin" },
};

const amp_type_info *amp_type_lookup(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(types[i].name, name) == 0)
			return &types[i];
	return NULL;
}

int amp_role_in(const char *role, const char *list)
{
	size_t len = strlen(role);
	const char *p = list;

	if (!len)
		return 0;
	while ((p = strstr(p, role))) {
		if ((p == list || p[-1] == ' ') && (p[len] == ' ' || !p[len]))
			return 1;
		p += len;
	}
	return 0;
}

int amp_role_valid(const char *role)
{
	return amp_role_in(role, "admin coordinator executor reviewer system");
}

int amp_msg_id_format(char *buf, size_t bufsz, const char *type,
		      const char *task_id, int64_t ms)
{
	int n = snprintf(buf, bufsz, "%s-%s-%lld", type, task_id, (long long)ms);

	return n < 0 || (size_t)n >= bufsz ? -1 : 0;
}

int64_t amp_msg_id_ms(const char *msg_id)
{
	long long ms;

	return amp_msg_id_parse(msg_id, NULL, NULL, &ms) < 0 ? -1 : (int64_t)ms;
}

const char *amp_json_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

int amp_message_build(json_t **out, const amp_message_fields *f,
		      amp_error *err)
{
	const amp_type_info *t = amp_type_lookup(f->type);
	char msg_id[256], when[AMP_TIME_BUFSZ];
	int requires_ack, timeout;
	json_t *msg;

	if (!t)
		return amp_error_set(err, AMP_EUSAGE, "/type",
				     "unknown message type '%s' (task_dispatch, task_result, review_request, review_verdict, escalation)",
				     f->type ? f->type : "");
	if (!f->task_id || !f->from || !f->to)
		return amp_error_set(err, AMP_EUSAGE, !f->task_id ? "/task_id" :
				     !f->from ? "/from" : "/to", "missing");
	requires_ack = f->requires_ack >= 0 ? f->requires_ack : t->requires_ack;
	timeout = f->ack_timeout_sec >= 0 ? f->ack_timeout_sec : t->ack_timeout_sec;
	if (amp_msg_id_format(msg_id, sizeof(msg_id), f->type, f->task_id, f->now_ms) < 0)
		return amp_error_set(err, AMP_ESCHEMA, "/task_id",
				     "too long for a msg_id (at most %d characters)",
				     AMP_MSG_ID_MAX_LEN);
	amp_time_format(f->now_ms, when);
	msg = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:b}", "msg_id", msg_id,
			"protocol_version", AMP_PROTOCOL, "type", f->type,
			"from", f->from, "to", f->to, "task_id", f->task_id,
			"timestamp", when, "requires_ack", requires_ack);
	if (!msg)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (requires_ack && timeout > 0)
		json_object_set_new(msg, "ack_timeout_sec", json_integer(timeout));
	if (f->context_ref && json_array_size(f->context_ref))
		json_object_set(msg, "context_ref", f->context_ref);
	json_object_set_new(msg, "payload",
			    f->payload ? json_incref(f->payload) : json_object());
	*out = msg;
	return AMP_OK;
}

char *amp_message_dump(const json_t *msg)
{
	char *text = amp_json_dumps(msg, AMP_RECORD_DUMP_FLAGS), *nl;
	size_t len;

	if (!text)
		return NULL;
	len = strlen(text);
	if (!(nl = realloc(text, len + 2))) {
		free(text);
		return NULL;
	}
	nl[len] = '\n';
	nl[len + 1] = '\0';
	return nl;
}

/* amp_message_validate and amp_control_validate: the bounds, then the
 * schema of `uri`. */
static int validate_record(amp_schema_set *set, const char *uri, json_t *msg,
			   amp_errlist *errors)
{
	json_t *schema = amp_schema_set_lookup(set, uri);

	if (!schema)
		return amp_errlist_add(errors, AMP_EIO, "",
				       "schema %s is not installed", uri);
	/* The bounds first: a record past them is refused whatever it says,
	 * and the validator never walks it. */
	if (amp_bounds_check_value(msg, 0, "", errors) < 0)
		return AMP_ESCHEMA;
	return amp_schema_validate(set, schema, NULL, msg, errors);
}

int amp_message_validate(amp_schema_set *set, json_t *msg, int ack,
			 amp_errlist *errors)
{
	return validate_record(set, ack ? AMP_SCHEMA_ACK : AMP_SCHEMA_MESSAGE, msg, errors);
}

int amp_control_validate(amp_schema_set *set, json_t *doc, amp_errlist *errors)
{
	return validate_record(set, AMP_SCHEMA_CONTROL, doc, errors);
}

int64_t amp_message_ack_deadline(const json_t *msg)
{
	const amp_type_info *t = amp_type_lookup(amp_json_str(msg, "type"));
	const char *ts = amp_json_str(msg, "timestamp");
	json_t *timeout = json_object_get(msg, "ack_timeout_sec");
	int64_t sent, secs;

	if (!json_is_true(json_object_get(msg, "requires_ack")) || !ts ||
	    amp_time_parse(ts, &sent) < 0)
		return -1;
	if (json_is_integer(timeout))
		secs = json_integer_value(timeout);
	else
		secs = t && t->ack_timeout_sec ? t->ack_timeout_sec : 300;
	return sent + secs * 1000;
}
