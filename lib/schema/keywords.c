/*
 * keywords.c - validation: the draft-07 keywords, applied to a value.
 *
 * Values are compared as draft-07 says (1 equals 1.0, integers exactly);
 * errors carry the JSON pointer of the failing value.  "$ref"s are looked
 * up in the set (set.c), patterns matched by pattern.c.
 */
#include "schema_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/util.h"
#include "json/json.h"

/* --- values ------------------------------------------------------------ */

/* floor() and fabs() without libm, which the Makefile does not link:
 * doubles of magnitude 2^52 and more are integers already. */
static double dfloor(double d)
{
	double t;

	if (!(d > -4503599627370496.0 && d < 4503599627370496.0))
		return d;
	t = (double)(long long)d;
	return t > d ? t - 1 : t;
}

static double dabs(double d)
{
	return d < 0 ? -d : d;
}

static int is_integral(json_t *v)
{
	double d;

	if (json_is_integer(v))
		return 1;
	if (!json_is_real(v))
		return 0;
	d = json_real_value(v);
	return isfinite(d) && d == dfloor(d);
}

/* An int64 compared with a double, exactly. */
static int cmp_int_real(json_int_t i, double r)
{
	double fl;
	json_int_t fi;

	if (r >= 9223372036854775808.0)
		return -1;
	if (r < -9223372036854775808.0)
		return 1;
	fl = dfloor(r);
	fi = (json_int_t)fl;
	if (i < fi)
		return -1;
	if (i > fi)
		return 1;
	return r > fl ? -1 : 0;
}

static int num_cmp(json_t *a, json_t *b)
{
	double x, y;

	if (json_is_integer(a) && json_is_integer(b))
		return (json_integer_value(a) > json_integer_value(b)) -
		       (json_integer_value(a) < json_integer_value(b));
	if (json_is_integer(a))
		return cmp_int_real(json_integer_value(a), json_real_value(b));
	if (json_is_integer(b))
		return -cmp_int_real(json_integer_value(b), json_real_value(a));
	x = json_real_value(a);
	y = json_real_value(b);
	return (x > y) - (x < y);
}

