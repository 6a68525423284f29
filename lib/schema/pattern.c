/*
 * pattern.c - the regular expressions of "pattern" and "patternProperties",
 * run by PCRE2 (Debian's libpcre2-8).
 *
 * draft-07 6.3.3: "The value of this keyword MUST be a string.  This string
 * SHOULD be a valid regular expression, according to the ECMA 262 regular
 * expression dialect."  PCRE2 follows ECMA-262 closely (look-around, lazy
 * quantifiers, back-references, named groups); the options below and a
 * short rewrite (translate()) take care of where the two differ, and
 * share/doc/validator.md lists what still does.
 *
 * Every pattern is compiled once per set, without JIT (slower than the
 * interpreter for patterns this small and strings this short), and matched
 * under a match limit, so that a schema's catastrophic pattern costs a
 * bounded time per string instead of hanging the validator.
 */
#include "schema_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

struct pattern {
	pcre2_code *code;	/* NULL when it did not compile */
	char *error;		/* why not (NULL: out of memory) */
};

struct schema_patterns {
	json_t *ids;			/* source -> index in v */
	struct pattern *v;
	size_t n, alloc;
	pcre2_compile_context *cctx;
	pcre2_match_context *mctx;
	pcre2_match_data *md;		/* one pair: only "does it match" is asked */
};

/*
 * ECMA-262's \s: WhiteSpace (TAB VT FF SP U+00A0 U+FEFF and category Zs)
 * and LineTerminator (LF CR U+2028 U+2029).  PCRE2's \s without PCRE2_UCP
 * is the ASCII part only; with PCRE2_UCP, \d and \w would take Unicode
 * digits and letters, which ECMA-262's \d and \w do not.  Hence \s is
 * spelt out, and UCP stays off.
 */
#define ECMA_SPACE "\\s\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029" \
	"\\u202f\\u205f\\u3000\\ufeff"
/* Its complement, for \S inside a class (a class cannot hold "[^...]").
 * (\uHHHH and \u{H...}: with PCRE2_ALT_BSUX, PCRE2's own \x{...} is a
 * literal x.) */
#define ECMA_NONSPACE "\\u0000-\\u0008\\u000e-\\u001f\\u0021-\\u009f\\u00a1-\\u167f" \
	"\\u1681-\\u1fff\\u200b-\\u2027\\u202a-\\u202e" \
	"\\u2030-\\u205e\\u2060-\\u2fff\\u3001-\\ufefe\\uff00-\\u{10ffff}"
/* ECMA-262's "." matches anything but a LineTerminator. */
#define ECMA_DOT "[^\\n\\r\\u2028\\u2029]"

/* The value of \uHHHH at s (s[0] == '\\'), or -1 when it is not one. */
static long u_escape(const char *s, size_t n)
{
	long v = 0;
	size_t i;

	if (n < 6 || s[0] != '\\' || s[1] != 'u')
		return -1;
	for (i = 2; i < 6; i++) {
		int c = (unsigned char)s[i];

		if (c >= '0' && c <= '9')
			v = v * 16 + c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			v = v * 16 + (c | 0x20) - 'a' + 10;
		else
			return -1;
	}
	return v;
}

/*
 * Rewrites what ECMA-262 and PCRE2 read differently, and nothing else:
 * "." (not a line terminator), \s and \S (ECMA-262's white space), \v (a
 * vertical tab, where PCRE2 means any vertical space), a "[" inside a class
 * (literal, where PCRE2 would read "[:alpha:]" as a POSIX class), and a
 * surrogate pair spelt \uD83D\uDE00 (one code point; PCRE2 refuses
 * surrogates in UTF mode).  The rest is PCRE2's to read, with the options
 * of compile_one().
 */
static void translate(const char *src, size_t len, struct buf *out)
{
	int in_class = 0;
	size_t i;
	long hi, lo;
	char hex[32];

	for (i = 0; i < len; i++) {
		char c = src[i];

		if (c == '\\' && i + 1 < len) {
			char e = src[i + 1];

			if (e == 's' || e == 'S') {
				if (in_class)
					schema_buf_puts(out, e == 's' ? ECMA_SPACE : ECMA_NONSPACE);
				else
					schema_buf_puts(out, e == 's' ? "[" ECMA_SPACE "]" :
							"[^" ECMA_SPACE "]");
			} else if (e == 'v') {
				schema_buf_puts(out, "\\x0b");
			} else if ((hi = u_escape(src + i, len - i)) >= 0xD800 && hi <= 0xDBFF &&
				   (lo = u_escape(src + i + 6, len - i - 6)) >= 0xDC00 && lo <= 0xDFFF) {
				snprintf(hex, sizeof(hex), "\\u{%lx}",
					 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
				schema_buf_puts(out, hex);
				i += 10;
			} else {
				schema_buf_add(out, src + i, 2);
			}
			i++;
			continue;
		}
		if (in_class) {
			if (c == ']')
				in_class = 0;
			if (c == '[')
				schema_buf_puts(out, "\\[");
			else
				schema_buf_putc(out, c);
			continue;
		}
		if (c == '[') {
			/* "[]" and "[^]": PCRE2_ALLOW_EMPTY_CLASS reads them
			 * as ECMA-262 does, so a "]" there ends the class */
			in_class = 1;
			schema_buf_putc(out, c);
			if (i + 1 < len && src[i + 1] == '^')
				schema_buf_putc(out, src[++i]);
		} else if (c == '.') {
			schema_buf_puts(out, ECMA_DOT);
		} else {
			schema_buf_putc(out, c);
		}
	}
}

struct schema_patterns *schema_patterns_new(void)
{
	struct schema_patterns *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->ids = json_object();
	p->cctx = pcre2_compile_context_create(NULL);
	p->mctx = pcre2_match_context_create(NULL);
	p->md = pcre2_match_data_create(1, NULL);
	if (!p->ids || !p->cctx || !p->mctx || !p->md ||
	    /* \u{1F600}, as ECMA-262 reads it with the u flag */
	    pcre2_set_compile_extra_options(p->cctx, PCRE2_EXTRA_ALT_BSUX) ||
	    pcre2_set_match_limit(p->mctx, AMP_SCHEMA_MATCH_LIMIT) ||
	    pcre2_set_heap_limit(p->mctx, AMP_SCHEMA_MATCH_HEAP_KIB)) {
		schema_patterns_free(p);
		return NULL;
	}
	return p;
}

void schema_patterns_free(struct schema_patterns *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++) {
		pcre2_code_free(p->v[i].code);
		free(p->v[i].error);
	}
	free(p->v);
	json_decref(p->ids);
	pcre2_compile_context_free(p->cctx);
	pcre2_match_context_free(p->mctx);
	pcre2_match_data_free(p->md);
	free(p);
}

