/*
 * test_schema - what the JSON-Schema-Test-Suite does not check: the error
 * records (pointers, RFC 6901 escaping, messages), the recursion limits,
 * ECMA-262 patterns as PCRE2 reads them and their limits, lengths in code points and
 * "$ref" across documents of a set.  Prints TAP.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"
#include "schema/schema.h"
#include "tap.h"

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);

	if (!v) {
		fprintf(stderr, "bad test JSON %s: %s\n", text, jerr.text);
		exit(2);
	}
	return v;
}

/* Validates `instance` against an anonymous `schema`; the errors stay in
 * `errs` for the caller to look at. */
static int check(const char *schema, const char *instance, amp_errlist *errs)
{
	amp_schema_set *set = amp_schema_set_new();
	json_t *s = parse(schema), *v = parse(instance);
	int status;

	amp_errlist_truncate(errs, 0);
	amp_schema_set_add(set, s, NULL, NULL);
	status = amp_schema_validate(set, s, NULL, v, errs);
	json_decref(s);
	json_decref(v);
	amp_schema_set_free(set);
	return status;
}

static int valid(const char *schema, const char *instance)
{
	amp_errlist errs = { 0 };
	int status = check(schema, instance, &errs);

	amp_errlist_free(&errs);
	return status == AMP_OK;
}

/* True when the only error is `message` at `path`. */
static int one_error(const char *schema, const char *instance,
		     const char *path, const char *message)
{
	amp_errlist errs = { 0 };
	int status = check(schema, instance, &errs), match;

	match = status == AMP_ESCHEMA && errs.count == 1 &&
		!strcmp(errs.items[0].path, path) &&
		!strcmp(errs.items[0].message, message);
	if (!match) {
		printf("# status %d, %zu errors\n", status, errs.count);
		for (size_t i = 0; i < errs.count; i++)
			printf("#   \"%s\": %s\n", errs.items[i].path,
			       errs.items[i].message);
	}
	amp_errlist_free(&errs);
	return match;
}

static void test_messages(void)
{
	ok(one_error("{\"required\": [\"branch\"]}", "{}", "",
		     "missing required property \"branch\""),
	   "required: pointer \"\" and message");
	ok(one_error("{\"properties\": {\"p\": {\"enum\": [\"low\", \"medium\", "
		     "\"high\"]}}}", "{\"p\": \"urgent\"}", "/p",
		     "must be one of \"low\", \"medium\", \"high\""),
	   "enum: lists the allowed values");
	ok(one_error("{\"not\": {\"type\": \"string\"}}", "\"x\"", "",
		     "\"x\" matches the \"not\" schema, so it is not allowed"),
	   "not: message names the value");
	ok(one_error("{\"not\": {\"enum\": [\"main\", \"master\"]}}", "\"main\"", "",
		     "must not be \"main\""), "not enum: names the forbidden value");
	ok(one_error("{\"items\": [true, {\"type\": \"integer\"}]}",
		     "[1, \"a\"]", "/1", "expected integer, got string"),
	   "type: message and array index pointer");
	ok(one_error("{\"type\": [\"string\", \"null\"]}", "1", "",
		     "expected string or null, got integer"),
	   "type list: message");
	ok(one_error("{\"maximum\": 1}", "2", "", "must be at most 1"),
	   "maximum: message");
	ok(one_error("{\"pattern\": \"^T-[0-9]{4}-[0-9]{3}$\"}", "\"T-1\"", "",
		     "string does not match pattern ^T-[0-9]{4}-[0-9]{3}$"),
	   "pattern: message");
	ok(one_error("{\"additionalProperties\": false}", "{\"x\": 1}", "",
		     "unexpected property \"x\""),
	   "additionalProperties false: names the property");
	ok(one_error("{\"properties\": {\"a/b\": {\"properties\": {\"m~n\": "
		     "{\"type\": \"string\"}}}}}", "{\"a/b\": {\"m~n\": 1}}",
		     "/a~1b/m~0n", "expected string, got integer"),
	   "pointer escapes \"/\" as ~1 and \"~\" as ~0");
	ok(one_error("{\"patternProperties\": {\"^x\": {\"type\": \"null\"}}}",
		     "{\"x~/\": 0}", "/x~0~1", "expected null, got integer"),
	   "pointer escaping under patternProperties");
	ok(one_error("{\"minLength\": 2}", "\"\\u00e9\"", "",
		     "must be at least 2 characters long"),
	   "minLength counts code points: \"é\" is 1 long");
	ok(valid("{\"maxLength\": 1}", "\"\\u00e9\"") &&
	   valid("{\"maxLength\": 1}", "\"\\ud83d\\ude00\"") &&
	   !valid("{\"maxLength\": 1}", "\"ab\""),
	   "maxLength counts code points (2- and 4-byte UTF-8)");
	ok(one_error("{\"oneOf\": [{\"type\": \"integer\"}, {\"minimum\": 0}]}",
		     "1", "", "must match exactly one schema in \"oneOf\", but "
		     "matches schemas 0 and 1"), "oneOf: matched twice");
	ok(one_error("{\"format\": \"date-time\"}", "\"2026-02-30T00:00:00Z\"",
		     "", "must be an RFC 3339 date-time, got "
		     "\"2026-02-30T00:00:00Z\"") &&
	   valid("{\"format\": \"date-time\"}", "\"2026-02-26T14:32:07+00:00\"") &&
	   valid("{\"format\": \"email\"}", "\"not an email\""),
	   "format: date-time checked, unknown formats ignored");
}

