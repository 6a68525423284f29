/*
 * jsonparse.c - amp_json_parse and its fast path (jsonparse.h).
 *
 * A recursive descent over the bytes, RFC 8259's grammar, building jansson
 * values as it goes; every failure is "let jansson decide" (return NULL up
 * the stack), never an error of its own.
 */
#include "jsonparse.h"

#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

/* jansson accepts 2048 levels; amp's records stop at 32 (bounds.h). */
#define FAST_MAX_DEPTH 64
/* Longer numbers are jansson's (a real's text is copied to be read). */
#define FAST_NUMBER_MAX 63

struct parser {
	const unsigned char *p, *end;
};

static void skip_space(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' || *ps->p == '\r'))
		ps->p++;
}

static int hex4(const unsigned char *s, unsigned *out)
{
	unsigned v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		unsigned char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t put_utf8(unsigned char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | cp >> 6);
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | cp >> 12);
		o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (unsigned char)(0xf0 | cp >> 18);
	o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Decodes the escapes of raw[0..len) (a string's body, checked by
 * read_string) into out, which has len bytes; returns the decoded length,
 * or (size_t)-1 for what jansson must decide: an unknown escape, \u0000,
 * a surrogate that is not a pair. */
static size_t unescape(const unsigned char *raw, size_t len, unsigned char *out)
{
	const unsigned char *s = raw, *end = raw + len;
	unsigned char *o = out;
	unsigned cp, low;

	while (s < end) {
		if (*s != '\\') {
			*o++ = *s++;
			continue;
		}
		switch (s[1]) {
		case '"': case '\\': case '/':
			*o++ = s[1];
			break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u':
			if (end - s < 6 || hex4(s + 2, &cp) < 0 || cp == 0 ||
			    (cp >= 0xdc00 && cp <= 0xdfff))
				return (size_t)-1;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (end - s < 12 || s[6] != '\\' || s[7] != 'u' ||
				    hex4(s + 8, &low) < 0 || low < 0xdc00 || low > 0xdfff)
					return (size_t)-1;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
				s += 6;
			}
			/* at most 4 bytes out for the 6 or 12 read */
			o += put_utf8(o, cp);
			s += 6;
			continue;
		default:
			return (size_t)-1;
		}
		s += 2;
	}
	return (size_t)(o - out);
}

/*
 * Reads the string at ps->p (its opening quote): its bytes go to *text and
 * *len, pointing into the input when it has no escape, else into *owned
 * (malloc'd; the caller frees it).  -1 for what jansson must decide: a
 * control character, bytes that are not UTF-8, an escape unescape refuses,
 * no closing quote.
 */
static int read_string(struct parser *ps, const char **text, size_t *len, char **owned)
{
	const unsigned char *s = ps->p + 1, *start = s;
	int escaped = 0;
	unsigned cp;
	size_t n;

	*owned = NULL;
	while (s < ps->end && *s != '"') {
		if (*s >= 0x20 && *s < 0x80 && *s != '\\') {
			s++;
		} else if (*s == '\\') {
			/* the escaped byte is read again by unescape */
			if (ps->end - s < 2)
				return -1;
			escaped = 1;
			s += 2;
		} else if (*s >= 0x80 &&
			   (n = amp_utf8_seqn((const char *)s, (size_t)(ps->end - s), &cp))) {
			s += n;
		} else {
			return -1; /* a control character or not UTF-8 */
		}
	}
	if (s >= ps->end)
		return -1;
	ps->p = s + 1;
	if (!escaped) {
		*text = (const char *)start;
		*len = (size_t)(s - start);
		return 0;
	}
	if (!(*owned = malloc((size_t)(s - start) + 1)) ||
	    (*len = unescape(start, (size_t)(s - start), (unsigned char *)*owned)) == (size_t)-1) {
		free(*owned);
		*owned = NULL;
		return -1;
	}
	*text = *owned;
	return 0;
}

