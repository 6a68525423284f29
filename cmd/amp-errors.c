/* amp errors: list the messages the SSOT rejected, newest first. */
#include <getopt.h>
#include "base/gitobj.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/ui.h"
#include "base/human.h"
#include "base/util.h"
#include "json/json.h"

static const char usage[] =
	"usage: amp errors [--json] [--limit <0..1000000>] " AMP_HUMAN_USAGE " [--repo <dir>]\n"
	"   or: amp errors --raw <id> [--repo <dir>]\n";

/* Each rejection is a directory errors/<YYYY>/<MM>/<DD>/<id>/ holding raw
 * and reasons.json; one commit adds one.  Walking the commits newest first
 * lists them without reading the whole tree. */
static int list_errors(amp_store *st, long long limit, int json_out, amp_human *h)
{
	git_repository *repo = amp_store_repo(st);
	git_revwalk *walk = NULL;
	git_commit *commit = NULL, *parent = NULL;
	git_tree *tree = NULL, *parent_tree = NULL;
	git_diff *diff = NULL;
	git_oid oid;
	amp_error err;
	json_t *all = json_array();
	long long shown = 0;
	int code = 0;
	size_t i;

	if (git_revwalk_new(&walk, repo) < 0 ||
	    git_revwalk_push_ref(walk, amp_store_errors_ref(st)) < 0) {
		amp_error_git(&err, AMP_EIO, "cannot read %s (run 'amp init')",
			      amp_store_errors_ref(st));
		code = amp_cli_fail("errors", &err);
		goto cleanup;
	}
	while ((limit < 0 || shown < limit) && git_revwalk_next(&oid, walk) == 0) {
		if (amp_git_commit_lookup(&commit, repo, &oid) < 0 ||
		    amp_git_commit_tree(&tree, commit) < 0) {
			amp_error_git(&err, AMP_EIO, "cannot read commit");
			code = amp_cli_fail("errors", &err);
			goto cleanup;
		}
		if (git_commit_parentcount(commit) > 0 &&
		    (amp_git_commit_parent(&parent, commit, 0) < 0 ||
		     amp_git_commit_tree(&parent_tree, parent) < 0)) {
			amp_error_git(&err, AMP_EIO, "cannot read commit");
			code = amp_cli_fail("errors", &err);
			goto cleanup;
		}
		if (git_diff_tree_to_tree(&diff, repo, parent_tree, tree, NULL) < 0) {
			amp_error_git(&err, AMP_EIO, "cannot diff commit");
			code = amp_cli_fail("errors", &err);
			goto cleanup;
		}
		for (i = 0; i < git_diff_num_deltas(diff); i++) {
			const git_diff_delta *d = git_diff_get_delta(diff, i);
			const char *path = d->new_file.path;
			size_t len = strlen(path);
			git_blob *blob = NULL;
			json_t *doc;

			if (len < 13 || strcmp(path + len - 13, "/reasons.json"))
				continue;
			if (git_blob_lookup(&blob, repo, &d->new_file.id) < 0)
				continue;
			doc = amp_json_loadb(git_blob_rawcontent(blob),
					     (size_t)git_blob_rawsize(blob), 0, NULL, NULL);
			git_blob_free(blob);
			if (!doc)
				continue;
			/* The id is the rejection's directory name. */
			json_object_set_new(doc, "id", json_stringn(path, len - 13));
			json_array_append_new(all, doc);
			shown++;
		}
		git_diff_free(diff);
		git_tree_free(tree);
		git_tree_free(parent_tree);
		git_commit_free(parent);
		git_commit_free(commit);
		diff = NULL;
		tree = parent_tree = NULL;
		parent = commit = NULL;
	}
	if (json_out) {
		amp_cli_print_result("errors", "errors", all, 1);
	} else {
		json_t *e, *r;
		char t[AMP_HUMAN_TIME_BUFSZ];
		FILE *out;
		size_t j;

		amp_human_start(h, repo, 0, 1);
		out = amp_human_out(h);
		json_array_foreach(all, i, e) {
			const char *id = json_string_value(json_object_get(e, "msg_id"));

			/* Everything here may come from a rejected message.  On a
			 * terminal the line fits its width and the time is
			 * relative (human.h), as in amp status. */
			fprintf(out, "%-*s  %-10s exit %lld  %s  %s\n", amp_human_when_width(h),
			       amp_human_when(h, json_string_value(json_object_get(e, "time")), t),
			       amp_term(json_string_value(json_object_get(e, "command"))),
			       (long long)json_integer_value(json_object_get(e, "exit_code")),
			       amp_term(json_string_value(json_object_get(e, "id"))),
			       id ? amp_term(id) : "(no msg_id)");
			json_array_foreach(json_object_get(e, "errors"), j, r) {
				const char *p = json_string_value(json_object_get(r, "path"));

				fprintf(out, "    %s%s%s\n", p && *p ? amp_term(p) : "", p && *p ? ": " : "",
				       amp_term(json_string_value(json_object_get(r, "message"))));
			}
		}
		if (!json_array_size(all))
			fprintf(out, "no rejected messages\n");
		amp_human_out_end(h);
	}
cleanup:
	json_decref(all);
	git_diff_free(diff);
	git_tree_free(tree);
	git_tree_free(parent_tree);
	git_commit_free(parent);
	git_commit_free(commit);
	git_revwalk_free(walk);
	return code;
}

