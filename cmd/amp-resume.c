/* amp resume: the admin lifts a suspension or a Hallucination Lock. */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "clock.h"
#include "control.h"

static const char usage[] =
	"usage: amp resume <task_id> --reason <text> [--from admin] [--json] [--repo <dir>]\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "reason", required_argument, NULL, 'R' },
		{ "from", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *from = NULL, *reason = NULL;
	amp_resume_result res;
	amp_errlist errors = { 0 };
	amp_schema_set *set = NULL;
	amp_store *st = NULL;
	amp_error err;
	int64_t now;
	int c, json_out = 0, code = 0, status;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'R': reason = optarg; break;
		case 'f': from = optarg; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default:
			return amp_cli_usage_error("resume", usage, "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("resume", argc, argv, "h", opts)))
		return code;
	if (optind != argc - 1)
		return amp_cli_usage_error("resume", usage, "one task id expected");
	if (!reason || !*reason)
		return amp_cli_usage_error("resume", usage, "--reason is required");
	if ((code = amp_cli_load_schemas("resume", &set)) ||
	    (code = amp_cli_check_id("resume", set, "<task_id>", argv[optind], "task_id")) ||
	    (code = amp_cli_open_ssot("resume", repo, &st)) ||
	    (code = amp_cli_role("resume", st, set, from, 1, &from)))
		goto cleanup;
	if ((status = amp_clock_now_ms(&now, &err)) < 0) {
		code = amp_cli_fail("resume", &err);
		goto cleanup;
	}
	status = amp_control_resume(st, set, argv[optind], from, reason, now, &res, &errors);
	if (status < 0) {
		code = amp_cli_print_errors("resume", &errors, status);
		goto cleanup;
	}
	if (json_out) {
		json_t *out = json_pack("{s:s,s:s,s:s,s:s,s:s}", "task_id", argv[optind],
					"control", res.name, "lifts", res.lifts,
					"was", res.was, "state", res.now);

		amp_cli_print_json(out, 0);
		json_decref(out);
	} else {
		printf("resumed %s (%s -> %s): lifted %s\n", argv[optind], res.was, res.now,
		       res.lifts);
	}
cleanup:
	amp_errlist_free(&errors);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