static int is_digit(const unsigned char *p, const unsigned char *end)
{
	return p < end && *p >= '0' && *p <= '9';
}

static json_t *read_number(struct parser *ps)
{
	const unsigned char *s = ps->p, *end = ps->end, *start = s, *digits;
	char text[FAST_NUMBER_MAX + 1], *stop;
	int real = 0;
	size_t n;
	double d;

	if (s < end && *s == '-')
		s++;
	digits = s;
	if (!is_digit(s, end))
		return NULL;
	if (*s == '0')
		s++;
	else
		while (is_digit(s, end))
			s++;
	if (s < end && *s == '.') {
		real = 1;
		if (!is_digit(++s, end))
			return NULL;
		while (is_digit(s, end))
			s++;
	}
	if (s < end && (*s == 'e' || *s == 'E')) {
		real = 1;
		s++;
		if (s < end && (*s == '+' || *s == '-'))
			s++;
		if (!is_digit(s, end))
			return NULL;
		while (is_digit(s, end))
			s++;
	}
	n = (size_t)(s - start);
	ps->p = s;
	if (!real) {
		/* 18 digits cannot overflow; jansson reads longer ones */
		int64_t v = 0;
		const unsigned char *d;

		if (s - digits > 18)
			return NULL;
		for (d = digits; d < s; d++)
			v = v * 10 + (*d - '0');
		return json_integer((json_int_t)(*start == '-' ? -v : v));
	}
	if (n > FAST_NUMBER_MAX)
		return NULL;
	memcpy(text, start, n);
	text[n] = '\0';
	/* As jansson reads it: strtod; the whole text (another locale's
	 * decimal point is jansson's) and finite (an overflow is its error). */
	d = strtod(text, &stop);
	if (stop != text + n || !isfinite(d))
		return NULL;
	return json_real(d);
}

static json_t *read_value(struct parser *ps, int depth);

/* Past the opening bracket at ps->p: 1 when `close` follows at once (an
 * empty container, consumed), else 0. */
static int opens_empty(struct parser *ps, unsigned char close)
{
	ps->p++;
	skip_space(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return 1;
	}
	return 0;
}

/* After an item of a container that `close` ends: 1 at its end (consumed),
 * 0 after a comma (another item follows), -1 for anything else. */
static int after_item(struct parser *ps, unsigned char close)
{
	skip_space(ps);
	if (ps->p >= ps->end)
		return -1;
	if (*ps->p == close) {
		ps->p++;
		return 1;
	}
	if (*ps->p++ != ',')
		return -1;
	skip_space(ps);
	return 0;
}

static json_t *read_array(struct parser *ps, int depth)
{
	json_t *a = json_array(), *item;
	int end;

	if (!a)
		return NULL;
	if (opens_empty(ps, ']'))
		return a;
	do {
		if (!(item = read_value(ps, depth + 1)) || json_array_append_new(a, item) < 0)
			break;
		if ((end = after_item(ps, ']')) == 1)
			return a;
	} while (end == 0);
	json_decref(a);
	return NULL;
}

static json_t *read_object(struct parser *ps, int depth)
{
	json_t *o = json_object(), *value;
	const char *key;
	char *owned = NULL;
	size_t len, size = 0;
	int end;

	if (!o)
		return NULL;
	if (opens_empty(ps, '}'))
		return o;
	do {
		if (ps->p >= ps->end || *ps->p != '"' || read_string(ps, &key, &len, &owned) < 0)
			break;
		skip_space(ps);
		if (ps->p >= ps->end || *ps->p++ != ':')
			break;
		skip_space(ps);
		/* a member twice is jansson's (JSON_REJECT_DUPLICATES) */
		if (!(value = read_value(ps, depth + 1)) ||
		    json_object_setn_new_nocheck(o, key, len, value) < 0 ||
		    json_object_size(o) != ++size)
			break;
		free(owned);
		owned = NULL;
		if ((end = after_item(ps, '}')) == 1)
			return o;
	} while (end == 0);
	free(owned);
	json_decref(o);
	return NULL;
}

