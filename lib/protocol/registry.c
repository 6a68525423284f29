/*
 * registry.c - the agent registry (registry.h).
 */
#include "registry.h"
#include "base/gitobj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"
#include "base/clock.h"
#include "base/util.h"

#define PREFIX AMP_REGISTRY_DIR "/"
#define NAME_HEAD AMP_REGISTER_HEAD

int amp_registry_has_role(const json_t *roles, const char *role)
{
	const json_t *r;
	size_t i;

	json_array_foreach(roles, i, r)
		if (json_is_string(r) && !strcmp(json_string_value(r), role))
			return 1;
	return 0;
}

int amp_registry_check(amp_schema_set *set, const char *path, const git_oid *blob,
		       const json_t *doc, const char *commit_agent, amp_errlist *errors)
{
	char agent[AMP_AGENT_MAX + 1], hex[13], want[13];
	const char *type = amp_json_str(doc, "type"), *from = amp_json_str(doc, "from");
	const char *named = amp_json_str(doc, "agent"), *ts = amp_json_str(doc, "timestamp");
	int64_t ms, t;
	int status;

	if (amp_registry_parse_path(path, agent, sizeof(agent), &ms, hex) < 0)
		return amp_errlist_add(errors, AMP_ESCHEMA, "",
				       "not a register record's place (" AMP_REGISTRY_DIR
				       "/<agent>/register-<unix_ms>-<blob12>.json)");
	git_oid_tostr(want, sizeof(want), blob);
	if (strcmp(hex, want))
		return amp_errlist_add(errors, AMP_ESCHEMA, "",
				       "its name says blob %s, its content is blob %s", hex, want);
	if (!type || strcmp(type, "register"))
		return amp_errlist_add(errors, AMP_ESCHEMA, "/type",
				       "not a register record: only those live in " AMP_REGISTRY_DIR "/");
	if ((status = amp_control_validate(set, (json_t *)doc, errors)) < 0)
		return status;
	if (!named || strcmp(named, agent))
		return amp_errlist_add(errors, AMP_ESCHEMA, "/agent",
				       "names agent %s, not the agent of its directory (%s)",
				       amp_or_none(named), agent);
	if (!ts || amp_time_parse(ts, &t) < 0 || t != ms)
		return amp_errlist_add(errors, AMP_ESCHEMA, "/timestamp",
				       "is not the time its name carries (%lld ms)", (long long)ms);
	if (strcmp(from, "admin") && !amp_registry_has_role(json_object_get(doc, "roles"), from))
		return amp_errlist_add(errors, AMP_ERULE, "/from",
				       "an agent registers as one of the roles it declares, or the admin registers it: %s is neither",
				       from);
	if (commit_agent && strcmp(from, "admin") && strcmp(commit_agent, agent))
		return amp_errlist_add(errors, AMP_ERULE, "/agent",
				       "only %s itself (or the admin) registers %s, but the commit was written by %s",
				       agent, agent, *commit_agent ? commit_agent : "an unnamed instance");
	return AMP_OK;
}

/* ---- reading -------------------------------------------------------------- */

static int by_name_desc(const void *a, const void *b)
{
	const git_tree_entry *x = *(const git_tree_entry *const *)a;
	const git_tree_entry *y = *(const git_tree_entry *const *)b;
	char ax[AMP_AGENT_MAX + 1], hx[13], ay[AMP_AGENT_MAX + 1], hy[13];
	char px[AMP_PATH_MAX], py[AMP_PATH_MAX];
	int64_t mx = -1, my = -1;

	/* Newest first: by the time in the name, then the greater name. */
	snprintf(px, sizeof(px), PREFIX "a/%s", git_tree_entry_name(x));
	snprintf(py, sizeof(py), PREFIX "a/%s", git_tree_entry_name(y));
	if (amp_registry_parse_path(px, ax, sizeof(ax), &mx, hx) < 0)
		mx = -1;
	if (amp_registry_parse_path(py, ay, sizeof(ay), &my, hy) < 0)
		my = -1;
	if (mx != my)
		return mx > my ? -1 : 1;
	return -strcmp(git_tree_entry_name(x), git_tree_entry_name(y));
}

/* The sorted strings of array a, as a new array. */
static json_t *sorted(const json_t *a)
{
	json_t *out = json_array();
	size_t i, j, n = json_array_size(a);

	for (i = 0; out && i < n; i++) {
		const char *s = json_string_value(json_array_get(a, i));

		for (j = 0; j < json_array_size(out) &&
			    strcmp(json_string_value(json_array_get(out, j)), s) < 0; j++)
			;
		json_array_insert_new(out, j, json_string(s));
	}
	return out;
}

/* The declaration in force of the agent of directory `dir` (named `agent`)
 * into `out`, if any. */
