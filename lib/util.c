#include "util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
		status = amp_error_set(err, AMP_EIO, "", "%s: read error",
				       path);
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

int amp_json_parse(const char *buf, size_t len, json_t **out, amp_error *err)
{
	json_error_t jerr;
	json_t *value;

	if (memchr(buf, '\0', len))
		return amp_error_set(err, AMP_ESCHEMA, "",
				     "invalid JSON: NUL byte at offset %zu",
				     (size_t)((const char *)memchr(buf, '\0', len) - buf));
	value = json_loadb(buf, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES,
			   &jerr);
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

void amp_print_error(const char *cmd, const amp_error *err)
{
	if (err->path[0])
		fprintf(stderr, "amp %s: error: %s: %s\n", cmd, err->path,
			err->message);
	else
		fprintf(stderr, "amp %s: error: %s\n", cmd, err->message);
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