/* Deep equality as JSON Schema means it: 1 and 1.0 are the same number. */
static int json_same(json_t *a, json_t *b)
{
	const char *key;
	json_t *v;
	size_t i;

	if (json_is_number(a) && json_is_number(b))
		return num_cmp(a, b) == 0;
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       !memcmp(json_string_value(a), json_string_value(b),
			       json_string_length(a));
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return 0;
		json_array_foreach(a, i, v)
			if (!json_same(v, json_array_get(b, i)))
				return 0;
		return 1;
	case JSON_OBJECT:
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach(a, key, v) {
			json_t *w = json_object_get(b, key);

			if (!w || !json_same(v, w))
				return 0;
		}
		return 1;
	default:
		return 1;
	}
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* FNV-1a from a basis of its own (FNV's, a digit short): the order of the
 * hashes decides which two equal items uniqueItems names. */
static uint64_t hash_bytes(const char *s, size_t n)
{
	return amp_fnv1a(1469598103934665603ULL, s, n);
}

/* A hash consistent with json_same(), for uniqueItems. */
static uint64_t json_hash(json_t *v)
{
	const char *key;
	json_t *w;
	uint64_t h;
	size_t i;
	double d;

	switch (json_typeof(v)) {
	case JSON_INTEGER:
		return mix((uint64_t)json_integer_value(v) ^ 0x1111);
	case JSON_REAL:
		d = json_real_value(v);
		if (d == dfloor(d) && d >= -9223372036854775808.0 &&
		    d < 9223372036854775808.0)
			return mix((uint64_t)(json_int_t)d ^ 0x1111);
		return mix((uint64_t)d ^ 0x2222);
	case JSON_STRING:
		return hash_bytes(json_string_value(v), json_string_length(v));
	case JSON_ARRAY:
		h = 0x3333;
		json_array_foreach(v, i, w)
			h = mix(h * 31 + json_hash(w));
		return h;
	case JSON_OBJECT:
		/* Members in any order: a commutative sum. */
		h = 0x4444;
		json_object_foreach(v, key, w)
			h += mix(hash_bytes(key, strlen(key)) * 7 + json_hash(w));
		return h;
	case JSON_TRUE:
		return 0x5555;
	case JSON_FALSE:
		return 0x6666;
	default:
		return 0x7777;
	}
}

/* Prints a number as short as round-trips. */
static const char *num_text(json_t *v, char *buf, size_t n)
{
	if (json_is_integer(v)) {
		snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else {
		snprintf(buf, n, "%.15g", json_real_value(v));
		if (strtod(buf, NULL) != json_real_value(v))
			snprintf(buf, n, "%.17g", json_real_value(v));
	}
	return buf;
}

static const char *type_name(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE: case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

static int type_is(const char *name, json_t *v)
{
	if (!strcmp(name, "integer"))
		return is_integral(v);
	if (!strcmp(name, "number"))
		return json_is_number(v);
	if (!strcmp(name, "boolean"))
		return json_is_boolean(v);
	return !strcmp(name, type_name(v));
}

static size_t utf8_length(const char *s, size_t n)
{
	size_t count = 0;

	while (n--)
		if (((unsigned char)*s++ & 0xC0) != 0x80)
			count++;
	return count;
}

/* Appends a compact dump of v to b, at most `room` bytes. */
static void dump_into(struct buf *b, json_t *v, size_t room)
{
	char *text = amp_json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

	if (!text)
		return;
	if (strlen(text) > room) {
		schema_buf_add(b, text, room);
		schema_buf_puts(b, "...");
	} else {
		schema_buf_puts(b, text);
	}
	free(text);
}

/* --- validation -------------------------------------------------------- */

struct ctx {
	amp_schema_set *set;
	amp_errlist *errs;
	struct buf ptr;		/* JSON pointer of the current value */
	unsigned depth, ref_depth;
	int fatal;
	amp_error first_fatal;	/* kept when anyOf & co. roll back */
	int silent;		/* only valid or not: no reasons kept */
	json_t *cond;		/* the "if" whose "then" is checked ... */
	json_t *cond_of;	/* ... on this instance, for check_required */
};

static int validate(struct ctx *c, json_t *s, const char *scope, json_t *v);

static int fail(struct ctx *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records an error at the current pointer; returns 1 ("invalid"). */
static int fail(struct ctx *c, int status, const char *fmt, ...)
{
	char msg[AMP_MSG_MAX];
	va_list ap;

	if (c->silent && status != AMP_EIO)
		return 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (status == AMP_EIO && !c->fatal) {
		c->fatal = 1;
		amp_error_set(&c->first_fatal, status, c->ptr.p, "%s", msg);
	}
	if (amp_errlist_add(c->errs, status, c->ptr.p, "%s", msg) != status &&
	    !c->fatal) {
		c->fatal = 1;
		amp_error_set(&c->first_fatal, AMP_EIO, "", "out of memory");
	}
	return 1;
}

static size_t push_key(struct ctx *c, const char *key)
{
	size_t mark = c->ptr.len;

	schema_buf_put_token(&c->ptr, key);
	return mark;
}

static size_t push_index(struct ctx *c, size_t i)
{
	size_t mark = c->ptr.len;
	char num[32];

	snprintf(num, sizeof(num), "/%zu", i);
	schema_buf_puts(&c->ptr, num);
	return mark;
}

static void pop(struct ctx *c, size_t mark)
{
	schema_buf_cut(&c->ptr, mark);
}

/* Validates without leaving errors behind: for "not", "if", "contains"
 * and propertyNames, whose subschema failing is not itself the error. */
static int quiet(struct ctx *c, json_t *s, const char *scope, json_t *v)
{
	size_t mark = c->errs->count;
	int bad = validate(c, s, scope, v);

	amp_errlist_truncate(c->errs, mark);
	return bad;
}

static int check_type(struct ctx *c, json_t *type, json_t *v)
{
	struct buf want = { 0 };
	json_t *t;
	size_t i;
	int bad;

	if (json_is_string(type)) {
		if (type_is(json_string_value(type), v))
			return 0;
		return fail(c, AMP_ESCHEMA, "expected %s, got %s",
			    json_string_value(type), type_name(v));
	}
	json_array_foreach(type, i, t)
		if (json_is_string(t) && type_is(json_string_value(t), v))
			return 0;
	if (!json_is_array(type))
		return 0;
	json_array_foreach(type, i, t) {
		if (!json_is_string(t))
			continue;
		if (want.len)
			schema_buf_puts(&want, i + 1 == json_array_size(type) ?
				 " or " : ", ");
		schema_buf_puts(&want, json_string_value(t));
	}
	bad = fail(c, AMP_ESCHEMA, "expected %s, got %s",
		   want.p ? want.p : "nothing", type_name(v));
	free(want.p);
	return bad;
}

/* The "not" failure in the words a reader wants: the forbidden value when
 * the schema is a plain enum or const, with the schema's description when
 * it has one (the branch: "must not be \"Main\": a protected branch ..."),
 * else the value that matched. */
static int fail_not(struct ctx *c, json_t *schema, json_t *v)
{
	struct buf value = { 0 };
	int bad;

	dump_into(&value, v, 200);
	if (json_is_object(schema) && json_object_size(schema) == 1 &&
	    (json_is_array(json_object_get(schema, "enum")) ||
	     json_object_get(schema, "const")))
		bad = fail(c, AMP_ESCHEMA, "must not be %s",
			   value.p ? value.p : "this value");
	else if (json_is_string(json_object_get(schema, "description")))
		bad = fail(c, AMP_ESCHEMA, "must not be %s: %s",
			   value.p ? value.p : "this value",
			   json_string_value(json_object_get(schema, "description")));
	else
		bad = fail(c, AMP_ESCHEMA, "%s matches the \"not\" schema, "
			   "so it is not allowed", value.p ? value.p : "the value");
	free(value.p);
	return bad;
}

static int check_enum(struct ctx *c, json_t *values, json_t *v)
{
	struct buf list = { 0 };
	json_t *e;
	size_t i;
	int bad;

	if (!json_is_array(values))
		return 0;
	json_array_foreach(values, i, e)
		if (json_same(e, v))
			return 0;
	json_array_foreach(values, i, e) {
		if (list.len > 400) {
			schema_buf_puts(&list, ", ...");
			break;
		}
		if (i)
			schema_buf_puts(&list, ", ");
		dump_into(&list, e, 200);
	}
	bad = fail(c, AMP_ESCHEMA, "must be one of %s", list.p ? list.p : "");
	free(list.p);
	return bad;
}

static int check_const(struct ctx *c, json_t *value, json_t *v)
{
	struct buf text = { 0 };
	int bad;

	if (json_same(value, v))
		return 0;
	dump_into(&text, value, 400);
	bad = fail(c, AMP_ESCHEMA, "must be equal to %s",
		   text.p ? text.p : "the constant");
	free(text.p);
	return bad;
}

static int check_multiple(struct ctx *c, json_t *m, json_t *v)
{
	char text[64];
	double x, y, q;

	if (!json_is_number(m) || json_number_value(m) <= 0)
		return 0;
	if (json_is_integer(v) && json_is_integer(m)) {
		if (json_integer_value(v) % json_integer_value(m) == 0)
			return 0;
	} else {
		x = json_number_value(v);
		y = json_number_value(m);
		q = x / y;
		/* 0.0075 / 0.0001 is 74.99999999999999 in binary floating
		 * point: accept a quotient within a relative 1e-9 of an
		 * integer.  Overflow (1e308 / 0.5) is a failure. */
		if (isfinite(q) && dabs(q - dfloor(q + 0.5)) <=
				   1e-9 * (dabs(q) > 1.0 ? dabs(q) : 1.0))
			return 0;
	}
	return fail(c, AMP_ESCHEMA, "must be a multiple of %s",
		    num_text(m, text, sizeof(text)));
}

static int check_number(struct ctx *c, const char *key, json_t *limit,
			json_t *v)
{
	char text[64];
	int cmp;

	if (!json_is_number(limit))
		return 0;
	cmp = num_cmp(v, limit);
	num_text(limit, text, sizeof(text));
	if (!strcmp(key, "minimum") && cmp < 0)
		return fail(c, AMP_ESCHEMA, "must be at least %s", text);
	if (!strcmp(key, "maximum") && cmp > 0)
		return fail(c, AMP_ESCHEMA, "must be at most %s", text);
	if (!strcmp(key, "exclusiveMinimum") && cmp <= 0)
		return fail(c, AMP_ESCHEMA, "must be greater than %s", text);
	if (!strcmp(key, "exclusiveMaximum") && cmp >= 0)
		return fail(c, AMP_ESCHEMA, "must be less than %s", text);
	return 0;
}

/* A count limit from the schema; -1 when the keyword is malformed. */
static long long limit_of(json_t *n)
{
	if (json_is_integer(n))
		return json_integer_value(n);
	if (is_integral(n) && json_real_value(n) < 9e18)
		return (long long)json_real_value(n);
	return -1;
}

/* The id of `source` compiled (set.c compiled the patterns of every
 * document it indexed, or defers them to here for amp's own); -1 with an
 * AMP_EIO error recorded when it does not compile. */
static int compiled(struct ctx *c, const char *source, size_t n)
{
	const char *why = NULL;
	int id = schema_pattern_get(c->set->patterns, source, n, &why);

	if (id < 0)
		fail(c, AMP_EIO, "invalid pattern %s: %s", source, why);
	return id;
}

/* 1 when some part of s[0..len) matches pattern `id`, 0 when none does;
 * -1 when PCRE2 gave up (its match limit: AMP_SCHEMA_MATCH_LIMIT), an
 * error then recorded at the current pointer: the value is invalid, as a
 * value that does not match would be. */
static int match(struct ctx *c, int id, const char *source, const char *s,
		 size_t len)
{
	const char *why = NULL;
	int rc = schema_pattern_match(c->set->patterns, id, s, len, &why);

	if (rc < 0)
		fail(c, AMP_ESCHEMA, "pattern %s gave up on this string: %s", source, why);
	return rc;
}

static int check_pattern(struct ctx *c, json_t *pattern, json_t *v)
{
	const char *source = json_string_value(pattern);
	int id, rc;

	if (!json_is_string(pattern))
		return 0;
	if ((id = compiled(c, source, json_string_length(pattern))) < 0)
		return 1;
	if ((rc = match(c, id, source, json_string_value(v), json_string_length(v))))
		return rc < 0;
	return fail(c, AMP_ESCHEMA, "string does not match pattern %s", source);
}

static int check_format(struct ctx *c, json_t *format, json_t *v)
{
	char why[AMP_MSG_MAX];

	if (!json_is_string(format) || !json_is_string(v) ||
	    !schema_format_check(json_string_value(format), v, why, sizeof(why)))
		return 0;
	return fail(c, AMP_ESCHEMA, "%s", why);
}

static int check_items(struct ctx *c, json_t *s, json_t *items,
		       const char *scope, json_t *v)
{
	json_t *extra, *item;
	size_t i, n = json_array_size(v), mark;
	int bad = 0;

	if (!json_is_array(items)) {
		if (json_is_true(items))
			return 0;
		json_array_foreach(v, i, item) {
			mark = push_index(c, i);
			bad |= validate(c, items, scope, item);
			pop(c, mark);
		}
		return bad;
	}
	for (i = 0; i < n && i < json_array_size(items); i++) {
		mark = push_index(c, i);
		bad |= validate(c, json_array_get(items, i), scope,
				json_array_get(v, i));
		pop(c, mark);
	}
	extra = json_object_get(s, "additionalItems");
	if (!extra || json_is_true(extra) || n <= json_array_size(items))
		return bad;
	if (json_is_false(extra))
		return fail(c, AMP_ESCHEMA, "must have at most %zu items "
			    "(additionalItems is false)",
			    json_array_size(items));
	for (i = json_array_size(items); i < n; i++) {
		mark = push_index(c, i);
		bad |= validate(c, extra, scope, json_array_get(v, i));
		pop(c, mark);
	}
	return bad;
}

struct hashed {
	uint64_t hash;
	size_t index;
};

static int cmp_hashed(const void *a, const void *b)
{
	const struct hashed *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/* Sorting by hash keeps a long array O(n log n) instead of all pairs. */
static int check_unique(struct ctx *c, json_t *v)
{
	struct hashed *h;
	size_t n = json_array_size(v), i, j, a = 0, b = 0;
	int dup = 0;

	if (n < 2)
		return 0;
	if (!(h = malloc(n * sizeof(*h))))
		return fail(c, AMP_EIO, "out of memory");
	for (i = 0; i < n; i++) {
		h[i].hash = json_hash(json_array_get(v, i));
		h[i].index = i;
	}
	qsort(h, n, sizeof(*h), cmp_hashed);
	for (i = 0; i < n && !dup; i++)
		for (j = i + 1; j < n && h[j].hash == h[i].hash && !dup; j++)
			if (json_same(json_array_get(v, h[i].index),
				      json_array_get(v, h[j].index))) {
				dup = 1;
				a = h[i].index;
				b = h[j].index;
			}
	free(h);
	if (!dup)
		return 0;
	return fail(c, AMP_ESCHEMA, "array items must be unique (items %zu and "
		    "%zu are equal)", a < b ? a : b, a < b ? b : a);
}

static int check_contains(struct ctx *c, json_t *sub, const char *scope,
			  json_t *v)
{
	json_t *item;
	size_t i;

	json_array_foreach(v, i, item)
		if (!quiet(c, sub, scope, item))
			return 0;
	return fail(c, AMP_ESCHEMA, "must contain at least one item matching "
		    "the \"contains\" schema");
}

/* 1 when `key` matches one of the patterns.  One that does not compile,
 * or that PCRE2 gave up on, is check_pattern_props' to report (it runs on
 * the same object); a name it gave up on counts as matched here. */
static int matches_any_pattern(struct ctx *c, json_t *patterns,
			       const char *key)
{
	const char *source, *why;
	json_t *sub;
	int id;

	json_object_foreach(patterns, source, sub) {
		if ((id = schema_pattern_get(c->set->patterns, source, strlen(source), &why)) >= 0 &&
		    schema_pattern_match(c->set->patterns, id, key, strlen(key), &why))
			return 1;
	}
	return 0;
}

static int check_properties(struct ctx *c, json_t *props, const char *scope,
			    json_t *v)
{
	const char *key;
	json_t *sub, *member;
	size_t mark;
	int bad = 0;

	if (!json_is_object(props))
		return 0;
	/* Walk the smaller of the two; the other side is a hash lookup. */
	if (json_object_size(props) <= json_object_size(v)) {
		json_object_foreach(props, key, sub) {
			if (!(member = json_object_get(v, key)))
				continue;
			mark = push_key(c, key);
			bad |= validate(c, sub, scope, member);
			pop(c, mark);
		}
	} else {
		json_object_foreach(v, key, member) {
			if (!(sub = json_object_get(props, key)))
				continue;
			mark = push_key(c, key);
			bad |= validate(c, sub, scope, member);
			pop(c, mark);
		}
	}
	return bad;
}

static int check_pattern_props(struct ctx *c, json_t *patterns,
			       const char *scope, json_t *v)
{
	const char *source, *key;
	json_t *sub, *member;
	size_t mark;
	int bad = 0, id, rc;

	if (!json_is_object(patterns))
		return 0;
	json_object_foreach(patterns, source, sub) {
		if ((id = compiled(c, source, strlen(source))) < 0) {
			bad = 1;
			continue;
		}
		json_object_foreach(v, key, member) {
			mark = push_key(c, key);
			if ((rc = match(c, id, source, key, strlen(key))) > 0)
				bad |= validate(c, sub, scope, member);
			bad |= rc < 0;
			pop(c, mark);
		}
	}
	return bad;
}

static int check_additional(struct ctx *c, json_t *s, json_t *extra,
			    const char *scope, json_t *v)
{
	json_t *props = json_object_get(s, "properties");
	json_t *patterns = json_object_get(s, "patternProperties");
	const char *key;
	json_t *member;
	size_t mark;
	int bad = 0;

	if (json_is_true(extra))
		return 0;
	json_object_foreach(v, key, member) {
		if (json_is_object(props) && json_object_get(props, key))
			continue;
		if (json_is_object(patterns) &&
		    matches_any_pattern(c, patterns, key))
			continue;
		if (json_is_false(extra)) {
			const char *near = schema_hint_property(props, v, key);

			if (near)
				bad |= fail(c, AMP_ESCHEMA, "unexpected property \"%s\" "
					    "(did you mean \"%s\"?)", key, near);
			else
				bad |= fail(c, AMP_ESCHEMA, "unexpected property \"%s\"",
					    key);
			continue;
		}
		mark = push_key(c, key);
		bad |= validate(c, extra, scope, member);
		pop(c, mark);
	}
	return bad;
}

/* if/then/else; a "then" checked knows its condition (check_required). */
static int check_if(struct ctx *c, json_t *s, json_t *cond, const char *scope, json_t *v)
{
	int met = !quiet(c, cond, scope, v), bad;
	json_t *sub = json_object_get(s, met ? "then" : "else");
	json_t *saved = c->cond, *saved_of = c->cond_of;

	if (!sub)
		return 0;
	if (met) {
		c->cond = cond;
		c->cond_of = v;
	}
	bad = validate(c, sub, scope, v);
	c->cond = saved;
	c->cond_of = saved_of;
	return bad;
}

static int check_required(struct ctx *c, json_t *required, json_t *v)
{
	json_t *name;
	size_t i;
	int bad = 0;

	char because[256] = "";
	size_t mark;

	/* Required by a condition (an if/then on this very object): the
	 * error is the member's, and says the condition. */
	if (c->cond && c->cond_of == v)
		schema_hint_condition(c->cond, because, sizeof(because));
	json_array_foreach(required, i, name) {
		if (!json_is_string(name) ||
		    json_object_get(v, json_string_value(name)))
			continue;
		if (!because[0]) {
			bad |= fail(c, AMP_ESCHEMA,
				    "missing required property \"%s\"",
				    json_string_value(name));
			continue;
		}
		mark = push_key(c, json_string_value(name));
		bad |= fail(c, AMP_ESCHEMA, "required because %s", because);
		pop(c, mark);
	}
	return bad;
}

static int check_dependencies(struct ctx *c, json_t *deps, const char *scope,
			      json_t *v)
{
	const char *key;
	json_t *dep, *name;
	size_t i;
	int bad = 0;

	if (!json_is_object(deps))
		return 0;
	json_object_foreach(deps, key, dep) {
		if (!json_object_get(v, key))
			continue;
		if (json_is_array(dep)) {
			json_array_foreach(dep, i, name)
				if (json_is_string(name) &&
				    !json_object_get(v, json_string_value(name)))
					bad |= fail(c, AMP_ESCHEMA,
						    "property \"%s\" requires "
						    "property \"%s\"", key,
						    json_string_value(name));
		} else {
			bad |= validate(c, dep, scope, v);
		}
	}
	return bad;
}

static int name_error(struct ctx *c, const char *key, size_t mark)
{
	char reason[AMP_MSG_MAX];

	snprintf(reason, sizeof(reason), "%s", c->errs->count > mark ?
		 c->errs->items[mark].message : "invalid");
	amp_errlist_truncate(c->errs, mark);
	return fail(c, AMP_ESCHEMA, "invalid property name \"%s\": %s", key,
		    reason);
}

static int check_property_names(struct ctx *c, json_t *sub,
				const char *scope, json_t *v)
{
	const char *key;
	json_t *member, *name;
	size_t mark;
	int bad = 0, failed;

	if (json_is_true(sub))
		return 0;
	json_object_foreach(v, key, member) {
		if (!(name = json_string(key)))
			return fail(c, AMP_EIO, "out of memory");
		mark = c->errs->count;
		failed = validate(c, sub, scope, name);
		json_decref(name);
		if (failed)
			bad |= name_error(c, key, mark);
	}
	return bad;
}

/* True when every error from `from` on is about a value below the current
 * one: the branch agreed with the value here and failed deeper down, which
 * makes its errors the useful ones to show for a failed anyOf/oneOf. */
static int errors_are_deeper(struct ctx *c, size_t from)
{
	size_t i, here = c->ptr.len;

	if (from == c->errs->count)
		return 0;
	for (i = from; i < c->errs->count; i++)
		if (strlen(c->errs->items[i].path) <= here)
			return 0;
	return 1;
}

/* anyOf (one = 0) and oneOf (one = 1).  A passing keyword leaves no
 * errors; a failing one leaves one summary and, when some branch failed
 * only below this value, that branch's errors. */
static int check_some_of(struct ctx *c, json_t *branches, int one,
			 const char *scope, json_t *v)
{
	amp_errlist best = { 0 };
	size_t mark = c->errs->count, i, n = json_array_size(branches);
	size_t matched = 0, first = 0, second = 0, before;
	int have_best = 0;

	if (!json_is_array(branches) || !n)
		return 0;
	for (i = 0; i < n; i++) {
		before = c->errs->count;
		if (c->silent) {
			/* No reasons to choose from: count the matches. */
			if (!validate(c, json_array_get(branches, i), scope, v) &&
			    (++matched > 1 || !one))
				break;
			continue;
		}
		if (!validate(c, json_array_get(branches, i), scope, v)) {
			if (matched++ == 0)
				first = i;
			else
				second = i;
			if (!one || matched > 1)
				break;
			continue;
		}
		if (!matched && errors_are_deeper(c, before) &&
		    (!have_best || c->errs->count - before < best.count)) {
			amp_errlist_truncate(&best, 0);
			best.count = 0;
			for (size_t k = before; k < c->errs->count; k++)
				amp_errlist_add(&best, c->errs->items[k].status,
						c->errs->items[k].path, "%s",
						c->errs->items[k].message);
			have_best = 1;
		}
		amp_errlist_truncate(c->errs, before);
	}
	amp_errlist_truncate(c->errs, mark);
	if (matched == 1 || (!one && matched)) {
		amp_errlist_free(&best);
		return 0;
	}
	if (c->silent)
		return 1;
	if (matched > 1)
		fail(c, AMP_ESCHEMA, "must match exactly one schema in "
		     "\"oneOf\", but matches schemas %zu and %zu", first,
		     second);
	else if (one)
		fail(c, AMP_ESCHEMA, "must match exactly one schema in "
		     "\"oneOf\", but matches none");
	else
		fail(c, AMP_ESCHEMA, "must match at least one schema in "
		     "\"anyOf\"");
	if (!matched && have_best)
		amp_errlist_extend(c->errs, &best);
	amp_errlist_free(&best);
	return 1;
}

static int check_ref(struct ctx *c, const char *ref, const char *scope,
		     json_t *v)
{
	const char *abs;
	json_t *entry;
	int bad;

	if (c->ref_depth >= AMP_SCHEMA_REF_DEPTH_MAX)
		return fail(c, AMP_EIO, "$ref nesting deeper than %d at \"%s\" "
			    "(recursive schema?)", AMP_SCHEMA_REF_DEPTH_MAX,
			    ref);
	if (!(abs = schema_resolve_cached(c->set, c->set->resolved, scope, ref, 0)))
		return fail(c, AMP_EIO, "out of memory");
	if (!(entry = schema_lookup_entry(c->set, abs)))
		return fail(c, AMP_EIO, "cannot resolve $ref \"%s\"", abs);
	c->ref_depth++;
	bad = validate(c, json_array_get(entry, 0),
		       json_string_value(json_array_get(entry, 1)), v);
	c->ref_depth--;
	return bad;
}

/* The keywords that apply to every type of value, and the type-specific
 * ones, dispatched by walking the schema's members once. */
static int check_keyword(struct ctx *c, json_t *s, const char *key,
			 json_t *val, const char *scope, json_t *v)
{
	json_t *sub;
	size_t i;
	long long n;
	int bad = 0;

	switch (key[0]) {
	case 'a':
		if (!strcmp(key, "allOf")) {
			json_array_foreach(val, i, sub)
				bad |= validate(c, sub, scope, v);
			return bad;
		}
		if (!strcmp(key, "anyOf"))
			return check_some_of(c, val, 0, scope, v);
		if (!strcmp(key, "additionalProperties") && json_is_object(v))
			return check_additional(c, s, val, scope, v);
		return 0;
	case 'c':
		if (!strcmp(key, "const"))
			return check_const(c, val, v);
		if (!strcmp(key, "contains") && json_is_array(v))
			return check_contains(c, val, scope, v);
		return 0;
	case 'd':
		if (!strcmp(key, "dependencies") && json_is_object(v))
			return check_dependencies(c, val, scope, v);
		return 0;
	case 'e':
		if (!strcmp(key, "enum"))
			return check_enum(c, val, v);
		if (!strcmp(key, "exclusiveMinimum") ||
		    !strcmp(key, "exclusiveMaximum"))
			return json_is_number(v) ?
			       check_number(c, key, val, v) : 0;
		return 0;
	case 'f':
		if (!strcmp(key, "format"))
			return check_format(c, val, v);
		return 0;
	case 'i':
		if (!strcmp(key, "items") && json_is_array(v))
			return check_items(c, s, val, scope, v);
		if (!strcmp(key, "if"))
			return check_if(c, s, val, scope, v);
		return 0;
	case 'm':
		if (!strcmp(key, "minimum") || !strcmp(key, "maximum"))
			return json_is_number(v) ?
			       check_number(c, key, val, v) : 0;
		if (!strcmp(key, "multipleOf"))
			return json_is_number(v) ? check_multiple(c, val, v) : 0;
		if ((n = limit_of(val)) < 0)
			return 0;
		if (json_is_string(v)) {
			size_t len = utf8_length(json_string_value(v),
						 json_string_length(v));

			if (!strcmp(key, "minLength") && len < (size_t)n)
				return fail(c, AMP_ESCHEMA, "must be at least "
					    "%lld characters long", n);
			if (!strcmp(key, "maxLength") && len > (size_t)n)
				return fail(c, AMP_ESCHEMA, "must be at most "
					    "%lld characters long", n);
		} else if (json_is_array(v)) {
			if (!strcmp(key, "minItems") &&
			    json_array_size(v) < (size_t)n)
				return fail(c, AMP_ESCHEMA, "must have at least "
					    "%lld items", n);
			if (!strcmp(key, "maxItems") &&
			    json_array_size(v) > (size_t)n)
				return fail(c, AMP_ESCHEMA, "must have at most "
					    "%lld items", n);
		} else if (json_is_object(v)) {
			if (!strcmp(key, "minProperties") &&
			    json_object_size(v) < (size_t)n)
				return fail(c, AMP_ESCHEMA, "must have at least "
					    "%lld properties", n);
			if (!strcmp(key, "maxProperties") &&
			    json_object_size(v) > (size_t)n)
				return fail(c, AMP_ESCHEMA, "must have at most "
					    "%lld properties", n);
		}
		return 0;
	case 'n':
		if (!strcmp(key, "not") && !quiet(c, val, scope, v))
			return fail_not(c, val, v);
		return 0;
	case 'o':
		if (!strcmp(key, "oneOf"))
			return check_some_of(c, val, 1, scope, v);
		return 0;
	case 'p':
		if (!json_is_object(v)) {
			if (!strcmp(key, "pattern") && json_is_string(v))
				return check_pattern(c, val, v);
			return 0;
		}
		if (!strcmp(key, "properties"))
			return check_properties(c, val, scope, v);
		if (!strcmp(key, "patternProperties"))
			return check_pattern_props(c, val, scope, v);
		if (!strcmp(key, "propertyNames"))
			return check_property_names(c, val, scope, v);
		return 0;
	case 'r':
		if (!strcmp(key, "required") && json_is_object(v))
			return check_required(c, val, v);
		return 0;
	case 't':
		if (!strcmp(key, "type"))
			return check_type(c, val, v);
		return 0;
	case 'u':
		if (!strcmp(key, "uniqueItems") && json_is_true(val) &&
		    json_is_array(v))
			return check_unique(c, v);
		return 0;
	}
	return 0;
}

/* Returns 0 when v is valid against s, 1 when not (errors recorded). */
static int validate(struct ctx *c, json_t *s, const char *scope, json_t *v)
{
	const char *key;
	json_t *ref, *id, *val;
	int bad = 0;

	if (json_is_true(s))
		return 0;
	if (json_is_false(s))
		return fail(c, AMP_ESCHEMA, "no value is allowed here "
			    "(the schema is false)");
	if (!json_is_object(s))
		return 0;
	if (c->depth >= AMP_SCHEMA_DEPTH_MAX)
		return fail(c, AMP_EIO, "schema and value nested deeper than "
			    "%d levels", AMP_SCHEMA_DEPTH_MAX);
	c->depth++;
	/* Draft-07 §8.3: all other properties in a "$ref" object are
	 * ignored, its "$id" included. */
	ref = json_object_get(s, "$ref");
	if (json_is_string(ref)) {
		bad = check_ref(c, json_string_value(ref), scope, v);
		goto out;
	}
	id = json_object_get(s, "$id");
	if (json_is_string(id) && json_string_value(id)[0] != '#') {
		if (!(scope = schema_resolve_cached(c->set, c->set->scopes, scope,
					     json_string_value(id), 1))) {
			bad = fail(c, AMP_EIO, "out of memory");
			goto out;
		}
	}
	json_object_foreach(s, key, val)
		bad |= check_keyword(c, s, key, val, scope, v);
out:
	c->depth--;
	return bad;
}

int amp_schema_validate(amp_schema_set *set, json_t *schema,
			const char *base_uri, json_t *instance,
			amp_errlist *errors)
{
	struct ctx c;
	char ptr[32];
	json_t *root;
	amp_error err;
	size_t i, mark = errors->count;
	int bad, status;

	memset(&c, 0, sizeof(c));
	c.set = set;
	c.errs = errors;
	schema_buf_add(&c.ptr, "", 0);
	if (!base_uri) {
		snprintf(ptr, sizeof(ptr), "%p", (void *)schema);
		if (!(root = json_object_get(set->roots, ptr))) {
			/* Not added yet: add it, so that its own "#..."
			 * references resolve. */
			if (amp_schema_set_add(set, schema, NULL, &err) < 0)
				return amp_errlist_add(errors, AMP_EIO, "",
						       "%s", err.message);
			root = json_object_get(set->roots, ptr);
		}
		base_uri = json_string_value(root);
	}
	if (c.ptr.oom)
		return amp_errlist_add(errors, AMP_EIO, "", "out of memory");
	/* Most instances are valid: a first pass only says whether, without
	 * formatting a reason for every branch of a oneOf that does not
	 * match; an invalid instance is walked again for its reasons. */
	c.silent = 1;
	bad = validate(&c, schema, base_uri, instance);
	if (bad && !c.fatal) {
		c.silent = 0;
		bad = validate(&c, schema, base_uri, instance);
	}
	free(c.ptr.p);
	status = bad ? AMP_ESCHEMA : AMP_OK;
	if (c.fatal) {
		status = AMP_EIO;
		/* A rolled-back branch may have held the only trace. */
		for (i = mark; i < errors->count; i++)
			if (errors->items[i].status == AMP_EIO)
				break;
		if (i == errors->count)
			amp_errlist_add(errors, AMP_EIO, c.first_fatal.path,
					"%s", c.first_fatal.message);
	}
	return status;
}
