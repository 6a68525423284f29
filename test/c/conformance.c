/*
 * conformance - runs the JSON-Schema-Test-Suite's draft7 tests against
 * lib/schema/schema.c and prints TAP.
 *
 * Every file of tests/draft7 is mandatory.  The suite's remotes/
 * directory is served from disk under http://localhost:1234/ (that is the
 * host the suite's own server uses), together with the bundled draft-07
 * meta-schema, so refRemote.json runs without a network.  A test is
 * skipped only when its schema needs a remote document that is not there:
 * that shows as "cannot resolve $ref" of an http(s) URI.
 * optional/format/date-time.json runs too but is reported as comments
 * only, since draft-07 makes format assertions optional.
 *
 * The suite is found at $AMP_JSTS_DIR, else /usr/share/json-schema-test-suite.
 */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "schema/schema.h"
#include "base/util.h"

#define REMOTE_BASE "http://localhost:1234/"

struct tally {
	int passed, failed, skipped;
};

static json_t *remotes;		/* URI -> document */
static json_t *meta;
static int tap_number;

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the *.json names of a directory, sorted; NULL-terminated. */
static char **list_json(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL, **bigger;
	size_t n = 0, len;

	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len < 5 ||
		    strcmp(de->d_name + len - 5, ".json"))
			continue;
		if (!(bigger = realloc(names, (n + 2) * sizeof(*names))))
			break;
		names = bigger;
		names[n++] = strdup(de->d_name);
		names[n] = NULL;
	}
	closedir(d);
	if (names)
		qsort(names, n, sizeof(*names), cmp_names);
	return names;
}

static void free_names(char **names)
{
	for (size_t i = 0; names && names[i]; i++)
		free(names[i]);
	free(names);
}

/* Loads remotes/ recursively as REMOTE_BASE + relative path. */
static int load_remotes(const char *dir, const char *rel)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct stat st;
	char path[4096], sub[2048], uri[4096];
	json_error_t jerr;
	json_t *doc;
	int status = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		snprintf(sub, sizeof(sub), "%s%s", rel, de->d_name);
		if (stat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			strncat(sub, "/", sizeof(sub) - strlen(sub) - 1);
			status |= load_remotes(path, sub);
			continue;
		}
		if (strlen(de->d_name) < 5 ||
		    strcmp(de->d_name + strlen(de->d_name) - 5, ".json"))
			continue;
		if (!(doc = json_load_file(path, 0, &jerr))) {
			printf("# cannot parse %s: %s\n", path, jerr.text);
			status = -1;
			continue;
		}
		snprintf(uri, sizeof(uri), REMOTE_BASE "%s", sub);
		json_object_set_new(remotes, uri, doc);
	}
	closedir(d);
	return status;
}

/* TAP descriptions must not carry a bare '#' (it starts a directive). */
static void print_desc(const char *file, json_t *group, json_t *test)
{
	const char *parts[3] = { file,
		json_string_value(json_object_get(group, "description")),
		json_string_value(json_object_get(test, "description")) };
	int i;

	for (i = 0; i < 3; i++) {
		const char *p = parts[i] ? parts[i] : "?";

		if (i)
			fputs(": ", stdout);
		for (; *p; p++) {
			if (*p == '#')
				putchar('\\');
			if (*p != '\n')
				putchar(*p);
		}
	}
}

static amp_schema_set *fresh_set(json_t *schema, amp_error *err)
{
	amp_schema_set *set = amp_schema_set_new();
	const char *uri;
	json_t *doc;

	if (!set) {
		amp_error_set(err, AMP_EIO, "", "out of memory");
		return NULL;
	}
	if (amp_schema_set_add(set, meta, NULL, err) < 0)
		goto fail;
	json_object_foreach(remotes, uri, doc)
		if (amp_schema_set_add(set, doc, uri, err) < 0)
			goto fail;
	if (amp_schema_set_add(set, schema, NULL, err) < 0)
		goto fail;
	return set;
fail:
	amp_schema_set_free(set);
	return NULL;
}

/* Runs one file; `optional` results go out as comments. */
static void run_file(const char *path, const char *name, int optional,
		     struct tally *t)
{
	json_error_t jerr;
	json_t *groups = json_load_file(path, 0, &jerr), *group, *test;
	amp_schema_set *set;
	amp_errlist errs = { 0 };
	amp_error err;
	size_t i, j;
	int status, expect, ok;
	const char *reason;

