/* amp gc: packs the loose objects amp's writes leave (lib/store/pack.h). */
#include <getopt.h>
#include <stdio.h>

#include "ui/ui.h"
#include "store/store.h"

static const char usage[] =
	"usage: amp gc [--auto] [--migrate] [--quiet] [--json] [--repo <dir>]\n";

static json_t *counts_json(const amp_pack_counts *c)
{
	return json_pack("{s:I,s:I,s:I,s:I}", "loose", (json_int_t)c->loose,
			 "loose_kib", (json_int_t)c->loose_kib, "packs", (json_int_t)c->packs,
			 "pack_kib", (json_int_t)c->pack_kib);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "auto", no_argument, NULL, 'a' },
		{ "migrate", no_argument, NULL, 'm' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL;
	amp_store *st = NULL;
	amp_pack_counts before, after;
	amp_error err;
	int c, auto_ = 0, migrate = 0, quiet = 0, json_out = 0, ran = 0, code = 0, moved = 0;
	git_oid migration;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "hq", opts, NULL)) != -1) {
		switch (c) {
		case 'a': auto_ = 1; break;
		case 'm': migrate = 1; break;
		case 'q': quiet = 1; break;
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		case 'h': return amp_cli_help("gc", usage, opts);
		default:
			return amp_cli_bad_option("gc", usage, opts, argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("gc", argc, argv, "hq", opts)))
		return code;
	if (optind < argc)
		return amp_cli_usage_error("gc", usage, "no operand expected: '%s'", argv[optind]);
	if ((code = amp_cli_open_store("gc", repo, &st)))
		return code;
	/* The layout first (store.h "Layout"), so that the pack holds it. */
	if (migrate) {
		int rc = amp_store_migrate(st, &migration, &err);

		if (rc < 0) {
			code = amp_cli_fail("gc", &err);
			goto cleanup;
		}
		moved = rc == AMP_OK;
		if (!quiet && !json_out)
			printf("amp gc: %s%s\n", moved ? "the SSOT moved to layout 2 in commit " :
			       "the SSOT is in layout 2 already", moved ? git_oid_tostr_s(&migration) : "");
	}
	if (amp_pack_run(st, auto_, &ran, &before, &after, &err) < 0) {
		code = amp_cli_fail("gc", &err);
		goto cleanup;
	}
	if (json_out) {
		json_t *out = json_pack("{s:b}", "packed", ran);

		if (migrate)
			json_object_set_new(out, "migrated",
					    moved ? json_string(git_oid_tostr_s(&migration)) : json_null());
		if (ran) {
			json_object_set_new(out, "before", counts_json(&before));
			json_object_set_new(out, "after", counts_json(&after));
		}
		amp_cli_print_json(out, 1);
		json_decref(out);
	} else if (!quiet) {
		if (ran)
			printf("amp gc: %lld loose objects (%lld KiB) and %lld packs (%lld KiB) -> %lld loose (%lld KiB) and %lld packs (%lld KiB)\n",
			       before.loose, before.loose_kib, before.packs, before.pack_kib,
			       after.loose, after.loose_kib, after.packs, after.pack_kib);
		else
			printf("amp gc: nothing to do\n");
	}
cleanup:
	amp_store_free(st);
	return code;
}