static int read_agent(git_repository *repo, amp_schema_set *set, git_tree *dir,
		      const char *agent, json_t *out, amp_error *err)
{
	size_t n = git_tree_entrycount(dir), i;
	const git_tree_entry **v = calloc(n + 1, sizeof(*v));
	int status = AMP_OK;

	if (!v)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	for (i = 0; i < n; i++)
		v[i] = git_tree_entry_byindex(dir, i);
	qsort(v, n, sizeof(*v), by_name_desc);
	for (i = 0; i < n; i++) {
		char path[AMP_PATH_MAX];
		git_blob *b = NULL;
		json_t *doc = NULL;
		amp_errlist found = { 0 };
		amp_error perr;
		int ok;

		snprintf(path, sizeof(path), PREFIX "%s/%s", agent, git_tree_entry_name(v[i]));
		if (git_tree_entry_type(v[i]) != GIT_OBJECT_BLOB ||
		    git_blob_lookup(&b, repo, git_tree_entry_id(v[i])) < 0) {
			git_error_clear();
			continue; /* unreadable: fsck's to report */
		}
		ok = amp_bounds_parse_record(git_blob_rawcontent(b), (size_t)git_blob_rawsize(b),
					     &doc, &perr) == 0 && json_is_object(doc);
		git_blob_free(b);
		if (ok && amp_registry_check(set, path, git_tree_entry_id(v[i]), doc, NULL,
					     &found) == AMP_OK) {
			json_object_set_new(out, agent, json_pack("{s:o,s:o,s:O,s:O,s:s}",
				"roles", sorted(json_object_get(doc, "roles")),
				"capabilities", sorted(json_object_get(doc, "capabilities")),
				"from", json_object_get(doc, "from"),
				"declared", json_object_get(doc, "timestamp"), "record", path));
			i = n;
		}
		amp_errlist_free(&found);
		json_decref(doc);
	}
	free(v);
	return status;
}

int amp_registry_read(amp_store *st, amp_schema_set *set, git_tree *tip, json_t **out,
		      amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	git_tree_entry *e = NULL;
	git_tree *agents = NULL;
	size_t i, n;
	int status = AMP_OK;

	if (!(*out = json_object()))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (!tip || git_tree_entry_bypath(&e, tip, AMP_REGISTRY_DIR) < 0) {
		git_error_clear();
		return AMP_OK;
	}
	if (git_tree_entry_type(e) != GIT_OBJECT_TREE)
		goto cleanup;
	if (amp_git_tree_lookup(&agents, repo, git_tree_entry_id(e)) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read " AMP_REGISTRY_DIR "/");
		goto cleanup;
	}
	n = git_tree_entrycount(agents);
	for (i = 0; i < n && status == AMP_OK; i++) {
		const git_tree_entry *d = git_tree_entry_byindex(agents, i);
		const char *name = git_tree_entry_name(d);
		git_tree *dir = NULL;

		if (git_tree_entry_type(d) != GIT_OBJECT_TREE || !amp_agent_valid(name, strlen(name)))
			continue;
		if (amp_git_tree_lookup(&dir, repo, git_tree_entry_id(d)) < 0) {
			git_error_clear();
			continue; /* unreadable: fsck's to report */
		}
		status = read_agent(repo, set, dir, name, *out, err);
		git_tree_free(dir);
	}
cleanup:
	if (status < 0) {
		json_decref(*out);
		*out = NULL;
	}
	git_tree_free(agents);
	git_tree_entry_free(e);
	return status;
}

/* ---- joining ---------------------------------------------------------------- */

/* amp_registry_diff's visit of an entry that differs, `depth`
 * directories down (0: the root). */
static int diff_one(amp_tree_diff *d, const amp_tree_diff_entry *e)
{
	const git_tree_entry *be = e->b;
	char hex[GIT_OID_HEXSZ + 1];

	if (e->depth == 0 && strcmp(e->name, AMP_REGISTRY_DIR))
		return AMP_TREE_DIFF_SKIP;
	if (e->depth == 2) {
		if (git_tree_entry_type(be) == GIT_OBJECT_BLOB) {
			git_oid_tostr(hex, sizeof(hex), git_tree_entry_id(be));
			json_object_set_new(d->ctx, e->path, json_string(hex));
		}
		return AMP_TREE_DIFF_SKIP;
	}
	return git_tree_entry_type(be) == GIT_OBJECT_TREE ? AMP_TREE_DIFF_DESCEND : AMP_TREE_DIFF_SKIP;
}

int amp_registry_diff(git_repository *repo, git_tree *a, git_tree *b, json_t *added)
{
	amp_tree_diff d = { repo, 0, diff_one, NULL, added };

	return b ? amp_tree_diff_walk(&d, a, b, "", 0, 0) : 0;
}