	if (!groups) {
		if (optional)
			fputs("# ", stdout);
		printf("not ok %d - %s: cannot parse: %s\n", ++tap_number, name,
		       jerr.text);
		t->failed++;
		return;
	}
	json_array_foreach(groups, i, group) {
		json_t *schema = json_object_get(group, "schema");

		set = fresh_set(schema, &err);
		json_array_foreach(json_object_get(group, "tests"), j, test) {
			expect = json_is_true(json_object_get(test, "valid"));
			amp_errlist_truncate(&errs, 0);
			if (!set) {
				status = AMP_EIO;
				reason = err.message;
			} else {
				status = amp_schema_validate(set, schema, NULL,
					json_object_get(test, "data"), &errs);
				reason = errs.count ? errs.items[0].message : "";
			}
			if (status == AMP_EIO && set &&
			    strstr(reason, "cannot resolve $ref \"http")) {
				if (optional)
					fputs("# ", stdout);
				printf("ok %d - ", ++tap_number);
				print_desc(name, group, test);
				printf(" # skip needs network: %s\n", reason);
				t->skipped++;
				continue;
			}
			ok = status != AMP_EIO && (status == AMP_OK) == expect;
			if (optional)
				fputs("# ", stdout);
			printf("%sok %d - ", ok ? "" : "not ", ++tap_number);
			print_desc(name, group, test);
			putchar('\n');
			if (ok) {
				t->passed++;
				continue;
			}
			t->failed++;
			printf("#   expected %s, got %s%s%s\n",
			       expect ? "valid" : "invalid",
			       status == AMP_OK ? "valid" :
			       status == AMP_EIO ? "a schema error" : "invalid",
			       *reason ? ": " : "", reason);
		}
		amp_schema_set_free(set);
	}
	amp_errlist_free(&errs);
	json_decref(groups);
}

int main(void)
{
	const char *root = getenv("AMP_JSTS_DIR");
	char dir[4096], path[8192], meta_path[4096];
	struct tally main_t = { 0 }, opt_t = { 0 };
	char **names = NULL;
	json_error_t jerr;
	int status = 1, optional_offset;

	if (!root || !*root)
		root = "/usr/share/json-schema-test-suite";
	setvbuf(stdout, NULL, _IOLBF, 0);
	remotes = json_object();
	snprintf(dir, sizeof(dir), "%s/remotes", root);
	if (load_remotes(dir, "") < 0) {
		printf("not ok 1 - cannot load %s\n", dir);
		goto cleanup;
	}
	if (amp_data_path("json-schema/draft-07.schema.json", meta_path,
			  sizeof(meta_path)) < 0 ||
	    !(meta = json_load_file(meta_path, 0, &jerr))) {
		printf("not ok 1 - cannot load the draft-07 meta-schema\n");
		goto cleanup;
	}
	snprintf(dir, sizeof(dir), "%s/tests/draft7", root);
	if (!(names = list_json(dir))) {
		printf("not ok 1 - no tests in %s\n", dir);
		goto cleanup;
	}
	for (size_t i = 0; names[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		run_file(path, names[i], 0, &main_t);
	}
	printf("# draft7: %d passed, %d failed, %d skipped of %d\n",
	       main_t.passed, main_t.failed, main_t.skipped,
	       main_t.passed + main_t.failed + main_t.skipped);
	/* Optional tests are numbered on, but as comments they are not
	 * part of the TAP stream. */
	optional_offset = tap_number;
	snprintf(path, sizeof(path), "%s/optional/format/date-time.json", dir);
	run_file(path, "optional/format/date-time.json", 1, &opt_t);
	tap_number = optional_offset;
	printf("# optional/format/date-time (not mandatory): %d passed, "
	       "%d failed, %d skipped of %d\n", opt_t.passed, opt_t.failed,
	       opt_t.skipped, opt_t.passed + opt_t.failed + opt_t.skipped);
	printf("1..%d\n", tap_number);
	status = main_t.failed ? 1 : 0;
cleanup:
	free_names(names);
	json_decref(remotes);
	json_decref(meta);
	return status;
}
