/*
 * verify.c - amp sync checks what it fetches (verify.h).
 */
#include <stdio.h>
#include "base/gitobj.h"
#include <string.h>

#include "base/util.h"
#include "enforce/enforce.h"
#include "protocol/protocol.h"
#include "store/store.h"
#include "write/write.h"
#include "verify.h"

/*
 * Escalates record `path` of commit tree `tree` for `reason`, once (its
 * cause is its path): permission_denied when `signature` (its commit's key
 * may not have written it), else unknown; and logs it when this
 * escalation is the first.
 * Returns 1 when an escalation was written.
 */
static int tell(amp_store *st, amp_schema_set *set, const char *remote, git_tree *tree,
		const char *path, int status, int signature, const char *reason)
{
	char task[128], description[1700];
	const char *name;
	git_tree_entry *te = NULL;
	git_blob *blob = NULL;
	amp_errlist reasons = { 0 }, errs = { 0 };
	amp_escalation e = { 0 };
	amp_send_result res = { 0 };
	amp_error ignored;
	int wrote = 0;

	if (amp_store_record_path_parse(0, path, task, sizeof(task), &name) < 0 ||
	    git_tree_entry_bypath(&te, tree, path) < 0 ||
	    git_blob_lookup(&blob, git_tree_owner(tree), git_tree_entry_id(te)) < 0) {
		git_error_clear();
		goto cleanup;
	}
	snprintf(description, sizeof(description),
		 AMP_RECORD_CAUSE "%s: %.900s. amp sync fetched it from %.200s, whose hub took it unchecked (no amp hook); it stays in the history. Fix or supersede the record; agents must not act on it (No Silent Failure).",
		 path, reason, remote);
	e.task_id = task;
	e.from = "system";
	e.escalation_type = signature ? "permission_denied" : "unknown";
	e.severity = signature ? "critical" : "warning";
	e.triggered_by = "system";
	e.description = description;
	e.affected_msgs = json_array();
	e.auto_suspended = -1;
	e.once = 1;
	if (!e.affected_msgs)
		goto cleanup;
	if (amp_send_escalation(st, set, &e, NULL, &res, &errs) != AMP_OK) {
		/* In strict mode a key that may not write as system cannot
		 * escalate: said here, and amp watch with the system's key
		 * escalates it. */
		fprintf(stderr, "amp sync: warning: %s: %s (fetched from %s; not escalated: %s)\n",
			amp_json_text(path), reason, remote,
			errs.count ? errs.items[0].message : "the escalation could not be written");
	} else if (!res.duplicate) {
		wrote = 1;
		fprintf(stderr, "amp sync: warning: %s: %s (fetched from %s: escalated %s)\n",
			amp_json_text(path), reason, remote, res.msg_id);
		amp_errlist_add(&reasons, status, path, "%s", reason);
		amp_store_log_rejection(st, "sync", remote, git_blob_rawcontent(blob),
					(size_t)git_blob_rawsize(blob), 0, status, &reasons, &ignored);
	}
cleanup:
	json_decref(e.affected_msgs);
	amp_errlist_free(&reasons);
	amp_errlist_free(&errs);
	git_blob_free(blob);
	git_tree_entry_free(te);
	return wrote;
}

/* The problems `found` of `commit`, each told for the record it names (a
 * problem of the commit: every record it adds).  Returns the escalations
 * written. */
