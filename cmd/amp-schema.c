/* amp schema: the schemas amp validates against, for a reader or an agent. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "base/util.h"

static const char usage[] =
	"usage: amp schema [--json]\n"
	"   or: amp schema <name> [--raw]\n"
	"names: task_dispatch task_result review_request review_verdict escalation (payloads),\n"
	"       message ack control common\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "raw", no_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	amp_schema_set *set = NULL;
	amp_error err;
	json_t *out = NULL, *item;
	char uri[AMP_PATH_MAX];
	int c, raw = 0, json_out = 0, code = 0, status;
	size_t i;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r': raw = 1; break;
		case 'j': json_out = 1; break;
		case 'h': return amp_cli_help("schema", usage, opts);
		default:
			return amp_cli_bad_option("schema", usage, opts, argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("schema", argc, argv, "h", opts)))
		return code;
	if (argc - optind > 1 || (optind == argc && raw) || (optind < argc && json_out))
		return amp_cli_usage_error("schema", usage, "one schema name, --raw with a name, --json without");
	if ((code = amp_cli_load_schemas("schema", &set)))
		goto cleanup;
	if (optind == argc) {
		if ((status = amp_template_schema_names(set, &out, &err)) < 0) {
			code = amp_cli_fail("schema", &err);
			goto cleanup;
		}
		if (json_out)
			amp_cli_print_result("schema", "schemas", out, 0);
		else
			json_array_foreach(out, i, item)
				printf("%-16s %s\n", amp_term(json_string_value(json_object_get(item, "name"))),
				       amp_term(json_string_value(json_object_get(item, "title"))));
		goto cleanup;
	}
	if (amp_template_schema_uri(argv[optind], uri, sizeof(uri)) < 0 ||
	    !amp_schema_set_lookup(set, uri)) {
		code = amp_cli_usage_error("schema", usage, "no schema '%s' (amp schema lists them)", argv[optind]);
		goto cleanup;
	}
	if (raw)
		out = json_incref(amp_schema_set_lookup(set, uri));
	else if ((status = amp_template_resolve(set, uri, &out, &err)) < 0) {
		code = amp_cli_fail("schema", &err);
		goto cleanup;
	}
	amp_cli_print_document(out, 1);
cleanup:
	json_decref(out);
	amp_schema_set_free(set);
	return code;
}
