/*
 * seen.c - the last good tip of the messages ref (seen.h).
 */
#include "seen.h"
#include "base/gitobj.h"

#include <stdio.h>
#include <string.h>

int amp_seen_ref(amp_store *st, char *buf, size_t bufsz)
{
	const char *ref = amp_store_messages_ref(st);
	int n;

	/* amp.ref is under refs/amp/ (repo.c checks it). */
	n = snprintf(buf, bufsz, "refs/amp-seen/%s", ref + strlen("refs/amp/"));
	return n < 0 || (size_t)n >= bufsz ? -1 : 0;
}

int amp_seen_read(amp_store *st, git_oid *out, amp_error *err)
{
	char ref[AMP_PATH_MAX];
	int rc;

	if (amp_seen_ref(st, ref, sizeof(ref)) < 0)
		return amp_error_set(err, AMP_EIO, "", "the name of the seen ref is too long");
	rc = git_reference_name_to_id(out, amp_store_repo(st), ref);
	if (rc == GIT_ENOTFOUND) {
		git_error_clear();
		return 0;
	}
	if (rc < 0)
		return amp_error_git(err, AMP_EIO, "cannot read %s", ref);
	return 1;
}

int amp_seen_move(amp_store *st, const git_oid *from, const git_oid *to, amp_error *err)
{
	git_reference *r = NULL;
	char ref[AMP_PATH_MAX];
	int rc;

	if (amp_seen_ref(st, ref, sizeof(ref)) < 0)
		return amp_error_set(err, AMP_EIO, "", "the name of the seen ref is too long");
	rc = from ? git_reference_create_matching(&r, amp_store_repo(st), ref, to, 1, from,
						  "amp watch: intact")
		  : git_reference_create(&r, amp_store_repo(st), ref, to, 0, "amp watch: first tip");
	git_reference_free(r);
	/* Another watcher moved it first, or is moving it now (its lock):
	 * its move stands, and the next pass compares from there. */
	if (rc == GIT_EMODIFIED || rc == GIT_EEXISTS || rc == GIT_ELOCKED) {
		git_error_clear();
		return AMP_OK;
	}
	if (rc < 0)
		return amp_error_git(err, AMP_EIO, "cannot update %s", ref);
	return AMP_OK;
}

/* The identity of record `name` with content `blob`, "<kind><id> <blob>",
 * into buf, or of the record alone when blob is NULL; -1 when name is no
 * record's. */
static int identity(const char *name, const git_oid *blob, char *buf, size_t bufsz)
{
	amp_entry_kind kind;
	const char *id;
	size_t len;
	char hex[GIT_OID_HEXSZ + 1];

	if (amp_store_entry_parse(name, NULL, &kind, &id, &len) < 0)
		return -1;
	snprintf(buf, bufsz, "%c%.*s%s%s", (char)kind, (int)len, id, blob ? " " : "",
		 blob ? git_oid_tostr(hex, sizeof(hex), blob) : "");
	return 0;
}

/* The record files of task's directory in root (empty when there is
 * none), its path into dir; -1 when it cannot be read. */
static int task_files(git_repository *repo, git_tree *root, const char *task, char *dir,
		      size_t dirsz, amp_flat *out)
{
	git_tree_entry *e = NULL;
	git_tree *t = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = amp_store_task_lookup(root, task, &e, dir, dirsz)) == GIT_ENOTFOUND)
		return 0;
	if (rc < 0)
		return -1;
	rc = git_tree_entry_type(e) == GIT_OBJECT_TREE ?
	     amp_git_tree_lookup(&t, repo, git_tree_entry_id(e)) : 0;
	if (rc == 0 && t)
		rc = amp_store_task_files(repo, t, out);
	git_tree_free(t);
	git_tree_entry_free(e);
	return rc < 0 ? -1 : 0;
}

/* The records of one task directory of seen that tip lacks. */
static int task_lost(git_repository *repo, git_tree *seen, git_tree *tip, const char *task,
		     json_t *lost)
{
	amp_flat a = { 0 }, b = { 0 };
	json_t *have = json_object();
	char dir[128], tipdir[128], key[400], path[AMP_PATH_MAX];
	size_t i;
	int rc = -1;

	if (task_files(repo, seen, task, dir, sizeof(dir), &a) < 0 ||
	    task_files(repo, tip, task, tipdir, sizeof(tipdir), &b) < 0)
		goto cleanup;
	for (i = 0; i < b.count; i++) {
		const git_tree_entry *e = b.v[i].e;

		if (identity(git_tree_entry_name(e), git_tree_entry_id(e), key, sizeof(key)) == 0)
			json_object_set_new(have, key, json_true());
		if (identity(git_tree_entry_name(e), NULL, key, sizeof(key)) == 0)
			json_object_set_new(have, key, json_true());
	}
	for (i = 0; i < a.count; i++) {
		const git_tree_entry *e = a.v[i].e;
		const char *name = git_tree_entry_name(e);

		if (identity(name, git_tree_entry_id(e), key, sizeof(key)) < 0 ||
		    json_object_get(have, key))
			continue;
		identity(name, NULL, key, sizeof(key));
		snprintf(path, sizeof(path), "%s/%s%s%s", dir, a.v[i].sub, *a.v[i].sub ? "/" : "",
			 name);
		json_array_append_new(lost, json_pack("{s:s,s:s,s:s}", "task", task, "path", path,
						      "change", json_object_get(have, key) ?
								"changed" : "removed"));
	}
	rc = 0;
cleanup:
	git_error_clear();
	json_decref(have);
	amp_flat_free(&a);
	amp_flat_free(&b);
	return rc;
}

int amp_seen_lost(git_repository *repo, git_tree *seen, git_tree *tip, json_t *lost)
{
	json_t *touched = json_object(), *v;
	const char *task;
	int rc = 0;

	/* The records of seen that tip does not hold under the same name and
	 * content, in the task directories that differ: a record replayed
	 * under another sequence number is found there by its identity. */
	if (amp_store_diff_tasks(repo, tip, seen, touched, -1) < 0)
		rc = -1;
	json_object_foreach(touched, task, v)
		if (rc == 0 && task_lost(repo, seen, tip, task, lost) < 0)
			rc = -1;
	json_decref(touched);
	return rc;
}
