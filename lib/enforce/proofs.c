/*
 * proofs.c - the proof of its author each record carries (proofs.h).
 */
#include <stdio.h>
#include "base/gitobj.h"
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "protocol/protocol.h"
#include "record/record.h"
#include "proofs.h"

/* The proof of one record `path` of commit c (tree ct), from `doc`. */
static int prove(amp_store *st, git_commit *c, git_tree *ct, const char *path, const json_t *doc,
		 json_t *out, amp_proof_counts *counts, amp_error *err)
{
	const char *from = amp_json_str(doc, "from");
	char principal[256], why[700], cwhy[700], hex[GIT_OID_HEXSZ + 1];
	int present, rc;
	json_t *o;

	git_oid_tostr(hex, sizeof(hex), git_commit_id(c));
	if (!from)
		from = "none";
	rc = amp_store_record_sig_verify(st, ct, path, from, doc ? amp_coord_record_instance(doc) : NULL,
					 (int64_t)git_commit_committer(c)->when.time, &present,
					 principal, sizeof(principal), why, sizeof(why), err);
	if (rc < 0)
		return rc;
	if (rc == 1) {
		counts->record++;
		o = json_pack("{s:s,s:s,s:s,s:s,s:s}", "commit", hex, "file", path, "from", from,
			      "proof", "record", "principal", principal);
	} else {
		rc = amp_signing_verify_commit(amp_store_repo(st), amp_store_signing(st),
					       git_commit_id(c), from, principal, sizeof(principal),
					       cwhy, sizeof(cwhy), err);
		if (rc < 0)
			return rc;
		if (rc == 1 && !present) {
			counts->commit++;
			o = json_pack("{s:s,s:s,s:s,s:s,s:s}", "commit", hex, "file", path, "from",
				      from, "proof", "commit", "principal", principal);
		} else {
			counts->none++;
			if (!present)
				snprintf(why + strlen(why), sizeof(why) - strlen(why),
					 "; its commit: %.600s", cwhy);
			o = json_pack("{s:s,s:s,s:s,s:s,s:s}", "commit", hex, "file", path, "from",
				      from, "proof", "none", "reason", why);
		}
	}
	if (!o || json_array_append_new(out, o) < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	return AMP_OK;
}

/* The proofs of the records commit `id` adds. */
static int prove_commit(amp_store *st, const git_oid *id, json_t *out, amp_proof_counts *counts,
			amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	git_commit *c = NULL, *parent = NULL;
	git_tree *ct = NULL, *pt = NULL;
	json_t *added = json_object(), *names, *v;
	const char *task, *name;
	char path[AMP_PATH_MAX * 2], sig[AMP_PATH_MAX * 2];
	int status = AMP_OK;

	if (!added)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (amp_git_commit_lookup(&c, repo, id) < 0 || amp_git_commit_tree(&ct, c) < 0 ||
	    (git_commit_parentcount(c) &&
	     (amp_git_commit_parent(&parent, c, 0) < 0 || amp_git_commit_tree(&pt, parent) < 0)) ||
	    amp_store_diff_tasks(repo, pt, ct, added, -1) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read commit %s", git_oid_tostr_s(id));
		goto cleanup;
	}
	json_object_foreach(added, task, names) {
		if (!json_is_object(names))
			continue;
		json_object_foreach(names, name, v) {
			git_tree_entry *e = NULL;
			git_blob *b = NULL;
			json_t *doc = NULL;
			amp_error perr;

			if (amp_store_sig_record_path(name, sig, sizeof(sig)) == 0)
				continue; /* proves its record */
			/* in either layout (store.h "Layout") */
			if (amp_store_record_lookup(ct, task, name, &e, path, sizeof(path)) < 0)
				continue; /* deleted: fsck's finding */
			if (git_blob_lookup(&b, repo, git_tree_entry_id(e)) == 0 &&
			    amp_bounds_parse_record(git_blob_rawcontent(b), (size_t)git_blob_rawsize(b),
						    &doc, &perr) < 0)
				doc = NULL;
			git_error_clear();
			status = prove(st, c, ct, path, doc, out, counts, err);
			json_decref(doc);
			git_blob_free(b);
			git_tree_entry_free(e);
			if (status < 0)
				goto cleanup;
		}
	}
cleanup:
	json_decref(added);
	git_tree_free(pt);
	git_tree_free(ct);
	git_commit_free(parent);
	git_commit_free(c);
	return status;
}

int amp_fsck_proofs(amp_store *st, json_t *out, amp_proof_counts *counts, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	git_oid tip, *ids = NULL;
	size_t n = 0, i;
	int status;

	memset(counts, 0, sizeof(*counts));
	if (!amp_store_signing(st)->allowed[0])
		return amp_error_set(err, AMP_EUSAGE, "--proofs",
				     "no git config amp.allowedSigners: no key to check a signature against");
	if (git_reference_name_to_id(&tip, repo, amp_store_messages_ref(st)) < 0)
		return amp_error_git(err, AMP_EIO, "cannot read %s", amp_store_messages_ref(st));
	if ((status = amp_first_parents_ids(repo, &tip, &ids, &n, err)) < 0)
		return status;
	for (i = n; i-- > 0 && status == AMP_OK;)
		status = prove_commit(st, &ids[i], out, counts, err);
	free(ids);
	return status;
}
