/*
 * test_schema - what the JSON-Schema-Test-Suite does not check: the error
 * records (pointers, RFC 6901 escaping, messages), the recursion limits,
 * the ECMA-262 to POSIX pattern translation, lengths in code points and
 * "$ref" across documents of a set.  Prints TAP.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/schema.h"

static int number, failures;

static void ok(int cond, const char *name)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++number, name);
	if (!cond)
		failures++;
}

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
	ok(check("{\"pattern\": \"a(?=b)\"}", "\"ab\"", &errs) == AMP_EIO &&
	   errs.count == 1 && strstr(errs.items[0].message, "invalid pattern"),
	   "look-ahead is refused as a schema error");
	amp_errlist_free(&errs);
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
	test_refs();
	test_depth();
	printf("1..%d\n", number);
	return failures ? 1 : 0;
}
