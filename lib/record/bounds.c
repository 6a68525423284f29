#include "bounds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "base/util.h"
#include "json/json.h"

static int digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

int amp_task_id_valid(const char *id, size_t len)
{
	/* AMP/1.0 §00: "T-YYYY-NNN"; more digits for busy years, bounded so
	 * that every id fits its buffers and file names. */
	return len >= 7 + AMP_TASK_ID_MIN_DIGITS && len <= AMP_TASK_ID_MAX_LEN &&
	       id[0] == 'T' && id[1] == '-' && digits(id + 2, 4) &&
	       id[6] == '-' && digits(id + 7, len - 7);
}

int amp_msg_id_parse(const char *msg_id, const char **task, size_t *task_len,
		     long long *ms)
{
	static const char *const types[] = { "task_dispatch", "task_result",
		"review_request", "review_verdict", "escalation" };
	const char *t, *last;
	size_t i, n, ms_len;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		n = strlen(types[i]);
		if (!strncmp(msg_id, types[i], n) && msg_id[n] == '-')
			break;
	}
	if (i == sizeof(types) / sizeof(types[0]))
		return -1;
	t = msg_id + n + 1;
	if (!(last = strrchr(t, '-')) || last == t)
		return -1;
	ms_len = strlen(last + 1);
	if (!amp_task_id_valid(t, (size_t)(last - t)) || !ms_len ||
	    ms_len > AMP_MSG_ID_MS_MAX_DIGITS || !digits(last + 1, ms_len) ||
	    (last[1] == '0' && ms_len > 1))
		return -1;
	if (task)
		*task = t;
	if (task_len)
		*task_len = (size_t)(last - t);
	if (ms)
		*ms = strtoll(last + 1, NULL, 10);
	return 0;
}

/* One open container of the pre-scan: for an object, where its current
 * member name is in the buffer (quotes included); for an array, the index
 * of its current element. */
struct level {
	char kind;          /* '{' or '[' */
	int expect_name;    /* an object whose next string is a member name */
	size_t index;
	const char *name;
	size_t name_len;
};

/* The JSON pointer of the value the pre-scan is in, for the error. */
static void scan_pointer(const struct level *stack, int n, const char *base,
			 char *buf, size_t bufsz)
{
	char num[32];
	json_t *name;
	int i;

	snprintf(buf, bufsz, "%s", base);
	for (i = 0; i < n; i++) {
		if (stack[i].kind == '[') {
			snprintf(num, sizeof(num), "%zu", stack[i].index);
			amp_pointer_append(buf, bufsz, num);
			continue;
		}
		/* The name as written, escapes and all, is a JSON string. */
		name = stack[i].name ? amp_json_loadb(stack[i].name, stack[i].name_len,
						      JSON_DECODE_ANY, NULL, NULL) : NULL;
		amp_pointer_append(buf, bufsz, json_is_string(name) ?
				   json_string_value(name) : "");
		json_decref(name);
	}
}

int amp_bounds_check_bytes(const char *buf, size_t len, size_t total,
			   int base_depth, const char *pointer, amp_error *err)
{
	struct level stack[AMP_LIMIT_DEPTH];
	char where[AMP_PATH_MAX];
	int n = 0, in_string = 0, escaped = 0;
	const char *string_start = NULL;
	size_t i;

	if (len > AMP_LIMIT_MESSAGE_BYTES) {
		if (total >= len)
			return amp_error_set(err, AMP_ESCHEMA, pointer,
					     "%zu bytes, more than the %d-byte message size limit",
					     total, AMP_LIMIT_MESSAGE_BYTES);
		return amp_error_set(err, AMP_ESCHEMA, pointer,
				     "more than %d bytes: past the %d-byte message size limit",
				     AMP_LIMIT_MESSAGE_BYTES, AMP_LIMIT_MESSAGE_BYTES);
	}
	for (i = 0; i < len; i++) {
		char c = buf[i];
		struct level *top = n ? &stack[n - 1] : NULL;

		if (in_string) {
			if (escaped) {
				escaped = 0;
			} else if (c == '\\') {
				escaped = 1;
			} else if (c == '"') {
				in_string = 0;
				if (top && top->kind == '{' && top->expect_name) {
					top->name = string_start;
					top->name_len = (size_t)(buf + i + 1 - string_start);
					top->expect_name = 0;
				}
			}
			continue;
		}
		switch (c) {
		case '"':
			in_string = 1;
			string_start = buf + i;
			break;
		case '{':
		case '[':
			if (base_depth + n + 1 > AMP_LIMIT_DEPTH) {
				scan_pointer(stack, n, pointer, where, sizeof(where));
				return amp_error_set(err, AMP_ESCHEMA, where,
						     "nested deeper than the %d-level depth limit (the record is level 1)",
						     AMP_LIMIT_DEPTH);
			}
			memset(&stack[n], 0, sizeof(stack[n]));
			stack[n].kind = c;
			stack[n].expect_name = c == '{';
			n++;
			break;
		case '}':
		case ']':
			if (n)
				n--;
			break;
		case ',':
			if (top && top->kind == '[')
				top->index++;
			else if (top)
				top->expect_name = 1;
			break;
		default:
			break;
		}
	}
	return AMP_OK;
}