static void test_combinators(void)
{
	amp_errlist errs = { 0 };
	const char *tagged = "{\"anyOf\": ["
		"{\"properties\": {\"kind\": {\"const\": \"a\"}, \"n\": "
		"{\"type\": \"integer\"}}, \"required\": [\"kind\"]},"
		"{\"properties\": {\"kind\": {\"const\": \"b\"}}, "
		"\"required\": [\"kind\"]}]}";

	ok(check(tagged, "{\"kind\": \"b\", \"n\": \"x\"}", &errs) == AMP_OK &&
	   errs.count == 0, "anyOf that passes leaves no errors behind");
	ok(check(tagged, "{}", &errs) == AMP_ESCHEMA &&
	   errs.count == 1 && !strcmp(errs.items[0].message,
	   "must match at least one schema in \"anyOf\""),
	   "anyOf failing at the value itself: one error");
	ok(check("{\"anyOf\": [{\"type\": \"string\"}, {\"properties\": "
		 "{\"n\": {\"type\": \"integer\"}}}]}", "{\"n\": 1}",
		 &errs) == AMP_OK, "anyOf: second branch passes");
	ok(check("{\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"object\", "
		 "\"properties\": {\"n\": {\"type\": \"integer\"}}}]}",
		 "{\"n\": \"x\"}", &errs) == AMP_ESCHEMA && errs.count == 2 &&
	   !strcmp(errs.items[1].path, "/n"),
	   "anyOf failing deeper: summary plus the closest branch's error");
	ok(valid("{\"type\": \"integer\"}", "1.0") &&
	   valid("{\"const\": 1}", "1.0") &&
	   valid("{\"enum\": [[1, {\"a\": 2}]]}", "[1.0, {\"a\": 2.0}]") &&
	   !valid("{\"uniqueItems\": true}", "[{\"a\": 1, \"b\": 2}, "
		  "{\"b\": 2.0, \"a\": 1}]"),
	   "1 and 1.0 are equal (type, const, enum, uniqueItems)");
	ok(valid("{\"multipleOf\": 0.0001}", "0.0075") &&
	   !valid("{\"multipleOf\": 0.0001}", "0.00751") &&
	   valid("{\"multipleOf\": 3}", "9007199254740993") &&
	   !valid("{\"multipleOf\": 2}", "9007199254740993") &&
	   !valid("{\"multipleOf\": 0.5}", "1e308"),
	   "multipleOf: float quotients and big integers");
	ok(valid("{\"maximum\": 9007199254740992}", "9007199254740992") &&
	   !valid("{\"maximum\": 9007199254740992}", "9007199254740993"),
	   "minimum/maximum compare integers exactly");
	amp_errlist_free(&errs);
}

