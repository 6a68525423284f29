/* amp agents: the registry of named agent instances seen in the SSOT. */
#include <getopt.h>
#include <stdio.h>

#include "ui/ui.h"
#include "base/clock.h"
#include "base/human.h"
#include "protocol/protocol.h"
#include "read/read.h"
#include "record/record.h"
#include "base/util.h"

static const char usage[] = "usage: amp agents [--json] " AMP_HUMAN_TIME_USAGE " [--repo <dir>]\n";

static amp_human h;
/* Where the human lines go: fitted to the terminal (human.h). */
#define OUT amp_human_out(&h)

/* "  declared executor,reviewer; capabilities c,go", when it registered. */
static void print_declared(const json_t *d)
{
	const json_t *v;
	size_t j;

	if (!json_is_object(d))
		return;
	fprintf(OUT, "  declared");
	json_array_foreach(json_object_get(d, "roles"), j, v)
		fprintf(OUT, "%s%s", j ? "," : " ", amp_term(json_string_value(v)));
	json_array_foreach(json_object_get(d, "capabilities"), j, v)
		fprintf(OUT, "%s%s", j ? "," : "; capabilities ", amp_term(json_string_value(v)));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		AMP_HUMAN_TIME_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL;
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	json_t *out = NULL, *a, *v;
	char t[AMP_HUMAN_TIME_BUFSZ];
	amp_error err;
	int64_t now;
	size_t i, j;
	int c, json_out = 0, code = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		case 'h': return amp_cli_help("agents", usage, opts);
		default:
			if ((code = amp_human_option(&h, c, optarg, &err)) > 0)
				break;
			if (code < 0)
				return amp_cli_usage_error("agents", usage, "%s", err.message);
			return amp_cli_bad_option("agents", usage, opts, argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("agents", argc, argv, "h", opts)))
		return code;
	if (optind != argc)
		return amp_cli_usage_error("agents", usage, "no operand expected");
	if ((code = amp_cli_load_schemas("agents", &set)) ||
	    (code = amp_cli_open_store("agents", repo, &st)))
		goto cleanup;
	if (amp_clock_now_ms(&now, &err) < 0 || amp_agents_report(st, set, now, &out, &err) < 0) {
		code = amp_cli_fail("agents", &err);
		goto cleanup;
	}
	if (json_out) {
		amp_cli_print_result("agents", "agents", out, 0);
		goto cleanup;
	}
	/* On a terminal each line fits its width and the last write is
	 * relative; a pipe or --wide gets the absolute time (human.h), the
	 * one time format of amp status and amp inbox. */
	amp_human_start(&h, amp_store_repo(st), 0, 0);
	json_array_foreach(out, i, a) {
		fprintf(OUT, "%s  roles", amp_term(amp_json_str(a, "agent")));
		json_array_foreach(json_object_get(a, "roles"), j, v)
			fprintf(OUT, "%s%s", j ? "," : " ", amp_term(json_string_value(v)));
		if (!json_array_size(json_object_get(a, "roles")))
			fprintf(OUT, " -"); /* declared only: it never wrote */
		fprintf(OUT, "  last write %s", amp_json_str(a, "last_write") ?
			amp_human_when(&h, amp_json_str(a, "last_write"), t) : "(none)");
		if (amp_json_str(a, "last_task"))
			fprintf(OUT, " on %s", amp_term(amp_json_str(a, "last_task")));
		json_array_foreach(json_object_get(a, "holds"), j, v)
			fprintf(OUT, "%s%s", j ? ", " : "  holds ", amp_term(amp_json_str(v, "task_id")));
		print_declared(json_object_get(a, "declared"));
		fputc('\n', OUT);
	}
	amp_human_out_end(&h);
cleanup:
	json_decref(out);
	amp_schema_set_free(set);
	code = amp_cli_report_skipped("agents", st, code);
	amp_store_free(st);
	return code;
}