static int show_raw(amp_store *st, const char *id)
{
	git_tree *tip = NULL;
	git_tree_entry *entry = NULL;
	git_blob *blob = NULL;
	amp_error err;
	char path[1024];
	int code = 0;

	if (strstr(id, "..") || snprintf(path, sizeof(path), "%s/raw", id) >= (int)sizeof(path)) {
		amp_error_set(&err, AMP_EUSAGE, "", "not an error id: %s", id);
		return amp_cli_fail("errors", &err);
	}
	if (amp_store_tip(st, amp_store_errors_ref(st), NULL, &tip, &err) < 0) {
		code = amp_cli_fail("errors", &err);
		goto cleanup;
	}
	if (git_tree_entry_bypath(&entry, tip, path) < 0 ||
	    git_blob_lookup(&blob, amp_store_repo(st), git_tree_entry_id(entry)) < 0) {
		amp_error_set(&err, AMP_EUSAGE, "", "no rejected message %s ('amp errors' lists them)", id);
		code = amp_cli_fail("errors", &err);
		goto cleanup;
	}
	fwrite(git_blob_rawcontent(blob), 1, (size_t)git_blob_rawsize(blob), stdout);
cleanup:
	git_blob_free(blob);
	git_tree_entry_free(entry);
	git_tree_free(tip);
	return code;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "limit", required_argument, NULL, 'n' },
		{ "raw", required_argument, NULL, 'R' },
		{ "repo", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		AMP_HUMAN_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *repo = NULL, *raw = NULL;
	amp_store *st = NULL;
	long long limit = -1;
	amp_human h = { 0 };
	amp_error err;
	int c, json_out = 0, code;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "hn:", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json_out = 1; break;
		case 'n':
			if ((code = amp_cli_int("errors", "--limit", optarg, 0, 1000000, &limit)))
				return code;
			break;
		case 'R': raw = optarg; break;
		case 'r': repo = optarg; break;
		case 'h': return amp_cli_help("errors", usage, opts);
		default:
			if ((code = amp_human_option(&h, c, optarg, &err)) > 0)
				break;
			if (code < 0)
				return amp_cli_usage_error("errors", usage, "%s", err.message);
			return amp_cli_bad_option("errors", usage, opts, argv[optind - 1]);
		}
	}
	if ((code = amp_cli_check_args("errors", argc, argv, "hn:", opts)))
		return code;
	if (optind < argc)
		return amp_cli_usage_error("errors", usage, "unexpected argument '%s'", argv[optind]);
	if ((code = amp_cli_open_store("errors", repo, &st)))
		return code;
	code = raw ? show_raw(st, raw) : list_errors(st, limit, json_out, &h);
	amp_store_free(st);
	return code;
}