/* Code points of a UTF-8 string (jansson has checked the encoding). */
static size_t chars(const char *s, size_t bytes)
{
	size_t i, n = 0;

	for (i = 0; i < bytes; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			n++;
	return n;
}

static void check_tree(const json_t *v, int depth, char *path, size_t pathsz,
		       amp_errlist *errors)
{
	size_t used = strlen(path), i, n;
	const char *key;
	json_t *member;
	char num[32];

	if (depth > AMP_LIMIT_DEPTH) {
		amp_errlist_add(errors, AMP_ESCHEMA, path,
				"nested deeper than the %d-level depth limit (the record is level 1)",
				AMP_LIMIT_DEPTH);
		return;
	}
	if (json_is_string(v)) {
		n = chars(json_string_value(v), json_string_length(v));
		if (n > AMP_LIMIT_STRING_CHARS)
			amp_errlist_add(errors, AMP_ESCHEMA, path,
					"%zu characters, longer than the %d-character string limit",
					n, AMP_LIMIT_STRING_CHARS);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, member) {
			snprintf(num, sizeof(num), "%zu", i);
			amp_pointer_append(path, pathsz, num);
			check_tree(member, depth + 1, path, pathsz, errors);
			path[used] = '\0';
		}
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, member) {
			amp_pointer_append(path, pathsz, key);
			n = chars(key, strlen(key));
			if (n > AMP_LIMIT_STRING_CHARS)
				amp_errlist_add(errors, AMP_ESCHEMA, path,
						"member name of %zu characters, longer than the %d-character string limit",
						n, AMP_LIMIT_STRING_CHARS);
			check_tree(member, depth + 1, path, pathsz, errors);
			path[used] = '\0';
		}
	}
}

/* Depth, strings and member names of a value whose parent is at
 * `base_depth`; appends every violation. */
static int check_value_tree(const json_t *value, int base_depth,
			    const char *pointer, amp_errlist *errors)
{
	char path[AMP_PATH_MAX];
	size_t before = errors->count;

	snprintf(path, sizeof(path), "%s", pointer);
	check_tree(value, base_depth + 1, path, sizeof(path), errors);
	return errors->count > before ? AMP_ESCHEMA : AMP_OK;
}

size_t amp_message_dump_size(const json_t *msg)
{
	char *text = amp_json_dumps(msg, AMP_RECORD_DUMP_FLAGS);
	size_t size = text ? strlen(text) + 1 : (size_t)-1; /* the trailing newline */

	free(text);
	return size;
}

int amp_bounds_check_value(const json_t *value, int base_depth,
			   const char *pointer, amp_errlist *errors)
{
	size_t size;

	if (check_value_tree(value, base_depth, pointer, errors) < 0)
		return AMP_ESCHEMA;
	/* The stored form is indented, so it can be larger than a compact
	 * input: the reader must find it within the limit too. */
	if (base_depth == 0 &&
	    (size = amp_message_dump_size(value)) > AMP_LIMIT_MESSAGE_BYTES)
		return amp_errlist_add(errors, AMP_ESCHEMA, pointer,
				       "%zu bytes as stored, more than the %d-byte message size limit",
				       size, AMP_LIMIT_MESSAGE_BYTES);
	return AMP_OK;
}

int amp_bounds_parse_record(const char *buf, size_t len, json_t **out,
			    amp_error *err)
{
	amp_errlist errors = { 0 };
	json_t *doc = NULL;
	amp_error why;
	int status;

	*out = NULL;
	if ((status = amp_bounds_check_bytes(buf, len, len, 0, "", &why)) < 0 ||
	    (status = amp_json_parse(buf, len, &doc, &why)) < 0)
		goto cleanup;
	/* These bytes are the record as stored, and amp_bounds_check_bytes
	 * has measured them: no need to serialise it again to know its size. */
	if ((status = check_value_tree(doc, 0, "", &errors)) < 0) {
		why = errors.items[0];
		goto cleanup;
	}
	*out = doc;
	doc = NULL;
cleanup:
	/* An unreadable record shows one line: the path goes in it. */
	if (status < 0)
		amp_error_set(err, status, why.path, "%s%s%s", why.path,
			      why.path[0] ? ": " : "", why.message);
	json_decref(doc);
	amp_errlist_free(&errors);
	return status;
}
