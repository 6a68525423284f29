#include "util.h"
#include "errout.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "utf8.h"

#ifndef AMP_DATADIR
#define AMP_DATADIR "/usr/local/share/amp"
#endif

int amp_read_file(const char *path, char **buf, size_t *len, amp_error *err)
{
	return amp_read_file_max(path, SIZE_MAX - 1, buf, len, err);
}

int amp_read_file_max(const char *path, size_t max, char **buf, size_t *len,
		      amp_error *err)
{
	FILE *f = NULL;
	char *data = NULL, *bigger;
	size_t used = 0, alloc = 65536, n, want;
	int status = AMP_OK;

	if (strcmp(path, "-") == 0) {
		f = stdin;
	} else if (!(f = fopen(path, "rb"))) {
		status = amp_error_set(err, AMP_EIO, "", "%s: %s", path,
				       strerror(errno));
		goto cleanup;
	}
	if (!(data = malloc(alloc))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	/* One byte past `max` says "larger" without reading the rest. */
	while (used <= max) {
		want = alloc - used - 1;
		if (want > max + 1 - used)
			want = max + 1 - used;
		if ((n = fread(data + used, 1, want, f)) == 0)
			break;
		used += n;
		if (alloc - used - 1 == 0 && used <= max) {
			if (!(bigger = realloc(data, alloc * 2))) {
				status = amp_error_set(err, AMP_EIO, "",
						       "out of memory");
				goto cleanup;
			}
			data = bigger;
			alloc *= 2;
		}
	}
	if (ferror(f)) {
		/* EISDIR for a directory: say so rather than "read error". */
		status = amp_error_set(err, AMP_EIO, "", "%s: %s", path,
				       strerror(errno));
		goto cleanup;
	}
	data[used] = '\0';
	*buf = data;
	*len = used;
	data = NULL;
cleanup:
	free(data);
	if (f && f != stdin)
		fclose(f);
	return status;
}

/* The shortest text of d that strtod reads back as d, into buf (>= 32). */
static size_t shortest_real(double d, char *buf, size_t bufsz)
{
	int p, n = 0;

	const char *e;

	for (p = 1; p <= 17; p++) {
		n = snprintf(buf, bufsz, "%.*g", p, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	/* %g writes 100.0 at precision 1 as "1e+02": an integral value below
	 * 1e17 whose extra digits are only zeros is written out, "100.0", as
	 * jansson wrote it, with no more significant digits. */
	if (n > 0 && (e = strchr(buf, 'e')) && e[1] == '+' && atoi(e + 2) < 17) {
		char whole[32];
		int m = snprintf(whole, sizeof(whole), "%.*g", atoi(e + 2) + 1, d), z = 0;

		while (m - z > 1 && whole[m - 1 - z] == '0')
			z++;
		if (m > 0 && (size_t)m < bufsz && !strchr(whole, 'e') &&
		    m - z - (whole[0] == '-') <= p && strtod(whole, NULL) == d) {
			memcpy(buf, whole, (size_t)m + 1);
			n = m;
		}
	}
	if (n > 0 && (size_t)n + 2 < bufsz && !strpbrk(buf, ".eE")) {
		memcpy(buf + n, ".0", 3);
		n += 2;
	}
	return n > 0 ? (size_t)n : 0;
}

char *amp_json_dumps(const json_t *v, size_t flags)
{
	char *text = json_dumps(v, flags), *out, num[64];
	size_t len, i, j = 0, k, n;

	if (!text)
		return NULL;
	len = strlen(text);
	/* A shortest form is never longer than jansson's %.17g (plus ".0"). */
	if (!(out = malloc(len + len / 2 + 8))) {
		free(text);
		return NULL;
	}
	for (i = 0; i < len;) {
		if (text[i] == '"') {
			/* a string (or a key), its escapes included, as it is */
			out[j++] = text[i++];
			while (i < len && text[i] != '"') {
				if (text[i] == '\\' && i + 1 < len)
					out[j++] = text[i++];
				out[j++] = text[i++];
			}
			if (i < len)
				out[j++] = text[i++];
		} else if (text[i] == '-' || (text[i] >= '0' && text[i] <= '9')) {
			k = i + strspn(text + i, "-+0123456789.eE");
			n = k - i;
			if (memchr(text + i, '.', n) || memchr(text + i, 'e', n) ||
			    memchr(text + i, 'E', n)) {
				char tok[64];

				if (n < sizeof(tok)) {
					memcpy(tok, text + i, n);
					tok[n] = '\0';
					n = shortest_real(strtod(tok, NULL), num, sizeof(num));
					memcpy(out + j, num, n);
					j += n;
					i = k;
					continue;
				}
			}
			memcpy(out + j, text + i, k - i);
			j += k - i;
			i = k;
		} else {
			out[j++] = text[i++];
		}
	}
	out[j] = '\0';
	free(text);
	return out;
}

int amp_json_dumpf(const json_t *v, FILE *f, size_t flags)
{
	char *text = amp_json_dumps(v, flags);
	int rc = text && fputs(text, f) != EOF ? 0 : -1;

	free(text);
	return rc;
}

void amp_print_error(const char *cmd, const amp_error *err)
{
	amp_errout_record(err->status, err->path, err->message);
	/* Messages quote user values (ids, option values, file contents). */
	if (err->path[0])
		fprintf(stderr, "amp %s: error: %s: %s\n", cmd,
			amp_term(err->path), amp_term(err->message));
	else
		fprintf(stderr, "amp %s: error: %s\n", cmd,
			amp_term(err->message));
}

int amp_use_color(FILE *stream)
{
	const char *term = getenv("TERM");

	if (getenv("NO_COLOR") && *getenv("NO_COLOR"))
		return 0;
	if (term && strcmp(term, "dumb") == 0)
		return 0;
	return isatty(fileno(stream));
}

void amp_pointer_append(char *buf, size_t bufsz, const char *token)
{
	size_t used = strlen(buf);

	if (used + 1 >= bufsz)
		return;
	buf[used++] = '/';
	for (; *token && used + 2 < bufsz; token++) {
		if (*token == '~') {
			buf[used++] = '~';
			buf[used++] = '0';
		} else if (*token == '/') {
			buf[used++] = '~';
			buf[used++] = '1';
		} else {
			buf[used++] = *token;
		}
	}
	buf[used] = '\0';
}

int amp_exe_dir(char *buf, size_t bufsz)
{
	ssize_t n = readlink("/proc/self/exe", buf, bufsz - 1);
	char *slash;

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}

static int is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int amp_schema_dir(char *buf, size_t bufsz)
{
	const char *env = getenv("AMP_SCHEMA_DIR");
	char exe[4096];
	static const char *const rel[] = { "/../schemas", "/../share/amp/schemas",
					   "/../../share/amp/schemas" };
	size_t i;

	if (env && *env) {
		snprintf(buf, bufsz, "%s", env);
		return is_dir(buf) ? 0 : -1;
	}
	if (amp_exe_dir(exe, sizeof(exe)) == 0) {
		for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(buf, bufsz, "%s%s", exe, rel[i]);
			if (is_dir(buf))
				return 0;
		}
	}
	snprintf(buf, bufsz, "%s/schemas", AMP_DATADIR);
	return is_dir(buf) ? 0 : -1;
}

static int is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int amp_data_path(const char *rel, char *buf, size_t bufsz)
{
	static const char *const from_exe[] = {
		"/../share/", "/../../share/", "/../../../share/",
		"/../share/amp/"
	};
	char dir[4096];
	size_t i;

	if (amp_schema_dir(dir, sizeof(dir)) == 0) {
		snprintf(buf, bufsz, "%s/../share/%s", dir, rel);
		if (is_file(buf))
			return 0;
		snprintf(buf, bufsz, "%s/../%s", dir, rel);
		if (is_file(buf))
			return 0;
	}
	if (amp_exe_dir(dir, sizeof(dir)) == 0) {
		for (i = 0; i < sizeof(from_exe) / sizeof(from_exe[0]); i++) {
			snprintf(buf, bufsz, "%s%s%s", dir, from_exe[i], rel);
			if (is_file(buf))
				return 0;
		}
	}
	snprintf(buf, bufsz, "%s/%s", AMP_DATADIR, rel);
	return is_file(buf) ? 0 : -1;
}

/* Code points that move the cursor, or reorder what is shown around them. */
static int term_unsafe(unsigned cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

const char *amp_term(const char *s)
{
	static char *ring[8];
	static size_t size[8];
	static unsigned turn;
	unsigned slot = turn++ % 8, cp;
	size_t len, used = 0, n;
	char *out;

	if (!s)
		s = "(null)";
	/* Printable ASCII without a backslash, most of what amp prints (task
	 * ids, states, roles), is its own escape. */
	for (n = 0; s[n] >= 0x20 && s[n] < 0x7f && s[n] != '\\'; n++)
		;
	if (!s[n])
		return s;
	/* The longest escape, "\u202e" for 3 bytes or "\xff" for 1, is at
	 * most 4 characters a byte. */
	len = strlen(s) * 4 + 1;
	if (size[slot] < len) {
		if (!(out = realloc(ring[slot], len)))
			return "(out of memory)";
		ring[slot] = out;
		size[slot] = len;
	}
	out = ring[slot];
	for (; *s; s += n) {
		if (!(n = amp_utf8_seq(s, &cp))) {
			used += (size_t)sprintf(out + used, "\\x%02x", (unsigned char)*s);
			n = 1;
		} else if (cp == '\n' || cp == '\t' || cp == '\r' || cp == '\\') {
			out[used++] = '\\';
			out[used++] = cp == '\n' ? 'n' : cp == '\t' ? 't' : cp == '\r' ? 'r' : '\\';
		} else if (term_unsafe(cp)) {
			used += (size_t)sprintf(out + used, cp < 0x80 ? "\\x%02x" : "\\u%04x", cp);
		} else {
			memcpy(out + used, s, n);
			used += n;
		}
	}
	out[used] = '\0';
	return out;
}

/* Only the characters of a decimal number: strtoll and strtod would also
 * take blanks, "inf", "nan" and hexadecimal. */
static int number_chars(const char *s, const char *allowed)
{
	return *s && strspn(s, allowed) == strlen(s) &&
	       (isdigit((unsigned char)*s) || *s == '-' || *s == '.');
}

int amp_parse_int(const char *what, const char *s, long long min,
		  long long max, long long *out, amp_error *err)
{
	char *end;
	long long v;

	errno = 0;
	if (!number_chars(s, "-0123456789") ||
	    (v = strtoll(s, &end, 10), *end))
		return amp_error_set(err, AMP_EUSAGE, "",
				     "%s: '%s' is not an integer (%lld..%lld)",
				     what, s, min, max);
	if (errno == ERANGE || v < min || v > max)
		return amp_error_set(err, AMP_EUSAGE, "",
				     "%s: %s is out of range (%lld..%lld)",
				     what, s, min, max);
	*out = v;
	return AMP_OK;
}

int amp_parse_real(const char *what, const char *s, double min, double max,
		   double *out, amp_error *err)
{
	char *end;
	double v;

	if (!number_chars(s, "-+.eE0123456789") ||
	    (v = strtod(s, &end), *end))
		return amp_error_set(err, AMP_EUSAGE, "",
				     "%s: '%s' is not a number (%g..%g)",
				     what, s, min, max);
	if (!isfinite(v) || v < min || v > max)
		return amp_error_set(err, AMP_EUSAGE, "",
				     "%s: %s is out of range (%g..%g)",
				     what, s, min, max);
	*out = v;
	return AMP_OK;
}

const char *amp_json_text(const char *s)
{
	return amp_utf8_valid(s) ? s : amp_term(s);
}

char *amp_duration_format(long long seconds, char buf[AMP_DURATION_BUFSZ])
{
	unsigned long long s = seconds < 0 ? 0ULL - (unsigned long long)seconds
					   : (unsigned long long)seconds;

	if (s < 60)
		snprintf(buf, AMP_DURATION_BUFSZ, "%llus", s);
	else if (s < 3600)
		snprintf(buf, AMP_DURATION_BUFSZ, "%llum", s / 60);
	else if (s < 86400 && s / 60 % 60)
		snprintf(buf, AMP_DURATION_BUFSZ, "%lluh%02llum", s / 3600, s / 60 % 60);
	else if (s < 86400)
		snprintf(buf, AMP_DURATION_BUFSZ, "%lluh", s / 3600);
	else if (s / 3600 % 24)
		snprintf(buf, AMP_DURATION_BUFSZ, "%llud%lluh", s / 86400, s / 3600 % 24);
	else
		snprintf(buf, AMP_DURATION_BUFSZ, "%llud", s / 86400);
	return buf;
}
