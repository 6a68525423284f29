/* test_reals.c - amp_json_dumps writes each real in the shortest form that
 * reads back as the same double (issue 30, defect 15: --confidence 0.95 was
 * stored as 0.94999999999999996). */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "base/util.h"

/* The real of the one-element array text "[x]", and its text. */
static int real_of(const char *text, double *d, char *tok, size_t toksz)
{
	size_t n = strlen(text);

	if (n < 3 || text[0] != '[' || text[n - 1] != ']' || n - 2 >= toksz)
		return -1;
	memcpy(tok, text + 1, n - 2);
	tok[n - 2] = '\0';
	*d = strtod(tok, NULL);
	return 0;
}

/* 1 when the digits of tok (its significand) cannot be fewer: no text of
 * fewer significant digits reads back as d. */
static int no_shorter(const char *tok, double d)
{
	char buf[400]; /* what gcc reckons %.*g may take */
	int digits = 0, p;
	const char *c;

	size_t len = strcspn(tok, "eE");

	/* the ".0" that keeps an integral value a real is no digit of it */
	if (len > 2 && !strncmp(tok + len - 2, ".0", 2))
		len -= 2;
	for (c = tok; c < tok + len; c++)
		if (*c >= '0' && *c <= '9')
			digits++;
	/* nor are the trailing zeros of an integral value written out
	 * (100.0 rather than 1e+02): they place the point */
	if (!memchr(tok, '.', len) && !memchr(tok, 'e', len))
		for (c = tok + len; c > tok + 1 && c[-1] == '0'; c--)
			digits--;
	/* leading zeros of 0.0x are no significant digits */
	for (c = tok; *c == '-' || *c == '0' || *c == '.'; c++)
		if (*c == '0')
			digits--;
	for (p = 1; p < digits; p++) {
		snprintf(buf, sizeof(buf), "%.*g", p, d);
		if (strtod(buf, NULL) == d)
			return 0;
	}
	return 1;
}

int main(void)
{
	static const struct { double d; const char *want; } known[] = {
		{ 0.95, "0.95" }, { 0.1, "0.1" }, { 1.0 / 3, "0.3333333333333333" },
		{ 2.0, "2.0" }, { 100.0, "100.0" }, { -2500.0, "-2500.0" }, { 1e16, "10000000000000000.0" },
		{ 1e17, "1e+17" }, { -0.5, "-0.5" }, { 1e-7, "1e-07" }, { 1e300, "1e+300" },
		{ 123456.789, "123456.789" }, { 0.94999999999999996, "0.95" },
		{ 5e-324, "5e-324" }, { 1.7976931348623157e308, "1.7976931348623157e+308" },
	};
	json_t *doc;
	char *text, tok[64], name[128];
	size_t i;
	unsigned long bad = 0, n = 0;
	uint64_t x = 88172645463325252ull;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		doc = json_pack("[f]", known[i].d);
		text = amp_json_dumps(doc, JSON_COMPACT);
		snprintf(name, sizeof(name), "%.17g is written %s", known[i].d, known[i].want);
		ok(text && real_of(text, &(double){ 0 }, tok, sizeof(tok)) == 0 &&
		   !strcmp(tok, known[i].want), name);
		free(text);
		json_decref(doc);
	}
	/* a string that looks like a real, an integer and a key stay as they are */
	doc = json_pack("{s:s,s:I,s:f}", "0.94999999999999996", "0.94999999999999996",
			"n", (json_int_t)12345678901234, "r", 0.95);
	text = amp_json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	ok(text && !strcmp(text, "{\"0.94999999999999996\":\"0.94999999999999996\",\"n\":12345678901234,\"r\":0.95}"),
	   "strings, keys and integers are left as jansson writes them");
	free(text);
	json_decref(doc);
	/* random doubles of every exponent: the text reads back the same, is
	 * still a real, and no text of fewer digits would */
	for (i = 0; i < 20000; i++) {
		double d, back;
		union { uint64_t u; double d; } r;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		r.u = x;
		if (!isfinite(r.d))
			continue;
		d = i % 2 ? r.d : (double)(x % 100000) / 1000;
		doc = json_pack("[f]", d);
		text = amp_json_dumps(doc, JSON_COMPACT);
		n++;
		if (!text || real_of(text, &back, tok, sizeof(tok)) < 0 || back != d ||
		    !strpbrk(tok, ".eE") || !no_shorter(tok, d)) {
			if (!bad)
				printf("# %.17g written %s\n", d, text ? text : "(null)");
			bad++;
		}
		free(text);
		json_decref(doc);
	}
	snprintf(name, sizeof(name), "shortest reals: %lu random doubles read back the same from the fewest digits", n);
	ok(bad == 0 && n > 10000, name);
	return tap_done();
}
