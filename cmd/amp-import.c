/* amp import: commit a log of AMP records (JSON lines) in one ref update. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "write/write.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp import <file>|- [--json] [--repo <dir>]\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *file;
	amp_import_result res;
	amp_errlist errors = { 0 };
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	FILE *in = NULL;
	size_t i;
	int c, json_out = 0, code = 0, status;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		case 'h': code = amp_cli_help("import", usage, opts); goto cleanup;
		default:
			code = amp_cli_bad_option("import", usage, opts, argv[optind - 1]);
			goto cleanup;
		}
	}
	if ((code = amp_cli_check_args("import", argc, argv, "h", opts)))
		goto cleanup;
	if (optind != argc - 1) {
		code = amp_cli_usage_error("import", usage, optind < argc ? "one input expected" : "missing input (a file, or - for stdin)");
		goto cleanup;
	}
	file = argv[optind];
	if ((code = amp_cli_load_schemas("import", &set)) ||
	    (code = amp_cli_open_ssot("import", repo, &st)))
		goto cleanup;
	if (!(in = strcmp(file, "-") ? fopen(file, "r") : stdin)) {
		fprintf(stderr, "amp import: error: cannot open %s: %s\n", amp_term(file), strerror(errno));
		code = AMP_EXIT_IO;
		goto cleanup;
	}
	status = amp_import(st, set, in, &res, &errors);
	if (status < 0) {
		/* "line N": the reader finds the record; the path is within it. */
		for (i = 0; i < errors.count; i++) {
			char where[AMP_PATH_MAX + 32];

			if (res.line)
				snprintf(where, sizeof(where), "line %zu%s%s", res.line,
					 errors.items[i].path[0] ? ": " : "", errors.items[i].path);
			else
				snprintf(where, sizeof(where), "%s", errors.items[i].path);
			fprintf(stderr, "amp import: error: %s%s%s\n", amp_term(where),
				where[0] ? ": " : "", amp_term(errors.items[i].message));
		}
		fprintf(stderr, "amp import: nothing was imported\n");
		code = amp_exit_code(status);
		goto cleanup;
	}
	if (json_out) {
		json_t *out = json_pack("{s:I,s:I,s:I,s:s}", "imported", (json_int_t)res.imported,
					"duplicates", (json_int_t)res.duplicates,
					"escalations", (json_int_t)res.escalations, "tip", res.tip);

		amp_cli_print_json(out, 0);
		json_decref(out);
	} else {
		printf("imported %zu records (%zu already there, %zu escalations added); %s is at %s\n",
		       res.imported, res.duplicates, res.escalations,
		       amp_term(amp_store_messages_ref(st)), res.tip);
	}
cleanup:
	if (in && in != stdin)
		fclose(in);
	amp_errlist_free(&errors);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
