/* amp fsck: verifies the whole history of the SSOT (lib/enforce/fsck.h). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ui/ui.h"
#include "enforce/enforce.h"
#include "base/util.h"

static const char usage[] = "usage: amp fsck [--json] [--proofs] [--repo <dir>]\n";

/* One finding a line: "amp fsck: <commit>: <file>: <reason>", the kind
 * before the reason unless it is "corrupt". */
static void print_finding(const json_t *f)
{
	const char *file = json_string_value(json_object_get(f, "file"));
	const char *kind = json_string_value(json_object_get(f, "kind"));

	printf("amp fsck: %.7s: ", json_string_value(json_object_get(f, "commit")));
	if (file && *file)
		printf("%s: ", amp_term(file));
	if (strcmp(kind, "corrupt"))
		printf("%s: ", kind);
	printf("%s\n", amp_term(json_string_value(json_object_get(f, "reason"))));
}

/* One record's proof a line: "amp fsck: <commit>: <file>: <proof>". */
static void print_proof(const json_t *p)
{
	const char *proof = json_string_value(json_object_get(p, "proof"));

	printf("amp fsck: %.7s: %s: ", json_string_value(json_object_get(p, "commit")),
	       amp_term(json_string_value(json_object_get(p, "file"))));
	if (!strcmp(proof, "record"))
		printf("record signature by %s\n",
		       amp_term(json_string_value(json_object_get(p, "principal"))));
	else if (!strcmp(proof, "commit"))
		printf("commit signature only, by %s\n",
		       amp_term(json_string_value(json_object_get(p, "principal"))));
	else
		printf("no proof of its author: %s\n",
		       amp_term(json_string_value(json_object_get(p, "reason"))));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "proofs", no_argument, NULL, 'p' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL;
	amp_store *st = NULL;
	amp_schema_set *set = NULL;
	amp_fsck_stats stats;
	amp_error err;
	json_t *findings = json_array(), *f, *proofs = NULL;
	amp_proof_counts counts;
	size_t i;
	int c, json_out = 0, code = 0, want_proofs = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json_out = 1; break;
		case 'p': want_proofs = 1; break;
		case 'r': repo = optarg; break;
		case 'h': code = amp_cli_help("fsck", usage, opts); goto cleanup;
		default:
			code = amp_cli_bad_option("fsck", usage, opts, argv[optind - 1]);
			goto cleanup;
		}
	}
	if ((code = amp_cli_check_args("fsck", argc, argv, "h", opts)))
		goto cleanup;
	if (optind < argc) {
		code = amp_cli_usage_error("fsck", usage, "no operand expected: '%s'", argv[optind]);
		goto cleanup;
	}
	if ((code = amp_cli_open_store("fsck", repo, &st)) ||
	    (code = amp_cli_load_schemas("fsck", &set)))
		goto cleanup;
	if (amp_fsck_run(st, set, findings, &stats, &err) < 0) {
		code = amp_cli_fail("fsck", &err);
		goto cleanup;
	}
	if (want_proofs && (!(proofs = json_array()) ||
			    amp_fsck_proofs(st, proofs, &counts, &err) < 0)) {
		code = proofs ? amp_cli_fail("fsck", &err) : AMP_EXIT_IO;
		goto cleanup;
	}
	if (json_out && proofs) {
		json_t *o = json_pack("{s:O,s:O,s:{s:I,s:I,s:I}}", "findings", findings, "proofs",
				      proofs, "counts", "record", (json_int_t)counts.record,
				      "commit", (json_int_t)counts.commit, "none",
				      (json_int_t)counts.none);

		amp_cli_print_result("fsck", NULL, o, 1);
		json_decref(o);
	} else if (json_out) {
		amp_cli_print_result("fsck", "findings", findings, 1);
	} else {
		json_array_foreach(proofs, i, f)
			print_proof(f);
		if (proofs)
			printf("amp fsck: proofs of %zu records: %zu record signature, %zu commit signature only, %zu none\n",
			       counts.record + counts.commit + counts.none, counts.record,
			       counts.commit, counts.none);
		json_array_foreach(findings, i, f)
			print_finding(f);
		if (json_array_size(findings))
			printf("amp fsck: %zu commits checked: %zu corrupt, %zu rule, %zu unreadable\n",
			       stats.commits, stats.corrupt, stats.rule, stats.unreadable);
		else
			printf("amp fsck: %zu commits checked: clean\n", stats.commits);
	}
	/* Unreadable history is an I/O failure; anything else found, a
	 * broken rule of the SSOT. */
	code = stats.unreadable ? AMP_EXIT_IO : json_array_size(findings) ? AMP_EXIT_REFUSED : 0;
cleanup:
	json_decref(proofs);
	json_decref(findings);
	amp_schema_set_free(set);
	amp_store_free(st);
	return code;
}