static void test_patterns(void)
{
	amp_errlist errs = { 0 };

	ok(valid("{\"pattern\": \"^\\\\d{3}-\\\\w+\\\\s\\\\S$\"}",
		 "\"123-ab_c x\"") &&
	   !valid("{\"pattern\": \"^\\\\d+$\"}", "\"12a\""),
	   "\\d \\w \\s \\S are translated");
	ok(valid("{\"pattern\": \"^\\\\D\\\\W$\"}", "\"a-\"") &&
	   !valid("{\"pattern\": \"^\\\\D$\"}", "\"1\""),
	   "\\D \\W are translated");
	ok(valid("{\"pattern\": \"^[\\\\d.]+$\"}", "\"1.5\"") &&
	   valid("{\"pattern\": \"^[\\\\-\\\\]a]+$\"}", "\"-]a\"") &&
	   !valid("{\"pattern\": \"^[\\\\-\\\\]a]+$\"}", "\"b\"") &&
	   valid("{\"pattern\": \"^[\\\\w\\\\s]+$\"}", "\"a b\""),
	   "escapes inside [...]");
	ok(valid("{\"pattern\": \"^a\\\\.b$\"}", "\"a.b\"") &&
	   !valid("{\"pattern\": \"^a\\\\.b$\"}", "\"axb\"") &&
	   valid("{\"pattern\": \"^\\\\/\\\\(x\\\\)$\"}", "\"/(x)\""),
	   "escaped punctuation is literal");
	/* an empty pattern translates to nothing: it must still be
	 * compiled for a string past ASCII (it once ran regexec on an
	 * uncompiled regex_t: a crash) */
	ok(valid("{\"pattern\": \"\"}", "\"\\u00e9\"") && valid("{\"pattern\": \"\"}", "\"\""),
	   "the empty pattern matches every string, ASCII or not");
	ok(valid("{\"pattern\": \"^(?:ab)+?c$\"}", "\"ababc\"") &&
	   valid("{\"pattern\": \"^a{2}$\"}", "\"aa\"") &&
	   valid("{\"pattern\": \"^{x}$\"}", "\"{x}\""),
	   "(?:...), lazy quantifiers and literal braces");
	ok(valid("{\"pattern\": \"^\\\\u00e9.$\"}", "\"\\u00e9\\u00e8\"") &&
	   valid("{\"pattern\": \"^.$\"}", "\"\\ud83d\\ude00\""),
	   "UTF-8: \\uXXXX and \".\" match one code point");
	amp_errlist_free(&errs);
}

/* Validates string s[0..len) against {"pattern": pattern}: AMP_OK,
 * AMP_ESCHEMA or AMP_EIO, the errors left in `errs`. */
static int check_pattern(const char *pattern, const char *s, size_t len,
			 amp_errlist *errs)
{
	amp_schema_set *set = amp_schema_set_new();
	json_t *schema = json_pack("{s:s}", "pattern", pattern);
	json_t *v = json_stringn(s, len);
	int status;

	amp_errlist_truncate(errs, 0);
	status = amp_schema_validate(set, schema, NULL, v, errs);
	json_decref(schema);
	json_decref(v);
	amp_schema_set_free(set);
	return status;
}

/*
 * ECMA-262 patterns as PCRE2 reads them (share/doc/validator.md): what the
 * old translation to POSIX EREs refused or read otherwise, and the
 * ECMA-262 readings that the options of lib/schema/pattern.c keep (\d and
 * \w ASCII, "$" only at the end).  The plain cases are those of the old
 * lib/schema/ere.c's test, now ECMA-262.
 */
