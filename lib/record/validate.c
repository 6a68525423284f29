#include "validate.h"

#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "base/util.h"
#include "json/json.h"

int amp_validate_worst(int a, int b)
{
	static const int order[] = { AMP_OK, AMP_ESCHEMA, AMP_ERULE,
				     AMP_EUSAGE, AMP_EIO };
	int ra = 0, rb = 0, i;

	for (i = 0; i < 5; i++) {
		if (order[i] == a)
			ra = i;
		if (order[i] == b)
			rb = i;
	}
	return ra >= rb ? a : b;
}

static struct amp_validate_result *add_result(amp_validate_results *out,
					      size_t line)
{
	struct amp_validate_result *items, *r;
	size_t alloc;

	if (out->count == out->alloc) {
		alloc = out->alloc ? out->alloc * 2 : 8;
		if (!(items = realloc(out->items, alloc * sizeof(*items))))
			return NULL;
		out->items = items;
		out->alloc = alloc;
	}
	r = &out->items[out->count++];
	memset(r, 0, sizeof(*r));
	r->line = line;
	return r;
}

/* Records a parse failure; in JSON-lines mode (line > 0) the parser's
 * "line 1" is dropped from the reason, since the result names the line of
 * the file already. */
static int parse_failed(amp_validate_results *out, size_t line,
			const amp_error *err)
{
	static const char prefix[] = "invalid JSON at line 1, column ";
	struct amp_validate_result *r = add_result(out, line);

	if (!r)
		return AMP_EIO;
	if (line && !strncmp(err->message, prefix, sizeof(prefix) - 1))
		r->status = amp_errlist_add(&r->errors, AMP_ESCHEMA, "",
					    "invalid JSON at column %s",
					    err->message + sizeof(prefix) - 1);
	else
		r->status = amp_errlist_add(&r->errors, AMP_ESCHEMA, "", "%s",
					    err->message);
	return r->status;
}

/* amp's records are bounded (bounds.h) the same here as in amp send, so
 * that both agree; any other schema is checked as JSON Schema alone. */
static int bounded_schema(const json_t *schema)
{
	const char *id = json_string_value(json_object_get(schema, "$id"));

	return id && !strncmp(id, AMP_SCHEMA_BASE, strlen(AMP_SCHEMA_BASE));
}

/* amp_bounds_check_bytes when `schema` is one of amp's, else AMP_OK. */
static int check_bytes(const json_t *schema, const char *buf, size_t len,
		       amp_error *err)
{
	return bounded_schema(schema) ? amp_bounds_check_bytes(buf, len, len, 0, "", err)
				      : AMP_OK;
}

static int bounds_failed(amp_validate_results *out, size_t line,
			 const amp_error *err)
{
	struct amp_validate_result *r = add_result(out, line);

	if (!r)
		return AMP_EIO;
	r->status = amp_errlist_add(&r->errors, err->status, err->path, "%s",
				    err->message);
	return r->status;
}

static int check_value(amp_schema_set *set, json_t *schema, json_t *value,
		       size_t line, amp_validate_results *out)
{
	struct amp_validate_result *r = add_result(out, line);

	if (!r)
		return AMP_EIO;
	if (bounded_schema(schema) &&
	    (r->status = amp_bounds_check_value(value, 0, "", &r->errors)) < 0)
		return r->status;
	r->status = amp_schema_validate(set, schema, NULL, value, &r->errors);
	return r->status;
}

static int check_line(amp_schema_set *set, json_t *schema, const char *buf,
		      size_t len, size_t line, amp_validate_results *out)
{
	json_t *value = NULL;
	amp_error err;
	int status;

	if (check_bytes(schema, buf, len, &err) < 0)
		return bounds_failed(out, line, &err);
	if (amp_json_parse(buf, len, &value, &err) < 0)
		return parse_failed(out, line, &err);
	status = check_value(set, schema, value, line, out);
	json_decref(value);
	return status;
}

static int blank(const char *s, size_t n)
{
	while (n--)
		if (!strchr(" \t\r\n", *s++))
			return 0;
	return 1;
}

/* The next line of buf[*pos..len): its start and length without "\n". */
static int next_line(const char *buf, size_t len, size_t *pos,
		     const char **start, size_t *n)
{
	const char *nl;

	if (*pos >= len)
		return 0;
	*start = buf + *pos;
	nl = memchr(*start, '\n', len - *pos);
	*n = nl ? (size_t)(nl - *start) : len - *pos;
	*pos += *n + 1;
	return 1;
}

int amp_validate_buffer(amp_schema_set *set, json_t *schema, const char *buf,
			size_t len, amp_validate_results *out)
{
	json_t *value = NULL;
	amp_error whole, err;
	const char *line, *first = NULL;
	size_t pos = 0, n, first_len = 0, lineno = 0, nonblank = 0;
	int status = AMP_OK, bounded;

	/* A whole buffer past the bounds may still be JSON lines, each
	 * within them; the parser never sees it whole. */
	if ((bounded = check_bytes(schema, buf, len, &whole)) == 0 &&
	    amp_json_parse(buf, len, &value, &whole) == 0) {
		status = check_value(set, schema, value, 0, out);
		json_decref(value);
		return status;
	}
	while (next_line(buf, len, &pos, &line, &n) && nonblank < 2) {
		if (blank(line, n))
			continue;
		if (!nonblank++) {
			first = line;
			first_len = n;
		}
	}
	if (nonblank < 2 || first_len == len ||
	    check_bytes(schema, first, first_len, &err) < 0 ||
	    amp_json_parse(first, first_len, &value, &err) < 0)
		return bounded < 0 ? bounds_failed(out, 0, &whole)
				   : parse_failed(out, 0, &whole);
	json_decref(value);
	pos = 0;
	while (next_line(buf, len, &pos, &line, &n)) {
		lineno++;
		if (blank(line, n))
			continue;
		status = amp_validate_worst(status, check_line(set, schema,
					    line, n, lineno, out));
	}
	return status;
}

void amp_validate_results_free(amp_validate_results *results)
{
	size_t i;

	for (i = 0; i < results->count; i++)
		amp_errlist_free(&results->items[i].errors);
	free(results->items);
	results->items = NULL;
	results->count = results->alloc = 0;
}
