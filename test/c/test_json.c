/* amp_json_parse_fast (lib/json/jsonparse.h) against jansson's json_loadb: where
 * the fast path answers, jansson must answer the same value, members in the
 * same order; and it must answer for what amp reads every day (the schemas,
 * records), or it would be no fast path.  Edge cases by hand, then texts
 * generated at random and mutated byte by byte (a fixed seed). */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json/json.h"
#include "tap.h"
#include "base/util.h"

static char *dump(const json_t *v)
{
	return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

/* 1 when the fast path answered, 0 when it left the text to jansson, -1
 * when it answered something jansson does not (the bug this looks for). */
static int compare(const char *text, size_t len)
{
	json_t *fast = NULL, *ref = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
	char *a = NULL, *b = NULL;
	int rc;

	if (!amp_json_parse_fast(text, len, &fast)) {
		rc = 0;
	} else {
		a = dump(fast);
		b = ref ? dump(ref) : NULL;
		rc = ref && json_equal(fast, ref) && a && b && !strcmp(a, b) ? 1 : -1;
		if (rc < 0)
			fprintf(stderr, "# differs: %.*s\n#   fast %s\n#   jansson %s\n", (int)len, text,
				a ? a : "?", b ? b : "(error)");
	}
	free(a);
	free(b);
	json_decref(fast);
	json_decref(ref);
	return rc;
}

static unsigned long long rng = 88172645463325252ULL;

static unsigned next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng >> 11);
}

