/*
 * amp validate - checks AMP/1.0 messages (or any JSON, with --schema)
 * against a JSON Schema; see lib/record/validate.h for how inputs are read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/schema.h"
#include "base/util.h"
#include "base/errout.h"
#include "json/json.h"
#include "record/record.h"

static const char usage_text[] =
	"usage: amp validate [--json] [--schema <schema.json>] "
	"[--ref <schema.json>]... [<file>|-]...\n";

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "amp validate: error: ");
	fprintf(stderr, fmt, amp_term(arg));
	fputc('\n', stderr);
	fputs(usage_text, stderr);
	return 2;
}

/* The schemas beside `real` (the --schema file's real path), read when a
 * "$ref" first names one: under the directory of its file: URI and of its
 * "$id" (`id`, may be NULL), so "common.schema.json#/definitions/x" needs
 * no --ref. */
static int add_siblings(amp_schema_set *set, const char *real, const char *id,
			amp_error *err)
{
	char dir[4096], prefix[4096 + 16];
	const char *slash = strrchr(real, '/');
	int n = slash ? (int)(slash - real) : 0;

	snprintf(dir, sizeof(dir), "%.*s", n, real);
	snprintf(prefix, sizeof(prefix), "file://%s/", dir);
	if (amp_schema_set_add_lazy(set, prefix, dir) < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (id && (slash = strrchr(id, '/')) && strstr(id, "://")) {
		snprintf(prefix, sizeof(prefix), "%.*s", (int)(slash - id) + 1, id);
		if (amp_schema_set_add_lazy(set, prefix, dir) < 0)
			return amp_error_set(err, AMP_EIO, "", "out of memory");
	}
	return AMP_OK;
}

/* The set and the schema to check against: --schema's file, with --ref
 * documents, the other schemas of its directory and the meta-schema beside
 * it, else the AMP message schema. */
static int load_schema(const char *schema_file, char **refs, int nrefs,
		       amp_schema_set **set_out, json_t **schema_out,
		       amp_error *err)
{
	amp_schema_set *set = NULL;
	char *data = NULL, *real = NULL, *uri = NULL;
	size_t len;
	json_t *schema = NULL;
	amp_error perr;
	int i, status;

	if (!schema_file) {
		if ((status = amp_schema_set_load_amp(&set, NULL, err)) < 0)
			goto cleanup;
		if (!(*schema_out = amp_schema_set_lookup(set,
							  AMP_SCHEMA_MESSAGE))) {
			status = amp_error_set(err, AMP_EIO, "", "the schema "
					       "directory has no %s",
					       AMP_SCHEMA_MESSAGE);
			goto cleanup;
		}
		*set_out = set;
		set = NULL;
		goto cleanup;
	}
	if (!(set = amp_schema_set_new())) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if ((status = amp_schema_set_add_meta(set, err)) < 0)
		goto cleanup;
	for (i = 0; i < nrefs; i++)
		if ((status = amp_schema_set_add_file(set, refs[i], err)) < 0)
			goto cleanup;
	/* Read here rather than by amp_schema_set_add_file, because the
	 * document itself is the schema to validate against; named by its
	 * file: URI like the --ref files, so relative "$ref"s between them
	 * resolve. */
	if ((status = amp_read_file(schema_file, &data, &len, err)) < 0)
		goto cleanup;
	if (amp_json_parse(data, len, &schema, &perr) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "%s: %s", schema_file,
				       perr.message);
		goto cleanup;
	}
	if (strcmp(schema_file, "-") && (real = realpath(schema_file, NULL)) &&
	    !(uri = malloc(strlen(real) + 8))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if (uri) {
		sprintf(uri, "file://%s", real);
		if ((status = add_siblings(set, real, json_string_value(
				json_object_get(schema, "$id")), err)) < 0)
			goto cleanup;
	}
	if ((status = amp_schema_set_add(set, schema, uri, err)) < 0)
		goto cleanup;
	*schema_out = schema;
	*set_out = set;
	set = NULL;
cleanup:
	/* On success the set holds its own reference to the schema. */
	amp_schema_set_free(set);
	json_decref(schema);
	free(data);
	free(real);
	free(uri);
	return status;
}

static const char *display_name(const char *file)
{
	return strcmp(file, "-") ? file : "<stdin>";
}


static void print_human(const char *file, const amp_validate_results *res)
{
	char where[64];
	size_t i, j;

	for (i = 0; i < res->count; i++) {
		const struct amp_validate_result *r = &res->items[i];

		where[0] = '\0';
		if (r->line)
			snprintf(where, sizeof(where), ":%zu", r->line);
		if (r->status == AMP_OK) {
			printf("%s%s: ok\n", amp_term(display_name(file)), where);
			continue;
		}
		for (j = 0; j < r->errors.count; j++) {
			const amp_error *e = &r->errors.items[j];

			/* A parse error is about no value, and an error about
			 * the whole value has the empty pointer (RFC 6901:
			 * "/" would name a member called ""): no pointer. */
			if (!e->path[0] || !strncmp(e->message, "invalid JSON", 12))
				fprintf(stderr, "amp validate: error: %s%s: %s\n",
					amp_term(display_name(file)), where,
					amp_term(e->message));
			else
				fprintf(stderr, "amp validate: error: %s%s: %s: "
					"%s\n", amp_term(display_name(file)), where,
					amp_term(e->path), amp_term(e->message));
		}
	}
}

static json_t *errors_json(const amp_errlist *errors)
{
	json_t *list = json_array();
	size_t i;

	for (i = 0; list && i < errors->count; i++)
		json_array_append_new(list, json_pack("{s:s, s:s}", "path",
			amp_json_text(errors->items[i].path), "message",
			amp_json_text(errors->items[i].message)));
	return list;
}

static void add_json(json_t *results, const char *file,
		     const amp_validate_results *res)
{
	size_t i;

	for (i = 0; i < res->count; i++) {
		const struct amp_validate_result *r = &res->items[i];

		json_array_append_new(results, json_pack("{s:s, s:o, s:b, s:o}",
			"file", amp_json_text(display_name(file)),
			"line", r->line ? json_integer((json_int_t)r->line) :
					  json_null(),
			"valid", r->status == AMP_OK,
			"errors", errors_json(&r->errors)));
	}
}

int main(int argc, char **argv)
{
	const char *schema_file = NULL, *stdin_only[] = { "-" };
	const char **files;
	char **refs = NULL, *data = NULL;
	amp_schema_set *set = NULL;
	json_t *schema = NULL, *results = NULL, *doc;
	amp_validate_results res = { 0 };
	amp_error err;
	size_t len;
	int i, nfiles, nrefs = 0, as_json = 0, worst = AMP_OK, status, rc;

	if (!(refs = calloc((size_t)argc, sizeof(*refs))) ||
	    !(files = calloc((size_t)argc, sizeof(*files)))) {
		fprintf(stderr, "amp validate: error: out of memory\n");
		free(refs);
		return 4;
	}
	for (i = 1, nfiles = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			rc = 0;
			goto cleanup;
		} else if (!strcmp(a, "--json")) {
			as_json = 1;
		} else if (!strcmp(a, "--schema") || !strcmp(a, "--ref")) {
			if (i + 1 >= argc) {
				rc = usage_error("%s needs a file", a);
				goto cleanup;
			}
			if (a[2] == 's')
				schema_file = argv[++i];
			else
				refs[nrefs++] = argv[++i];
		} else if (!strcmp(a, "--")) {
			while (++i < argc)
				files[nfiles++] = argv[i];
		} else if (a[0] == '-' && a[1]) {
			rc = usage_error("unknown option %s", a);
			goto cleanup;
		} else {
			files[nfiles++] = a;
		}
	}
	/* The AMP schemas have all they need: a --ref alone would be
	 * silently ignored. */
	if (nrefs && !schema_file) {
		rc = usage_error("%s needs --schema", "--ref");
		goto cleanup;
	}
	if (!nfiles) {
		free(files);
		files = stdin_only;
		nfiles = 1;
	}
	if (load_schema(schema_file, refs, nrefs, &set, &schema, &err) < 0) {
		amp_print_error("validate", &err);
		rc = 4;
		goto cleanup;
	}
	if (as_json && !(results = json_array())) {
		fprintf(stderr, "amp validate: error: out of memory\n");
		rc = 4;
		goto cleanup;
	}
	for (i = 0; i < nfiles; i++) {
		free(data);
		data = NULL;
		if (amp_read_file(files[i], &data, &len, &err) < 0) {
			worst = AMP_EIO;
			if (as_json)
				json_array_append_new(results, json_pack(
					"{s:s, s:n, s:b, s:[{s:s, s:s}]}",
					"file", amp_json_text(display_name(files[i])), "line",
					"valid", 0, "errors", "path", "",
					"message", amp_json_text(err.message)));
			else
				amp_print_error("validate", &err);
			continue;
		}
		status = amp_validate_buffer(set, schema, data, len, &res);
		worst = amp_validate_worst(worst, status);
		if (as_json)
			add_json(results, files[i], &res);
		else
			print_human(files[i], &res);
		amp_validate_results_free(&res);
	}
	if (as_json) {
		doc = json_pack("{s:o, s:b, s:O}", "format", amp_errout_format("validate"),
				"valid", worst == AMP_OK,
				"results", results);
		if (!doc || amp_json_dumpf(doc, stdout, JSON_INDENT(2)) < 0) {
			fprintf(stderr, "amp validate: error: out of memory\n");
			worst = AMP_EIO;
		} else {
			putchar('\n');
		}
		json_decref(doc);
	}
	rc = amp_exit_code(worst);
cleanup:
	amp_validate_results_free(&res);
	amp_schema_set_free(set);
	json_decref(results);
	free(data);
	free(refs);
	if (files != stdin_only)
		free((void *)files);
	return rc;
}
