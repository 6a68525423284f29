/*
 * recsig.c - records' own signatures (recsig.h): made by the writer,
 * verified by every reader that checks, cached by blob ids.
 */
#include "store_int.h"
#include "base/gitobj.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recsig.h"
#include "base/clock.h"
#include "record/record.h"

/* ---- verifying ------------------------------------------------------------ */

/* The instance a principal names ("alice" of "alice@executor"; "" for a
 * role's own) into buf. */
static void instance_of(const char *principal, char *buf, size_t bufsz)
{
	const char *at = strrchr(principal, '@');

	snprintf(buf, bufsz, "%.*s", at ? (int)(at - principal) : 0, principal);
}

/* The blob at `path` of `tree` into *out; 1, 0 when there is none,
 * AMP_EIO. */
static int blob_at(git_repository *repo, git_tree *tree, const char *path, git_blob **out,
		   amp_error *err)
{
	git_tree_entry *e = NULL;
	int rc = git_tree_entry_bypath(&e, tree, path);

	*out = NULL;
	if (rc == GIT_ENOTFOUND) {
		git_error_clear();
		return 0;
	}
	if (rc < 0 || git_tree_entry_type(e) != GIT_OBJECT_BLOB ||
	    git_blob_lookup(out, repo, git_tree_entry_id(e)) < 0) {
		git_tree_entry_free(e);
		if (rc == 0 && !git_error_last()) /* a tree where a file belongs */
			return 0;
		return amp_error_git(err, AMP_EIO, "cannot read %s", path);
	}
	git_tree_entry_free(e);
	return 1;
}

int amp_store_record_sig_verify(amp_store *st, git_tree *tree, const char *path,
				const char *role, const char *agent, int64_t when_s,
				int *present, char *principal, size_t psz, char *why,
				size_t whysz, amp_error *err)
{
	git_blob *rec = NULL, *sig = NULL;
	char sigpath[AMP_PATH_MAX + 8], key[128], inst[256], reason[600];
	int rc, status = 0;

	*present = 0;
	principal[0] = '\0';
	if (!when_s) {
		int64_t now_ms;

		if ((status = amp_clock_now_ms(&now_ms, err)) < 0)
			return status;
		when_s = now_ms / 1000;
	}
	if (amp_store_record_sig_path(path, sigpath, sizeof(sigpath)) < 0) {
		snprintf(why, whysz, "its path is too long for a signature beside it");
		return 0;
	}
	if ((rc = blob_at(st->repo, tree, sigpath, &sig, err)) <= 0) {
		if (rc == 0)
			snprintf(why, whysz, "it has no record signature (%s)", AMP_RECORD_SIG_SUFFIX);
		return rc;
	}
	*present = 1;
	if ((rc = blob_at(st->repo, tree, path, &rec, err)) <= 0) {
		if (rc == 0)
			snprintf(why, whysz, "there is no record beside its signature");
		status = rc;
		goto cleanup;
	}
	if (git_blob_rawsize(sig) > AMP_RECORD_SIG_MAX) {
		snprintf(why, whysz, "its signature is larger than %d bytes", AMP_RECORD_SIG_MAX);
		goto cleanup;
	}
	/* Without valid-after or valid-before in the file, when a key
	 * signed does not matter: one entry serves every time. */
	snprintf(key, sizeof(key), "%s ", git_oid_tostr_s(git_blob_id(sig)));
	snprintf(key + strlen(key), sizeof(key) - strlen(key), "%s %lld",
		 git_oid_tostr_s(git_blob_id(rec)),
		 amp_sigcache_timeless(&st->sigcache) ? 0LL : (long long)when_s);
	status = amp_signing_verify_kept(&st->signing, &st->sigcache, key, AMP_RECORD_SIG_NAMESPACE,
					 git_blob_rawcontent(sig), (size_t)git_blob_rawsize(sig),
					 git_blob_rawcontent(rec), (size_t)git_blob_rawsize(rec),
					 when_s, "its commit time", NULL, role, principal, psz,
					 reason, sizeof(reason), err);
	if (status == 0)
		snprintf(why, whysz, "its record signature: %s", reason);
	if (status != 1)
		goto cleanup;
	/* The role and the instance are the record's, checked on the cached
	 * principal too. */
	status = 0;
	instance_of(principal, inst, sizeof(inst));
	if (role && !amp_principal_grants(principal, role))
		snprintf(why, whysz, "it is from %s, but its record signature is by %s, who may not write as %s",
			 role, principal, role);
	else if (inst[0] && agent && *agent && strcmp(inst, agent))
		snprintf(why, whysz, "it is of instance %.64s, but its record signature is by %.200s",
			 agent, principal);
	else
		status = 1;
cleanup:
	git_blob_free(rec);
	git_blob_free(sig);
	return status;
}