static int literal(struct parser *ps, const char *word, size_t n)
{
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
		return 0;
	ps->p += n;
	return 1;
}

static json_t *read_value(struct parser *ps, int depth)
{
	const char *text;
	char *owned;
	size_t len;
	json_t *v;

	if (ps->p >= ps->end || depth > FAST_MAX_DEPTH)
		return NULL;
	switch (*ps->p) {
	case '{':
		return read_object(ps, depth);
	case '[':
		return read_array(ps, depth);
	case '"':
		if (read_string(ps, &text, &len, &owned) < 0)
			return NULL;
		v = json_stringn_nocheck(text, len);
		free(owned);
		return v;
	case 't':
		return literal(ps, "true", 4) ? json_true() : NULL;
	case 'f':
		return literal(ps, "false", 5) ? json_false() : NULL;
	case 'n':
		return literal(ps, "null", 4) ? json_null() : NULL;
	default:
		return read_number(ps);
	}
}

int amp_json_parse_fast(const char *buf, size_t len, json_t **out)
{
	struct parser ps = { (const unsigned char *)buf, (const unsigned char *)buf + len };
	json_t *v;

	skip_space(&ps);
	if (!(v = read_value(&ps, 1)))
		return 0;
	skip_space(&ps);
	/* After the value, nothing but white space: jansson's "end of
	 * file expected" otherwise. */
	if (ps.p != ps.end) {
		json_decref(v);
		return 0;
	}
	*out = v;
	return 1;
}

/* Where a failed allocation jumps while this thread's jansson parses
 * (amp_json_loadb); NULL otherwise.  Per thread: the dashboard's server
 * answers on several. */
static _Thread_local jmp_buf *parsing;
static json_malloc_t alloc_inner = malloc;
static json_free_t release_inner = free;
static int installed;

static void *guarded_alloc(size_t size)
{
	void *p = alloc_inner(size);

	if (!p && parsing)
		longjmp(*parsing, 1);
	return p;
}

void amp_json_set_alloc(json_malloc_t alloc, json_free_t release)
{
	alloc_inner = alloc;
	release_inner = release;
	json_set_alloc_funcs(guarded_alloc, release);
	installed = 1;
}

json_t *amp_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *jerr,
		       int *out_of_memory)
{
	jmp_buf here;
	json_t *value;

	if (out_of_memory)
		*out_of_memory = 0;
	if (!installed)
		amp_json_set_alloc(alloc_inner, release_inner);
	if (setjmp(here)) {
		parsing = NULL;
		if (jerr) {
			memset(jerr, 0, sizeof(*jerr));
			snprintf(jerr->text, sizeof(jerr->text), "out of memory");
		}
		if (out_of_memory)
			*out_of_memory = 1;
		return NULL;
	}
	parsing = &here;
	value = json_loadb(buf, len, flags, jerr);
	parsing = NULL;
	return value;
}

int amp_json_parse(const char *buf, size_t len, json_t **out, amp_error *err)
{
	json_error_t jerr;
	json_t *value;
	int out_of_memory;

	if (memchr(buf, '\0', len))
		return amp_error_set(err, AMP_ESCHEMA, "",
				     "invalid JSON: NUL byte at offset %zu",
				     (size_t)((const char *)memchr(buf, '\0', len) - buf));
	if (amp_json_parse_fast(buf, len, out))
		return AMP_OK;
	value = amp_json_loadb(buf, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr,
			       &out_of_memory);
	if (out_of_memory)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (!value) {
		if (len == 0)
			return amp_error_set(err, AMP_ESCHEMA, "",
					     "invalid JSON: empty input");
		return amp_error_set(err, AMP_ESCHEMA, "",
				     "invalid JSON at line %d, column %d: %s",
				     jerr.line, jerr.column, jerr.text);
	}
	*out = value;
	return AMP_OK;
}