static void test_ecma(void)
{
	static const struct { const char *re, *s; int want; } cases[] = {
		/* look-around, back-references, named groups, lazy */
		{ "^a(?=b)", "ab", 1 }, { "^a(?=b)", "ac", 0 }, { "^a(?!b)", "ac", 1 },
		{ "(?<=a)b", "ab", 1 }, { "(?<=a)b", "cb", 0 }, { "(?<!a)b", "cb", 1 },
		{ "^(a|b)\\1$", "aa", 1 }, { "^(a|b)\\1$", "ab", 0 },
		{ "^(?<x>[a-z])\\k<x>$", "zz", 1 }, { "^(?<x>[a-z])\\k<x>$", "zy", 0 },
		{ "^(a+?)\\1$", "aaaa", 1 }, { "^(a+?)\\1$", "aaa", 0 },
		/* a back-reference to a group that did not take part: empty */
		{ "^(?:(a)|b)\\1$", "b", 1 },
		/* ASCII \d \w, as ECMA-262 has them */
		{ "^\\d$", "3", 1 }, { "^\\d$", "\xd9\xa3", 0 }, /* ARABIC-INDIC DIGIT THREE */
		{ "^\\w$", "\xc3\xa9", 0 }, { "^\\W$", "\xc3\xa9", 1 },
		/* "$" does not match before a final newline; "." no line terminator */
		{ "^a$", "a\n", 0 }, { "^a.b$", "a\nb", 0 }, { "^a.b$", "a\rb", 0 },
		{ "^a.b$", "a\xe2\x80\xa8" "b", 0 }, { "^a.b$", "a\xc3\xa9" "b", 1 },
		{ "^a[^]b$", "a\nb", 1 }, { "a[]", "a", 0 },
		/* \s is ECMA-262's white space, \S and [\S] its complement */
		{ "^\\s$", "\xc2\xa0", 1 }, { "^\\s$", "\xe3\x80\x80", 1 },
		{ "^\\s$", "\xef\xbb\xbf", 1 }, { "^\\s$", "\x0b", 1 }, { "^\\s$", "x", 0 },
		{ "^\\S$", "\xc2\xa0", 0 }, { "^[\\S]$", "x", 1 },
		{ "^[\\S]$", "\xe2\x80\xa8", 0 }, { "^[\\S]$", "\xf0\x9f\x98\x80", 1 },
		{ "^[^\\s]$", "\xc2\xa0", 0 }, { "^[\\s\\d]+$", "1\xc2\xa0" "2", 1 },
		/* \v is a vertical tab only; "[" in a class is a "[" */
		{ "^\\v$", "\x0b", 1 }, { "^\\v$", "\n", 0 },
		{ "^[[:alpha:]]$", "a]", 1 }, { "^[[:alpha:]]$", "b", 0 },
		/* \uHHHH, a surrogate pair, \u{H...}; \x without two digits is x */
		{ "^\\u00e9$", "\xc3\xa9", 1 }, { "^\\ud83d\\ude00$", "\xf0\x9f\x98\x80", 1 },
		{ "^\\u{1F600}$", "\xf0\x9f\x98\x80", 1 }, { "^\\xz$", "xz", 1 },
		/* \b on ASCII \w; \u without four digits is u */
		{ "^a\\b", "a\xc3\xa9", 1 }, { "^\\uz$", "uz", 1 },
		/* short Unicode property names */
		{ "^\\p{L}$", "\xc3\xa9", 1 }, { "^\\p{Lu}$", "a", 0 },
		/* PCRE2's own syntax, with PCRE2's meaning (validator.md) */
		{ "^(?i)a$", "A", 1 }, { "^a*+a$", "aa", 0 }, { "^(?>a+)b$", "aab", 1 },
		{ "\\Aa\\z", "a", 1 }, { "^a(?#c)b$", "ab", 1 },
		/* the old ERE matcher's cases, unchanged in ECMA-262 */
		{ "^T-[0-9]{4}-[0-9]{3,9}$", "T-2026-044", 1 },
		{ "^T-[0-9]{4}-[0-9]{3,9}$", "T-2026-04", 0 },
		{ "^T-[0-9]{4}-[0-9]{3,9}$", "T-2026-0440000000", 0 },
		{ "^T-[0-9]{4}-[0-9]{3,9}$", "xT-2026-044", 0 },
		{ "T-[0-9]", "abc T-1", 1 },
		{ "^(0|[1-9][0-9]{0,14})$", "0", 1 }, { "^(0|[1-9][0-9]{0,14})$", "01", 0 },
		{ "^(0|[1-9][0-9]{0,14})$", "999999999999999", 1 },
		{ "^(0|[1-9][0-9]{0,14})$", "9999999999999999", 0 },
		{ "^/", "/srv", 1 }, { "^/", "srv/", 0 }, { "a|b", "xxb", 1 },
		{ "^(a|ab)(c|bcd)$", "abcd", 1 }, { "^(a*)*b$", "aaaaaaaaaaaaaaaaaaaaac", 0 },
		{ "[a-]", "-", 1 }, { "[--/]", ".", 1 }, { "a\\.b", "axb", 0 }, { "a\\.b", "a.b", 1 },
		{ "x{0}y", "y", 1 }, { "^x{2,}$", "x", 0 }, { "^x{2,}$", "xxxxx", 1 },
		{ "^x{,2}$", "x{,2}", 1 },
		{ "^[A-Za-z0-9._-]{1,64}$", "agent.name-1_x", 1 },
		{ "^[A-Za-z0-9._-]{1,64}$", "", 0 },
	};
	amp_errlist errs = { 0 };
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = check_pattern(cases[i].re, cases[i].s, strlen(cases[i].s), &errs);
		char name[200];

		snprintf(name, sizeof(name), "/%s/ %s \"%s\"", cases[i].re,
			 cases[i].want ? "matches" : "does not match", cases[i].s);
		for (char *c = name; *c; c++)
			if ((unsigned char)*c < 0x20)
				*c = '?'; /* one TAP line */
		ok(got == (cases[i].want ? AMP_OK : AMP_ESCHEMA), name);
	}
	ok(check_pattern("^a\\u0000b$", "a\0b", 3, &errs) == AMP_OK &&
	   check_pattern("^a.b$", "a\0b", 3, &errs) == AMP_OK &&
	   check_pattern("^a$", "a\0", 2, &errs) == AMP_ESCHEMA,
	   "a NUL in the string is a character like any other");
	{
		/* jansson's own strings are UTF-8; a json_t built without the
		 * check may not be */
		amp_schema_set *set = amp_schema_set_new();
		json_t *schema = json_pack("{s:s}", "pattern", ""), *v = json_stringn_nocheck("a\xff", 2);

		amp_errlist_truncate(&errs, 0);
		ok(amp_schema_validate(set, schema, NULL, v, &errs) == AMP_ESCHEMA && errs.count == 1 &&
		   strstr(errs.items[0].message, "not valid UTF-8"),
		   "a string that is not UTF-8 cannot match: an error at its path");
		json_decref(schema);
		json_decref(v);
		amp_schema_set_free(set);
	}
	ok(check_pattern("^\\p{Letter}$", "a", 1, &errs) == AMP_EIO &&
	   strstr(errs.items[0].message, "invalid pattern ^\\p{Letter}$"),
	   "\\p{Letter} is refused as a schema error (PCRE2 10.42 knows \\p{L})");
	amp_errlist_free(&errs);
}

