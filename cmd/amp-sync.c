/* amp sync: fetch the SSOT from a git remote, join it with the local one,
 * push the result (lib/sync/sync.c). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "sync/sync.h"
#include "base/util.h"

static const char usage[] = "usage: amp sync [<remote>] [--json] [--repo <dir>]\n";

static void print_text(const amp_sync_result *r)
{
	const char *remote = amp_term(r->remote);

	if (!r->fetched && !r->did_push) {
		printf("up to date with %s (%.7s)\n", remote, r->tip);
		return;
	}
	printf("fetched %lu record%s", r->fetched, r->fetched == 1 ? "" : "s");
	if (r->replayed)
		printf(", replayed %lu local record%s onto %s", r->replayed,
		       r->replayed == 1 ? "" : "s", remote);
	if (r->superseded)
		printf(" (%lu set aside as superseded: see amp status)", r->superseded);
	if (r->did_push)
		printf(", pushed %lu record%s to %s", r->pushed, r->pushed == 1 ? "" : "s",
		       remote);
	if (r->pending)
		printf("'s inbox, not joined yet (its join is under way: amp sync again shows them joined)");
	printf(" (%.7s)", r->tip);
	if (r->retries)
		printf(" after %u retr%s", r->retries, r->retries == 1 ? "y" : "ies");
	putchar('\n');
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL;
	char remote[256];
	amp_sync_result res;
	amp_store *st = NULL;
	amp_schema_set *set = NULL;
	amp_error err;
	int c, code, json_out = 0;
	json_t *out;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json_out = 1; break;
		case 'r': repo = optarg; break;
		case 'h': return amp_cli_help("sync", usage, opts);
		default:
			return amp_cli_usage_error("sync", usage, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("sync", argc, argv, "h", opts)))
		return code;
	if (argc - optind > 1)
		return amp_cli_usage_error("sync", usage, "unexpected argument '%s'", argv[optind + 1]);
	if ((code = amp_cli_open_store("sync", repo, &st)))
		return code;
	if (amp_sync_remote(st, optind < argc ? argv[optind] : NULL, remote, sizeof(remote),
			    &err) < 0) {
		code = err.status == AMP_EUSAGE ?
			amp_cli_usage_error("sync", usage, "%s", err.message) :
			amp_cli_fail("sync", &err);
		goto cleanup;
	}
	if ((code = amp_cli_load_schemas("sync", &set)))
		goto cleanup;
	if (amp_sync(st, set, remote, &res, &err) < 0) {
		code = amp_cli_fail("sync", &err);
		goto cleanup;
	}
	if (!json_out) {
		print_text(&res);
		goto cleanup;
	}
	out = json_pack("{s:s,s:I,s:I,s:I,s:I,s:b,s:s,s:i,s:b}", "remote",
			amp_json_text(res.remote), "fetched", (json_int_t)res.fetched,
			"replayed", (json_int_t)res.replayed, "superseded", (json_int_t)res.superseded,
			"pushed", (json_int_t)res.pushed, "push", res.did_push, "tip", res.tip,
			"retries", (int)res.retries, "errors_synced", res.errors_synced);
	/* inbox mode only: a ref-mode sync's shape stays as it was */
	if (out && res.inbox) {
		json_object_set_new(out, "pending", json_boolean(res.pending));
		json_object_set_new(out, "refetched", json_integer(res.refetched));
	}
	amp_cli_print_json(out, 0);
	json_decref(out);
cleanup:
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
