/*
 * dashboard_errors.c - errors.html (dashboard.h): the messages the SSOT
 * refused, newest first: when, who sent it (its "from" and the source amp
 * was given), the command, the task (linked when it has a page), the
 * message, the exit code, and each field with its reason.
 */
#include <limits.h>
#include "base/gitobj.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "record/record.h"
#include "dashboard_int.h"
#include "base/util.h"
#include "json/json.h"

#define str dash_str
/* The error page lists the newest rejections only, so that it stays small. */
#define ERRORS_SHOWN 500

struct walk {
	git_repository *repo;
	const char *dir;
	FILE *f;
	int left;
};

/* The task of a refusal, linked to its page when the site has one. */
static void put_task(const struct walk *w, const char *task)
{
	char name[AMP_DASHBOARD_NAME_MAX], path[PATH_MAX];
	struct stat sb;

	if (!task) {
		fputs("-", w->f);
		return;
	}
	amp_dashboard_page_name(task, name);
	snprintf(path, sizeof(path), "%s/tasks/%s", w->dir, name);
	if (amp_task_id_valid(task, strlen(task)) && stat(path, &sb) == 0) {
		fprintf(w->f, "<a href=\"tasks/%s\">", name);
		amp_html_put(w->f, task, 0);
		fputs("</a>", w->f);
	} else {
		amp_html_put(w->f, task, 0);
	}
}

static void put_refusal(const struct walk *w, const json_t *doc, const char *id)
{
	FILE *f = w->f;
	const json_t *x;
	size_t j;

	fputs("<tr><td>", f);
	amp_html_put(f, str(doc, "time"), 0);
	fputs("</td><td>", f);
	amp_html_put(f, str(doc, "from") ? str(doc, "from") : "-", 0);
	if (str(doc, "source") && *str(doc, "source")) {
		fputs(" <span class=\"meta\">(", f);
		amp_html_put(f, str(doc, "source"), 0);
		fputs(")</span>", f);
	}
	fputs("</td><td>", f);
	amp_html_put(f, str(doc, "command"), 0);
	fputs("</td><td>", f);
	put_task(w, str(doc, "task_id"));
	fputs("</td><td>", f);
	amp_html_put(f, str(doc, "msg_id") ? str(doc, "msg_id") : "(no msg_id)", 0);
	fprintf(f, "</td><td>%lld</td><td>", dash_ival(doc, "exit_code"));
	json_array_foreach(json_object_get(doc, "errors"), j, x) {
		amp_html_put(f, str(x, "path"), 0);
		fputs(str(x, "path") && *str(x, "path") ? ": " : "", f);
		amp_html_put(f, str(x, "message"), 0);
		fputs("<br>", f);
	}
	if (!doc)
		fputs("(reasons.json unreadable)", f);
	fputs("</td><td class=\"hide-s\">", f);
	amp_html_put(f, id, 0);
	fputs("</td></tr>\n", f);
}

/* Each rejection is a directory errors/<YYYY>/<MM>/<DD>/<id>/ (store.h):
 * walking the tree in reverse name order lists them newest first, and
 * stops after `left` of them. */
static int errors_walk(struct walk *w, git_tree *tree, int depth)
{
	size_t n = git_tree_entrycount(tree), i;
	int status = 0;

	for (i = n; i-- > 0 && w->left > 0;) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		git_tree *sub = NULL;

		if (git_tree_entry_type(e) != GIT_OBJECT_TREE ||
		    amp_git_tree_lookup(&sub, w->repo, git_tree_entry_id(e)) < 0)
			continue;
		if (depth < 3) { /* <YYYY>/<MM>/<DD>/ */
			status = errors_walk(w, sub, depth + 1);
		} else {
			const git_tree_entry *r = git_tree_entry_byname(sub, "reasons.json");
			git_blob *blob = NULL;
			json_t *doc = NULL;

			if (r && git_blob_lookup(&blob, w->repo, git_tree_entry_id(r)) == 0)
				doc = amp_json_loadb(git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob), 0, NULL, NULL);
			put_refusal(w, doc, git_tree_entry_name(e));
			json_decref(doc);
			git_blob_free(blob);
			w->left--;
		}
		git_tree_free(sub);
		if (status < 0)
			break;
	}
	return status;
}

int dash_render_errors(amp_store *st, const char *dir, FILE *f, amp_error *err)
{
	git_tree *tree = NULL, *sub = NULL;
	git_tree_entry *e = NULL;
	struct walk w = { amp_store_repo(st), dir, f, ERRORS_SHOWN };

	if (amp_store_tip(st, amp_store_errors_ref(st), NULL, &tree, err) < 0)
		return AMP_EIO;
	dash_page_head(f, "amp dashboard: error log", "");
	fprintf(f, "<p>Messages the SSOT refused, newest first (at most %d; <code>amp errors</code> "
		"lists all, <code>amp errors --raw &lt;id&gt;</code> shows one as sent).</p>\n"
		"<div class=\"wrap\"><table id=\"errors\"><tr><th scope=\"col\">time</th>"
		"<th scope=\"col\">author</th><th scope=\"col\">command</th><th scope=\"col\">task</th>"
		"<th scope=\"col\">msg_id</th><th scope=\"col\">exit</th><th scope=\"col\">field: reason</th>"
		"<th scope=\"col\" class=\"hide-s\">id</th></tr>\n", ERRORS_SHOWN);
	if (git_tree_entry_bypath(&e, tree, "errors") == 0 &&
	    amp_git_tree_lookup(&sub, amp_store_repo(st), git_tree_entry_id(e)) == 0)
		errors_walk(&w, sub, 0);
	git_error_clear();
	fputs("</table></div>\n", f);
	if (w.left == ERRORS_SHOWN)
		fputs("<p>No rejected messages.</p>\n", f);
	dash_page_tail(f, -1);
	git_tree_entry_free(e);
	git_tree_free(sub);
	git_tree_free(tree);
	return AMP_OK;
}