/*
 * Options: PCRE2_UTF (code points, as ECMA-262 with the u flag, which JSON
 * Schema's strings of code points need; PCRE2 checks the UTF-8),
 * PCRE2_DOLLAR_ENDONLY ("$" does not match before a final newline),
 * PCRE2_ALT_BSUX (\uHHHH and \xHH as ECMA-262 has them, else a literal u or
 * x), PCRE2_ALLOW_EMPTY_CLASS ("[]" matches nothing, "[^]" anything) and
 * PCRE2_MATCH_UNSET_BACKREF (a back-reference to a group that did not take
 * part matches the empty string).  No PCRE2_UCP: \d \w \b stay ASCII.
 */
static void compile_one(struct schema_patterns *p, struct pattern *pat,
			const char *source, size_t len)
{
	struct buf text = { 0 };
	PCRE2_UCHAR msg[256];
	PCRE2_SIZE offset;
	int code;

	translate(source, len, &text);
	if (text.oom) {
		free(text.p);
		return; /* error NULL: out of memory */
	}
	pat->code = pcre2_compile((PCRE2_SPTR)(text.p ? text.p : ""), text.len,
				  PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_BSUX |
				  PCRE2_ALLOW_EMPTY_CLASS | PCRE2_MATCH_UNSET_BACKREF,
				  &code, &offset, p->cctx);
	free(text.p);
	if (pat->code)
		return;
	if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
		snprintf((char *)msg, sizeof(msg), "PCRE2 error %d", code);
	pat->error = strdup((char *)msg);
}

int schema_pattern_get(struct schema_patterns *p, const char *source,
		       size_t len, const char **why)
{
	json_t *id = json_object_get(p->ids, source);
	struct pattern *pat, *bigger;

	if (!id) {
		if (p->n == p->alloc) {
			size_t alloc = p->alloc ? p->alloc * 2 : 16;

			if (!(bigger = realloc(p->v, alloc * sizeof(*bigger)))) {
				*why = "out of memory";
				return -1;
			}
			p->v = bigger;
			p->alloc = alloc;
		}
		pat = &p->v[p->n];
		memset(pat, 0, sizeof(*pat));
		if (len != strlen(source))
			pat->error = strdup("a NUL character in a pattern is not supported (write \\u0000)");
		else
			compile_one(p, pat, source, len);
		if (json_object_set_new(p->ids, source, json_integer((json_int_t)p->n)) < 0) {
			pcre2_code_free(pat->code);
			free(pat->error);
			*why = "out of memory";
			return -1;
		}
		id = json_object_get(p->ids, source);
		p->n++;
	}
	pat = &p->v[json_integer_value(id)];
	if (!pat->code) {
		*why = pat->error ? pat->error : "out of memory";
		return -1;
	}
	return (int)json_integer_value(id);
}

int schema_pattern_match(struct schema_patterns *p, int id, const char *s,
			 size_t len, const char **why)
{
	int rc = pcre2_match(p->v[id].code, (PCRE2_SPTR)s, len, 0, 0, p->md,
			     p->mctx);

	if (rc >= 0)
		return 1;
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	switch (rc) {
	case PCRE2_ERROR_MATCHLIMIT:
	case PCRE2_ERROR_DEPTHLIMIT:
	case PCRE2_ERROR_HEAPLIMIT:
		*why = "more than " AMP_SCHEMA_MATCH_LIMIT_TEXT
		       " steps of backtracking (PCRE2's match limit)";
		break;
	case PCRE2_ERROR_NOMEMORY:
		*why = "out of memory";
		break;
	default:
		/* the UTF-8 errors: jansson's strings are checked, but not
		 * every json_t is jansson's parse */
		*why = rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21 ?
		       "the string is not valid UTF-8" : "PCRE2 cannot match it";
	}
	return -1;
}