/* Seconds of CLOCK_MONOTONIC. */
static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/*
 * What a schema's pattern may cost: a catastrophic pattern gives up after
 * AMP_SCHEMA_MATCH_LIMIT steps, as a validation error at the value's path;
 * a pattern that does not compile is refused when its schema is added,
 * naming where it is.
 */
static void test_pattern_limits(void)
{
	static const char evil[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!";
	amp_errlist errs = { 0 };
	amp_schema_set *set;
	amp_error err;
	json_t *schema;
	double t0 = now();
	int status;
	char dir[8300];

	status = check("{\"properties\": {\"s\": {\"pattern\": \"^(a+)+$\"}}}",
		       "{\"s\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\"}", &errs);
	ok(status == AMP_ESCHEMA && errs.count == 1 && !strcmp(errs.items[0].path, "/s") &&
	   !strcmp(errs.items[0].message, "pattern ^(a+)+$ gave up on this string: more than "
		   "1,000,000 steps of backtracking (PCRE2's match limit)") &&
	   now() - t0 < 20,
	   "^(a+)+$ against 35 a's and !: PCRE2's match limit, an error at /s, in well under 20 s");
	status = check("{\"patternProperties\": {\"^(a+)+$\": {}}, \"additionalProperties\": false}",
		       "{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\": 1}", &errs);
	ok(status == AMP_ESCHEMA && errs.count == 1 &&
	   !strcmp(errs.items[0].path, "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!") &&
	   strstr(errs.items[0].message, "match limit"),
	   "patternProperties: a name the pattern gives up on is one error at its path, "
	   "not also an unexpected property");
	ok(check_pattern("^(a+)+$", evil, strlen(evil) - 1, &errs) == AMP_OK,
	   "the same pattern matches 35 a's at once");
	amp_errlist_free(&errs);

	set = amp_schema_set_new();
	schema = parse("{\"properties\": {\"a/b\": {\"items\": [{\"pattern\": \"(\"}]}}}");
	status = amp_schema_set_add(set, schema, "https://x.invalid/p.json", &err);
	ok(status == AMP_EIO && !strcmp(err.message, "https://x.invalid/p.json#/properties/a~1b/items/0"
					"/pattern: invalid pattern (: missing closing parenthesis"),
	   "a pattern that does not compile is refused when its schema is added, naming where it is");
	json_decref(schema);
	schema = parse("{\"patternProperties\": {\"x\": {}, \"(?<=a+)b\": {}}}");
	status = amp_schema_set_add(set, schema, "https://x.invalid/q.json", &err);
	ok(status == AMP_EIO && strstr(err.message, "https://x.invalid/q.json#/patternProperties/"
				       "(?<=a+)b: invalid pattern (?<=a+)b: lookbehind"),
	   "so is a patternProperties name, with PCRE2's reason (a look-behind of no fixed length)");
	json_decref(schema);
	schema = parse("{\"definitions\": {\"a\": {}}, \"properties\": {\"x\": "
		       "{\"$ref\": \"#/definitions/a\", \"pattern\": \"(\"}}}");
	ok(amp_schema_set_add(set, schema, "https://x.invalid/r.json", &err) == AMP_OK,
	   "a pattern beside a $ref, which draft-07 ignores, is not compiled");
	json_decref(schema);
	amp_schema_set_free(set);

	/* every pattern of the AMP schemas compiles */
	set = amp_schema_set_new();
	status = tap_source_dir(dir, sizeof(dir));
	strncat(dir, "/schemas", sizeof(dir) - strlen(dir) - 1);
	ok(status == 0 && amp_schema_set_add_dir(set, dir, &err) == AMP_OK &&
	   amp_schema_set_lookup(set, AMP_SCHEMA_MESSAGE),
	   "every pattern of the AMP schemas compiles");
	amp_schema_set_free(set);
}

static void test_refs(void)
{
	amp_errlist errs = { 0 };
	amp_schema_set *set = amp_schema_set_new();
	json_t *a = parse("{\"$id\": \"https://x.invalid/s/a.json\", "
			  "\"properties\": {\"n\": {\"$ref\": "
			  "\"b.json#/definitions/n\"}, \"t\": {\"$ref\": "
			  "\"b.json#tag\"}}}");
	json_t *b = parse("{\"$id\": \"https://x.invalid/s/b.json\", "
			  "\"definitions\": {\"n\": {\"type\": \"integer\"}, "
			  "\"t\": {\"$id\": \"#tag\", \"type\": \"string\"}}}");
	json_t *v = parse("{\"n\": \"x\", \"t\": 1}");
	int status;

	ok(check("{\"$ref\": \"#\"}", "1", &errs) == AMP_EIO &&
	   errs.count >= 1 && strstr(errs.items[0].message,
				     "$ref nesting deeper than 200"),
	   "$ref loop stops at the depth cap with an error");
	ok(check("{\"definitions\": {\"a\": {\"$ref\": \"#/definitions/b\"}, "
		 "\"b\": {\"$ref\": \"#/definitions/a\"}}, \"$ref\": "
		 "\"#/definitions/a\"}", "1", &errs) == AMP_EIO,
	   "mutual $ref loop stops too");
	ok(check("{\"$ref\": \"#/definitions/nope\"}", "1", &errs) == AMP_EIO &&
	   errs.count == 1 && strstr(errs.items[0].message,
				     "cannot resolve $ref"),
	   "unresolvable $ref is a schema error");
	ok(valid("{\"definitions\": {\"tree\": {\"type\": \"array\", \"items\": "
		 "{\"$ref\": \"#/definitions/tree\"}}}, \"$ref\": "
		 "\"#/definitions/tree\"}", "[[[], [[]]], []]"),
	   "recursive schema on a finite value");

	amp_schema_set_add(set, b, NULL, NULL);
	amp_schema_set_add(set, a, NULL, NULL);
	amp_errlist_truncate(&errs, 0);
	status = amp_schema_validate(set, a, NULL, v, &errs);
	ok(status == AMP_ESCHEMA && errs.count == 2 &&
	   !strcmp(errs.items[0].path, "/n") &&
	   !strcmp(errs.items[1].path, "/t"),
	   "cross-document $ref by $id, pointer and #name fragments");
	ok(amp_schema_set_lookup(set, "https://x.invalid/s/b.json#/definitions/n")
	   == json_object_get(json_object_get(b, "definitions"), "n") &&
	   amp_schema_set_lookup(set, "https://x.invalid/s/b.json#tag") ==
	   json_object_get(json_object_get(b, "definitions"), "t") &&
	   !amp_schema_set_lookup(set, "https://x.invalid/s/c.json"),
	   "amp_schema_set_lookup by $id, pointer and #name");
	amp_schema_set_free(set);
	json_decref(a);
	json_decref(b);
	json_decref(v);
	amp_errlist_free(&errs);
}

/* A schema nested deeper than AMP_SCHEMA_DEPTH_MAX must fail cleanly. */
static void test_depth(void)
{
	amp_errlist errs = { 0 };
	amp_schema_set *set = amp_schema_set_new();
	json_t *schema = json_true(), *outer, *v = json_integer(1);
	int i, status;

	for (i = 0; i < AMP_SCHEMA_DEPTH_MAX + 10; i++) {
		outer = json_object();
		json_object_set_new(outer, "allOf", json_pack("[o]", schema));
		schema = outer;
	}
	amp_schema_set_add(set, schema, NULL, NULL);
	status = amp_schema_validate(set, schema, NULL, v, &errs);
	ok(status == AMP_EIO && errs.count >= 1 &&
	   strstr(errs.items[errs.count - 1].message, "nested deeper"),
	   "schema nesting beyond the cap is an error, not a crash");
	amp_schema_set_free(set);
	json_decref(schema);
	json_decref(v);
	amp_errlist_free(&errs);
}

int main(void)
{
	test_messages();
	test_combinators();
	test_patterns();
	test_ecma();
	test_pattern_limits();
	test_refs();
	test_depth();
	return tap_done();
}