int amp_store_record_sig_check_entry(amp_store *st, git_tree *tip, const char *task,
				     const amp_entry *e, char *why, size_t whysz, amp_error *err)
{
	char name[AMP_PATH_MAX], path[AMP_PATH_MAX + 130], principal[256], reason[700];
	const char *from = amp_json_str(e->doc, "from"), *ts = amp_json_str(e->doc, "timestamp");
	int64_t ms = 0;
	int present, rc;

	/* the record's place in the tip's layout (store.h "Layout") */
	if (!st->signing.require || !st->signing.allowed[0] || !from ||
	    amp_store_entry_name(e->seq, e->kind, e->id, name, sizeof(name)) < 0 ||
	    amp_store_record_path(amp_store_tree_layout(st->repo, tip), task, name, path,
				  sizeof(path)) < 0)
		return 1;
	if (!ts || amp_time_parse(ts, &ms) < 0 || ms < 1000)
		ms = 1000; /* no time of its own: the epoch, never now */
	rc = amp_store_record_sig_verify(st, tip, path, from, NULL, ms / 1000, &present, principal,
					 sizeof(principal), reason, sizeof(reason), err);
	if (rc == 0 && present) {
		snprintf(why, whysz, "%.300s: %.600s", path, reason);
		return 0;
	}
	return rc < 0 ? rc : 1;
}

int amp_store_check_commit_signed(amp_store *st, const git_commit *commit,
				  amp_signed_record *recs, size_t n, const char *agent,
				  char *why, size_t whysz, amp_error *err)
{
	git_tree *tree = NULL;
	char principal[256], reason[700];
	int64_t when = (int64_t)git_commit_committer(commit)->when.time;
	size_t i;
	int present, rc, status = 1;

	for (i = 0; i < n; i++)
		recs[i].proven = 0;
	if (amp_git_commit_tree(&tree, commit) < 0)
		return amp_error_git(err, AMP_EIO, "cannot read the tree of %s",
				     git_oid_tostr_s(git_commit_id(commit)));
	for (i = 0; i < n && status == 1; i++) {
		if (!recs[i].path)
			continue;
		rc = amp_store_record_sig_verify(st, tree, recs[i].path, recs[i].from, recs[i].agent,
						 when ? when : 1, &present, principal,
						 sizeof(principal), reason, sizeof(reason), err);
		if (rc < 0)
			status = rc;
		else if (rc == 1)
			recs[i].proven = 1;
		else if (present) {
			snprintf(why, whysz, "%.300s: %.600s", recs[i].path, reason);
			status = 0;
		}
	}
	git_tree_free(tree);
	if (status != 1)
		return status;
	return amp_signing_check_commit(st->repo, &st->signing, commit, recs, n, agent, why, whysz,
					err);
}

/* 1 when `path` is a record's: one of a task's, or of the registry. */
static int is_record_file(const char *path)
{
	const char *name = strrchr(path, '/');
	amp_entry_kind kind;
	const char *id;
	size_t len;

	if (!strncmp(path, AMP_REGISTRY_DIR "/", strlen(AMP_REGISTRY_DIR "/")))
		return 1;
	return !strncmp(path, "tasks/", 6) && name &&
	       amp_store_entry_parse(name + 1, NULL, &kind, &id, &len) == 0;
}

int amp_store_record_sig_make(amp_store *st, const char *path, const char *data, size_t len,
			      char *sigpath, size_t sigpathsz, char **sig, size_t *siglen,
			      amp_error *err)
{
	*sig = NULL;
	*siglen = 0;
	if (!st->signing.require || !st->signing.key[0] || !is_record_file(path))
		return AMP_NOOP;
	if (amp_store_record_sig_path(path, sigpath, sigpathsz) < 0)
		return amp_error_set(err, AMP_EIO, "", "%s: no room for its signature's name", path);
	return amp_sign_buffer(&st->signing, AMP_RECORD_SIG_NAMESPACE, data, len, sig, siglen,
			       err);
}