static unsigned long tell_commit(amp_store *st, amp_schema_set *set, const char *remote,
				 git_commit *commit, const amp_errlist *found)
{
	git_repository *repo = amp_store_repo(st);
	git_commit *parent = NULL;
	git_tree *tree = NULL, *ptree = NULL;
	json_t *added = NULL, *names, *v;
	const char *task, *name;
	char path[AMP_PATH_MAX * 2], sig[AMP_PATH_MAX * 2];
	unsigned long n = 0;
	size_t i;

	if (amp_git_commit_tree(&tree, commit) < 0) {
		git_error_clear();
		return 0;
	}
	for (i = 0; i < found->count; i++) {
		const amp_error *p = &found->items[i];

		if (p->status == AMP_EIO)
			continue;
		if (p->path[0]) {
			/* a signature's problem is its record's */
			const char *rec = amp_store_sig_record_path(p->path, sig, sizeof(sig)) == 0 ?
						  sig : p->path;

			n += (unsigned long)tell(st, set, remote, tree, rec, p->status, 0,
						 p->message);
			continue;
		}
		if (!added) {
			if (!(added = json_object()) ||
			    (git_commit_parentcount(commit) &&
			     (amp_git_commit_parent(&parent, commit, 0) < 0 ||
			      amp_git_commit_tree(&ptree, parent) < 0)) ||
			    amp_store_diff_tasks(repo, ptree, tree, added, -1) < 0) {
				git_error_clear();
				break;
			}
		}
		json_object_foreach(added, task, names) {
			if (!json_is_object(names))
				continue;
			json_object_foreach(names, name, v) {
				/* a record's signature is told with its record */
				if (amp_store_record_path(amp_store_tree_layout(repo, tree), task, name,
							  path, sizeof(path)) < 0 ||
				    amp_store_sig_record_path(path, sig, sizeof(sig)) == 0)
					continue;
				/* a rule of the commit itself: its signature */
				n += (unsigned long)tell(st, set, remote, tree, path, p->status,
							 p->status == AMP_ERULE, p->message);
			}
		}
	}
	json_decref(added);
	git_tree_free(ptree);
	git_commit_free(parent);
	git_tree_free(tree);
	return n;
}

int amp_sync_checked_init(amp_store *st, const char *mirror, const git_oid *local,
			  amp_sync_checked *c, amp_error *err)
{
	int rc;

	memset(c, 0, sizeof(*c));
	if (local) {
		git_oid_cpy(&c->local, local);
		c->have_local = 1;
	}
	rc = git_reference_name_to_id(&c->tip, amp_store_repo(st), mirror);
	if (rc < 0 && rc != GIT_ENOTFOUND)
		return amp_error_git(err, AMP_EIO, "cannot read %s", mirror);
	git_error_clear();
	c->have_tip = rc == 0;
	return amp_store_config_bool(st, "amp.syncVerify", 1, &c->on, err);
}

unsigned long amp_sync_check_new(amp_store *st, amp_schema_set *set, const char *remote,
				 amp_sync_checked *c, const git_oid *to)
{
	git_repository *repo = amp_store_repo(st);
	const char *ref = amp_store_messages_ref(st);
	git_revwalk *walk = NULL;
	amp_trust trust;
	git_oid id;
	unsigned long n = 0;

	if (c->have_tip && git_oid_equal(&c->tip, to))
		return 0;
	if (!c->on)
		goto done;
	amp_trust_init(&trust, to);
	if (git_revwalk_new(&walk, repo) < 0 ||
	    git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE) < 0 ||
	    git_revwalk_push(walk, to) < 0 || (c->have_tip && git_revwalk_hide(walk, &c->tip) < 0) ||
	    (c->have_local && git_revwalk_hide(walk, &c->local) < 0)) {
		git_error_clear();
		goto walked;
	}
	while (git_revwalk_next(&id, walk) == 0) {
		git_commit *commit = NULL;
		amp_errlist found = { 0 };

		if (amp_git_commit_lookup(&commit, repo, &id) < 0) {
			git_error_clear();
			continue;
		}
		if (amp_hook_check_commit(st, set, ref, commit, &trust, &found) == AMP_ERULE)
			n += tell_commit(st, set, remote, commit, &found);
		amp_errlist_free(&found);
		git_commit_free(commit);
	}
walked:
	git_revwalk_free(walk);
	amp_trust_free(&trust);
done:
	git_oid_cpy(&c->tip, to);
	c->have_tip = 1;
	return n;
}
