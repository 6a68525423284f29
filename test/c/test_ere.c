/* amp_ere (lib/schema/ere.h) against glibc's regcomp/regexec in the C locale:
 * whatever amp_ere compiles, regcomp compiles, and both say the same of
 * every string.  Hand-made cases; every "pattern" of the schemas on
 * mutations of strings they match; random patterns over {a, b, c} on every
 * string of up to 6 letters; random strings of ERE syntax (a fixed seed). */
#include <dirent.h>
#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/schema.h"
#include "tap.h"

static unsigned long long rng = 88172645463325252ULL;

static unsigned next_rand(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

/* 1 when amp_ere and regexec agree on s (or amp_ere refused it), else 0
 * with the case on stderr. */
static int agree(amp_ere *re, regex_t *rx, const char *pattern, const char *s, size_t len)
{
	regmatch_t m[1];
	int fast = amp_ere_match(re, s, len), slow;

	m[0].rm_so = 0;
	m[0].rm_eo = (regoff_t)len;
	slow = regexec(rx, s, 1, m, REG_STARTEND) == 0;
	if (fast < 0 || fast == slow)
		return 1;
	fprintf(stderr, "# differs: /%s/ on \"%.*s\": amp_ere %d, regexec %d\n", pattern, (int)len,
		s, fast, slow);
	return 0;
}

/* Compiles pattern both ways; *re NULL when amp_ere refuses it.  0 when
 * amp_ere compiles what regcomp refuses (the bug this looks for). */
static int both(const char *pattern, amp_ere **re, regex_t *rx, int *rx_ok)
{
	*re = amp_ere_compile(pattern);
	*rx_ok = regcomp(rx, pattern, REG_EXTENDED | REG_NOSUB) == 0;
	if (*re && !*rx_ok)
		fprintf(stderr, "# amp_ere compiles /%s/, regcomp does not\n", pattern);
	return !*re || *rx_ok;
}

static void hand_made(void)
{
	static const struct { const char *re, *s; int want; } cases[] = {
		{ "^T-[0-9]{4}-[0-9]{3,9}$", "T-2026-044", 1 },
		{ "^T-[0-9]{4}-[0-9]{3,9}$", "T-2026-04", 0 },
		{ "^T-[0-9]{4}-[0-9]{3,9}$", "T-2026-0440000000", 0 },
		{ "^T-[0-9]{4}-[0-9]{3,9}$", "xT-2026-044", 0 },
		{ "T-[0-9]", "abc T-1", 1 },
		{ "^(0|[1-9][0-9]{0,14})$", "0", 1 },
		{ "^(0|[1-9][0-9]{0,14})$", "01", 0 },
		{ "^(0|[1-9][0-9]{0,14})$", "999999999999999", 1 },
		{ "^(0|[1-9][0-9]{0,14})$", "9999999999999999", 0 },
		{ "^/", "/srv", 1 },
		{ "^/", "srv/", 0 },
		{ "a|b", "xxb", 1 },
		{ "^(a|ab)(c|bcd)$", "abcd", 1 },
		{ "^(a*)*b$", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac", 0 },
		{ "^(a+)+$", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", 0 },
		{ "[]a]", "]", 1 },
		{ "[^]a]", "a", 0 },
		{ "[a-]", "-", 1 },
		{ "[--/]", ".", 1 },
		{ "[[:digit:]][[:space:]]", "1\t", 1 },
		{ "[^[:alnum:]]", "abc", 0 },
		{ "a\\.b", "axb", 0 },
		{ "a\\.b", "a.b", 1 },
		{ "a.b", "a\nb", 1 },
		{ "x{0}y", "y", 1 },
		{ "^x{2,}$", "x", 0 },
		{ "^x{2,}$", "xxxxx", 1 },
		{ "^[A-Za-z0-9._-]{1,64}$", "agent.name-1_x", 1 },
		{ "^[A-Za-z0-9._-]{1,64}$", "", 0 },
	};
	static const char *refused[] = {
		"", "a|", "|a", "(a|)", "()", "a**", "a+?", "*a", "a{2,1}", "a{256}", "a{,3}",
		"a{1", "\\w", "\\b", "\\1", "a)", "(a", "[a", "[[.a.]]", "[[=a=]]", "[[:nope:]]",
		"[z-a]", "[0-9-x]", "[a-b-c]", "[[:digit:]-z]", "[a--]", "a}", "]", "^*", "$+", "$a", "a^", "(c|$){2}b", "($|c){2}b", "(^a)", "\xc3\xa9", "[\xc3\xa9]", "\\", "\\\xc3\xa9",
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		amp_ere *re;
		regex_t rx;
		int rx_ok, got;
		char name[160];

		both(cases[i].re, &re, &rx, &rx_ok);
		got = re ? amp_ere_match(re, cases[i].s, strlen(cases[i].s)) : -2;
		snprintf(name, sizeof(name), "/%s/ on \"%s\" is %d", cases[i].re, cases[i].s,
			 cases[i].want);
		for (char *c = name; *c; c++)
			if (*c == '\n' || *c == '\t')
				*c = ' '; /* one TAP line */
		ok(re && rx_ok && got == cases[i].want &&
		   agree(re, &rx, cases[i].re, cases[i].s, strlen(cases[i].s)), name);
		amp_ere_free(re);
		if (rx_ok)
			regfree(&rx);
	}
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		amp_ere *re = amp_ere_compile(refused[i]);
		char name[160];

		snprintf(name, sizeof(name), "/%s/ is left to regcomp", refused[i]);
		ok(!re, name);
		amp_ere_free(re);
	}
	{
		amp_ere *re = amp_ere_compile("^a.c$");

		ok(re && amp_ere_match(re, "a\0c", 3) == -1 && amp_ere_match(re, "a\xc3\xa9" "c", 4) == -1,
		   "a NUL or a byte past ASCII in the string: left to regexec");
		amp_ere_free(re);
	}
}

/* A random pattern over {a, b, c} of about `size` atoms into buf. */
static void random_pattern(char *buf, size_t bufsz, int size, int depth)
{
	static const char *atoms[] = {
		"a", "b", "c", ".", "[ab]", "[^a]", "[a-b]", "^", "$", "[-a]", "[a-]", "[^-b]",
		"[a-b-c]", "[b-a]", "[]a]", "[a-c-]", "[[:alpha:]]", "[^[:lower:]b]", "\\.",
	};
	static const char *quants[] = { "", "", "", "*", "+", "?", "{2}", "{0,2}", "{1,}", "{2,3}" };
	size_t len = strlen(buf);
	int i, n = 1 + (int)next_rand((unsigned)size);

	for (i = 0; i < n && len + 40 < bufsz; i++) {
		const char *a = atoms[next_rand(sizeof(atoms) / sizeof(atoms[0]))];
		const char *q = quants[next_rand(sizeof(quants) / sizeof(quants[0]))];

		if (depth < 3 && next_rand(4) == 0) {
			strcat(buf, "(");
			random_pattern(buf, bufsz - 20, size / 2 + 1, depth + 1);
			if (next_rand(2)) {
				strcat(buf, "|");
				random_pattern(buf, bufsz - 20, size / 2 + 1, depth + 1);
			}
			strcat(buf, ")");
		} else {
			strcat(buf, a);
			if (!strcmp(a, "^") || !strcmp(a, "$"))
				q = "";
		}
		strcat(buf, q);
		len = strlen(buf);
	}
}

static void random_patterns(void)
{
	int p, compiled = 0, compared = 0, bad = 0;

	for (p = 0; p < 3000; p++) {
		char pattern[512] = "", s[8];
		amp_ere *re;
		regex_t rx;
		int rx_ok, len, k;

		if (next_rand(3) == 0)
			strcat(pattern, "^");
		random_pattern(pattern, sizeof(pattern) - 2, 5, 0);
		if (next_rand(3) == 0)
			strcat(pattern, "$");
		if (!both(pattern, &re, &rx, &rx_ok))
			bad++;
		if (re && rx_ok) {
			compiled++;
			/* every string over {a, b, c} of 0 to 6 letters */
			for (len = 0; len <= 6; len++) {
				int total = 1;

				for (k = 0; k < len; k++)
					total *= 3;
				for (k = 0; k < total; k++) {
					int v = k, j;

					for (j = 0; j < len; j++, v /= 3)
						s[j] = (char)('a' + v % 3);
					compared++;
					bad += !agree(re, &rx, pattern, s, (size_t)len);
				}
			}
		}
		amp_ere_free(re);
		if (rx_ok)
			regfree(&rx);
	}
	printf("# random patterns: %d compiled, %d strings compared\n", compiled, compared);
	ok(compiled > 1000 && bad == 0, "3,000 random patterns over {a, b, c}: amp_ere and regexec agree on every string of up to 6 letters");
}

/* Strings of ERE syntax at random: whatever amp_ere compiles, regcomp must
 * compile, and match alike. */
static void random_syntax(void)
{
	static const char alphabet[] = "ab()[]{}|*+?^$-\\,.0123:";
	int p, compiled = 0, bad = 0;

	for (p = 0; p < 200000; p++) {
		char pattern[16], s[8];
		int n = 1 + (int)next_rand(10), k, len;
		amp_ere *re;
		regex_t rx;
		int rx_ok;

		for (k = 0; k < n; k++)
			pattern[k] = alphabet[next_rand(sizeof(alphabet) - 1)];
		pattern[n] = '\0';
		if (!both(pattern, &re, &rx, &rx_ok))
			bad++;
		if (re && rx_ok) {
			compiled++;
			for (k = 0; k < 40; k++) {
				len = (int)next_rand(7);
				for (int j = 0; j < len; j++)
					s[j] = alphabet[next_rand(sizeof(alphabet) - 1)];
				bad += !agree(re, &rx, pattern, s, (size_t)len);
			}
		}
		amp_ere_free(re);
		if (rx_ok)
			regfree(&rx);
	}
	printf("# random syntax: %d of 200,000 compiled by amp_ere\n", compiled);
	ok(compiled > 1000 && bad == 0, "200,000 random strings of ERE syntax: what amp_ere compiles, regcomp compiles, and they match alike");
}

/* Every "pattern" member of a schema document. */
static void collect_patterns(json_t *v, json_t *out)
{
	const char *key;
	json_t *x;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach(v, key, x) {
			if (!strcmp(key, "pattern") && json_is_string(x))
				json_array_append(out, x);
			else
				collect_patterns(x, out);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x)
			collect_patterns(x, out);
	}
}

static void schema_patterns(const char *dir)
{
	static const char *samples[] = {
		"T-2026-044", "T-2026-123456789", "task_dispatch-T-2026-044-1772116320000",
		"review_verdict-T-2026-044-0", "escalation-T-2026-044-1772116320000",
		"claim-1772116320000", "2026-02-26T14:32:07+00:00", "2026-02-29T23:59:59.123Z",
		"2026-04-31T00:00:00Z", "000012.msg.task_result-T-2026-044-1.json", "main",
		"refs/heads/master", "REFS/Remotes/origin/MAIN", "feature/x", "/srv/repo",
		"0123456789abcdef0123456789abcdef01234567", "abc1234", "agent-7.x_y",
	};
	static const char alphabet[] = "0123456789-T:.+Zazmsgj/_ACKEFRH";
	json_t *patterns = json_array(), *doc, *p;
	struct dirent *d;
	DIR *dh = opendir(dir);
	size_t i, k;
	int compiled = 0, bad = 0, compared = 0, matched = 0, m;

	while (dh && (d = readdir(dh))) {
		char path[9000];

		if (!strstr(d->d_name, ".schema.json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		if ((doc = json_load_file(path, 0, NULL))) {
			collect_patterns(doc, patterns);
			json_decref(doc);
		}
	}
	if (dh)
		closedir(dh);
	json_array_foreach(patterns, i, p) {
		const char *pattern = json_string_value(p);
		amp_ere *re;
		regex_t rx;
		int rx_ok;

		if (!both(pattern, &re, &rx, &rx_ok))
			bad++;
		compiled += re != NULL;
		for (k = 0; re && rx_ok && k < sizeof(samples) / sizeof(samples[0]); k++) {
			char s[128];
			size_t len = strlen(samples[k]);

			bad += !agree(re, &rx, pattern, samples[k], len);
			/* mutations: a byte changed, dropped or doubled */
			for (m = 0; m < 300; m++) {
				size_t at = next_rand((unsigned)len + 1), n = len;

				memcpy(s, samples[k], len);
				switch (next_rand(3)) {
				case 0:
					if (at < n)
						s[at] = alphabet[next_rand(sizeof(alphabet) - 1)];
					break;
				case 1:
					if (at < n) {
						memmove(s + at, s + at + 1, n - at - 1);
						n--;
					}
					break;
				default:
					memmove(s + at + 1, s + at, n - at);
					s[at] = alphabet[next_rand(sizeof(alphabet) - 1)];
					n++;
				}
				compared++;
				matched += amp_ere_match(re, s, n) == 1;
				bad += !agree(re, &rx, pattern, s, n);
			}
		}
		amp_ere_free(re);
		if (rx_ok)
			regfree(&rx);
	}
	printf("# schema patterns: %zu, %d compiled by amp_ere, %d strings compared, %d matched\n",
	       json_array_size(patterns), compiled, compared, matched);
	ok(json_array_size(patterns) >= 15 && compiled == (int)json_array_size(patterns),
	   "amp_ere compiles every pattern of the schemas");
	ok(bad == 0 && matched > 100, "every pattern of the schemas: amp_ere and regexec agree on samples and their mutations");
	json_decref(patterns);
}

int main(void)
{
	char src[8192], dir[8300];

	hand_made();
	random_patterns();
	random_syntax();
	if (tap_source_dir(src, sizeof(src)) < 0) {
		ok(0, "the source tree is beside the build directory");
	} else {
		snprintf(dir, sizeof(dir), "%s/schemas", src);
		schema_patterns(dir);
	}
	return tap_done();
}