struct buf {
	char *s;
	size_t len, cap;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->s = realloc(b->s, b->cap);
		if (!b->s)
			abort();
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void space(struct buf *b)
{
	static const char *const ws[] = { "", "", "", " ", "\n  ", "\t", "\r\n" };

	puts_(b, ws[next() % 7]);
}

static void gen_string(struct buf *b)
{
	static const char *const pieces[] = {
		"a", "msg_id", "T-2026-044", " ", "\\\"", "\\\\", "\\/", "\\n", "\\t", "\\b", "\\f",
		"\\r", "\\u00e9", "\\u20AC", "\\ud83d\\ude00", "\\u0001", "\\u0000", "\\ud800",
		"\\udc00x", "\\ud800\\u0041", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\x7f",
		"\xc0\xaf", "\xed\xa0\x80", "\xff", "\x01", "\\x", "\\u12", "<b>", "\xe2\x80\xa8",
	};
	int i, k = (int)(next() % 5);

	puts_(b, "\"");
	for (i = 0; i < k; i++)
		puts_(b, pieces[next() % (sizeof(pieces) / sizeof(pieces[0]))]);
	puts_(b, "\"");
}

static void gen_number(struct buf *b)
{
	static const char *const nums[] = {
		"0", "-0", "1", "-1", "42", "123456789012345678", "-123456789012345678",
		"1234567890123456789", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "99999999999999999999", "0.5", "-0.0", "0.93", "1e5",
		"1E+2", "1e-400", "1e400", "-1e400", "2.2250738585072014e-308",
		"1.7976931348623157e308", "3.141592653589793238462643383279", "01", "1.", ".5",
		"-", "+1", "1e", "1e+", "0x10", "1.5e3",
	};
	puts_(b, nums[next() % (sizeof(nums) / sizeof(nums[0]))]);
}

static void gen_value(struct buf *b, int depth)
{
	int i, k, kind = (int)(next() % (depth > 6 ? 5 : 8));

	switch (kind) {
	case 0: gen_string(b); break;
	case 1: gen_number(b); break;
	case 2: puts_(b, (const char *[]){ "true", "false", "null" }[next() % 3]); break;
	case 3: gen_number(b); break;
	case 4: gen_string(b); break;
	default: /* an object (5, 6) or an array */
		puts_(b, kind < 7 ? "{" : "[");
		k = (int)(next() % 5);
		for (i = 0; i < k; i++) {
			space(b);
			if (kind < 7) {
				if (next() % 4)
					puts_(b, (const char *[]){ "\"a\"", "\"b\"", "\"type\"", "\"payload\"" }[next() % 4]);
				else
					gen_string(b);
				space(b);
				puts_(b, ":");
				space(b);
			}
			gen_value(b, depth + 1);
			space(b);
			if (i + 1 < k)
				puts_(b, ",");
		}
		puts_(b, kind < 7 ? "}" : "]");
		break;
	}
}

/* The files of directory <source>/rel ending in .json: each read by the
 * fast path as jansson reads it, and answered by it when `answer`. */
static void check_dir(const char *src, const char *rel, int answer)
{
	char dir[8300], path[8600], name[8800];
	struct dirent *d;
	DIR *dp;
	int files = 0;

	snprintf(dir, sizeof(dir), "%s/%s", src, rel);
	if (!(dp = opendir(dir))) {
		snprintf(name, sizeof(name), "%s is there to read", dir);
		ok(0, name);
		return;
	}
	while ((d = readdir(dp))) {
		char *buf = NULL;
		size_t len = 0, nl = strlen(d->d_name);
		amp_error err;
		int r;

		if (nl < 6 || strcmp(d->d_name + nl - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		r = amp_read_file(path, &buf, &len, &err) == 0 ? compare(buf, len) : -1;
		snprintf(name, sizeof(name), "%s %s/%s as jansson does", answer ? "reads" : "never misreads",
			 rel, d->d_name);
		ok(answer ? r == 1 : r >= 0, name);
		free(buf);
		files++;
	}
	closedir(dp);
	snprintf(name, sizeof(name), "%s has files to read", rel);
	ok(files > 0, name);
}

int main(void)
{
	static const char *const answered[] = {
		"{}", "[]", "0", "-0", "\"\"", " {\"a\" : [1, 2.5, \"x\", true, false, null]} ",
		"{\"s\":\"\\u00e9\\ud83d\\ude00\\n\\\"\\\\\\/\"}", "\"\xc3\xa9\xe2\x82\xac\"",
		"123456789012345678", "1e-400", "[[[[[[[[[[]]]]]]]]]]", "\"\x7f\"",
	};
	/* what a mutation puts in place of one byte */
	static const char bytes[] = "{}[],:\"\\ 0-.eE\x80\xff";
	static const char *const left[] = {
		"", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\":1,\"a\":2}", "\"\\u0000\"",
		"\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\x01\"", "\"\xff\"",
		"\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "1234567890123456789", "1e400", "01", "1.", ".5",
		"+1", "tru", "truex", "[1] 2", "\"abc", "{\"a\" 1}", "nul", "\xef\xbb\xbf{}", "\"\\x\"",
	};
	struct buf b = { 0 };
	char src[4200];
	size_t i;
	long cases = 0, answers = 0, wrong = 0;
	int j, r;

	for (i = 0; i < sizeof(answered) / sizeof(answered[0]); i++) {
		char name[256];

		snprintf(name, sizeof(name), "answers as jansson: %s", answered[i]);
		ok(compare(answered[i], strlen(answered[i])) == 1, name);
	}
	for (i = 0; i < sizeof(left) / sizeof(left[0]); i++) {
		char name[256];

		snprintf(name, sizeof(name), "leaves to jansson: %s", left[i]);
		ok(compare(left[i], strlen(left[i])) == 0, name);
	}
	{
		/* nesting past 64 levels is jansson's */
		char deep[200];

		memset(deep, '[', 65);
		memset(deep + 65, ']', 65);
		ok(compare(deep, 130) == 0, "leaves 65 levels of nesting to jansson");
		ok(compare(deep + 1, 128) == 1, "answers 64 levels of nesting");
	}
	/* the schemas and messages amp reads */
	if (tap_source_dir(src, sizeof(src)) < 0) {
		ok(0, "the source tree is beside the build directory");
	} else {
		check_dir(src, "schemas", 1);
		check_dir(src, "test/fixtures/valid", 1);
		check_dir(src, "test/fixtures/invalid", 0);
	}
	/* generated texts, and each with one byte changed, removed or added */
	for (j = 0; j < 60000; j++) {
		b.len = 0;
		space(&b);
		gen_value(&b, 0);
		space(&b);
		r = compare(b.s, b.len);
		cases++;
		answers += r == 1;
		wrong += r < 0;
		if (b.len) {
			size_t at = next() % b.len;
			char saved = b.s[at];

			b.s[at] = bytes[next() % (sizeof(bytes) - 1)];
			r = compare(b.s, b.len);
			cases++;
			answers += r == 1;
			wrong += r < 0;
			b.s[at] = saved;
			r = compare(b.s, b.len - 1);
			cases++;
			answers += r == 1;
			wrong += r < 0;
		}
	}
	printf("# %ld generated texts, %ld answered by the fast path, %ld differently from jansson\n",
	       cases, answers, wrong);
	ok(wrong == 0, "on generated and mutated texts, every answer is jansson's");
	ok(answers > cases / 5, "the fast path answers a good share of them");
	free(b.s);
	return tap_done();
}
