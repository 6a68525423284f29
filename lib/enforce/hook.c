/*
 * hook.c - the check a pre-receive or pre-push hook runs on the updates of
 * amp refs (hook.h).
 */
#include <errno.h>
#include "base/gitobj.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/record.h"
#include "write/write.h"
#include "protocol/protocol.h"
#include "base/gitpath.h"
#include "hook.h"
#include "read/read.h"
#include "store/store.h"
#include "base/util.h"

int amp_hook_use_quarantine(amp_store *st, amp_error *err)
{
	const char *dir = getenv("GIT_OBJECT_DIRECTORY");
	git_odb *odb = NULL;
	int status = AMP_OK;

	if (!dir || !*dir)
		dir = getenv("GIT_QUARANTINE_PATH");
	if (!dir || !*dir)
		return AMP_OK;
	if (git_repository_odb(&odb, amp_store_repo(st)) < 0 ||
	    git_odb_add_disk_alternate(odb, dir) < 0)
		status = amp_error_git(err, AMP_EIO, "cannot read the pushed objects in %s", dir);
	git_odb_free(odb);
	return status;
}

/* The most records one pushed commit may add in strict mode. */
#define AMP_HOOK_MAX_RECORDS 1000

/* What one check of one ref needs. */
struct check {
	amp_store *st;
	amp_schema_set *set;
	const char *ref;
	int messages;       /* the ref is the messages ref */
	char commit[12];    /* short id of the commit being checked */
	git_tree *tree;     /* its tree */
	amp_errlist *errors;
	size_t base;        /* errors->count when the check began */
	json_t *froms;      /* each record the commit adds: {"from", "task",
			     * "agent" (record_instance), "path"} */
	int bare;           /* amp_hook_check_commit: the path is the file */
	int signatures;     /* verify each commit's signature (sign.h) */
	int inbox;          /* a clone's inbox (amp.syncPush inbox): its form
			     * only, the rules when the hub joins it */
	char agent[AMP_AGENT_MAX + 1]; /* the commit's Amp-Agent, "" none */
	int errlog;         /* the ref is the errors ref */
	amp_trust *trust;   /* where trust starts (sign.h); NULL: nowhere */
};

/* Records a problem of the commit being checked: AMP_ESCHEMA for its form,
 * AMP_ERULE for a rule (amp_hook_check_commit tells them apart; the hook
 * refuses both). */
static int refuse(struct check *c, int status, const char *file, const char *ptr,
		  const char *fmt, const char *a, const char *b)
{
	char where[AMP_PATH_MAX], why[AMP_MSG_MAX];
	int n;

	snprintf(why, sizeof(why), fmt, a ? a : "", b ? b : "");
	if (c->bare)
		return amp_errlist_add(c->errors, status, file ? file : "", "%s%s%s",
				       ptr ? ptr : "", ptr && *ptr ? ": " : "", why);
	n = snprintf(where, sizeof(where), "commit %s%s%.300s%s%.150s", c->commit,
		     file ? ": " : "", file ? file : "", ptr ? ": " : "", ptr ? ptr : "");
	if (n < 0)
		where[0] = '\0';
	amp_errlist_add(c->errors, status, where, "%s", why);
	return AMP_ERULE;
}

/* The form of a record: what no history can make right or wrong (its
 * schema, its place; for a record `in_force`, a dispatch to a protected
 * branch too).  AMP_OK, AMP_ESCHEMA (errors appended) or AMP_EIO. */
static int check_form(amp_store *st, amp_schema_set *set, const amp_task_log *log,
		      const amp_entry *e, int in_force, amp_errlist *errors)
{
	const char *task = amp_json_str(e->doc, "task_id");
	int status;

	if (e->kind == AMP_ENTRY_CTL) {
		if ((status = amp_control_validate(set, e->doc, errors)) < 0)
			return status;
		if (!task || strcmp(task, log->task_id))
			return amp_errlist_add(errors, AMP_ESCHEMA, "/task_id",
					       "names task %s, not the task of its directory",
					       task ? task : "none");
		return AMP_OK;
	}
	if (e->kind == AMP_ENTRY_MSG) {
		const char *id = amp_json_str(e->doc, "msg_id");

		if (!id || strcmp(id, e->id) || !task || strcmp(task, log->task_id))
			return amp_errlist_add(errors, AMP_ESCHEMA, "/msg_id",
					       "its msg_id and task_id (%s, %s) do not match its place",
					       id ? id : "none", task ? task : "none");
		/* AMP/1.0 §01 Branch Validation: branch != "main" && branch != "master".
		 * A dispatch set aside is no dispatch: nobody works on it, and a
		 * branch only this hub protects (amp.protectedBranches) must
		 * not keep a clone's every sync out (issue 30). */
		if (in_force && amp_rules_is_protected_branch(st, e->doc))
			return amp_errlist_add(errors, AMP_ESCHEMA, "/payload/branch",
					       "must not be \"%s\": a protected branch (AMP/1.0 Branch Validation)",
					       amp_json_str(json_object_get(e->doc, "payload"), "branch"));
	}
	status = amp_message_validate(set, e->doc, e->kind == AMP_ENTRY_ACK, errors);
	if (status == AMP_OK && e->kind == AMP_ENTRY_ACK && !amp_task_entry_in_place(log, e))
		status = amp_errlist_add(errors, AMP_ESCHEMA, "/ack_for",
					 "its ack_for/task_id do not match its place");
	return status;
}

int amp_hook_check_record(amp_store *st, amp_schema_set *set, git_tree *tree,
			  const amp_task_log *log, size_t i, const char *agent,
			  amp_errlist *errors)
{
	const amp_entry *e = &log->entries[i];
	amp_task_log before = *log;
	const char *type = amp_json_str(e->doc, "type"), *denied, *named;
	char why[600];
	int status;

	before.count = i;
	if (agent && !*agent)
		agent = NULL;
	if ((status = check_form(st, set, log, e, 1, errors)) < 0)
		return status;
	/* Who wrote it is the commit's word (its Amp-Agent trailer, bound to
	 * the signing key in strict mode), never the record's alone. */
	if (e->kind == AMP_ENTRY_CTL && (named = amp_coord_record_instance(e->doc)) && agent &&
	    strcmp(named, agent))
		return amp_errlist_add(errors, AMP_ERULE, "/agent",
				       "names instance %s, but %s wrote it (the commit's Amp-Agent)",
				       named, agent);
	/* A held task takes the holder's executor writes only (coord.h). */
	if ((e->kind == AMP_ENTRY_ACK ||
	     (e->kind == AMP_ENTRY_CTL && type && !strcmp(type, "heartbeat"))) &&
	    amp_coord_check_write(&before, amp_json_str(e->doc, "from"), agent,
				  amp_record_time(e->doc), why, sizeof(why)) < 0)
		return amp_errlist_add(errors, AMP_ERULE, "/from", "%s", why);
	if (e->kind == AMP_ENTRY_ACK) {
		if ((status = amp_rules_check_ack(log, i, errors)) < 0)
			return status;
		if (amp_rules_unapproved_dispatch(&before, NULL, NULL, e->id))
			return amp_errlist_add(errors, AMP_ERULE, "/ack_for",
					       "%s awaits the admin's approval (git config amp.approvalRequired)",
					       e->id);
		return AMP_OK;
	}
	if (e->kind == AMP_ENTRY_CTL) {
		if (!amp_control_allowed(&before, type, amp_json_str(e->doc, "from"), why, sizeof(why)))
			return amp_errlist_add(errors, AMP_ERULE, "/type", "%s", why);
		/* A lease is in force only where it stands (coord.h): a claim
		 * inside another instance's lease is refused here, and amp
		 * sync's join sets it aside. */
		if (type && (!strcmp(type, "claim") || !strcmp(type, "release")) &&
		    amp_coord_check_record(&before, e->doc, why, sizeof(why)) < 0)
			return amp_errlist_add(errors, AMP_ERULE, "/type", "%s", why);
		/* Who started a round, who ACKed (round.h). */
		if (amp_round_check_record(&before, e->doc, why, sizeof(why)) < 0 ||
		    amp_question_check_record(&before, e->doc, why, sizeof(why)) < 0)
			return amp_errlist_add(errors, AMP_ERULE, "/type", "%s", why);
		/* A dependency cycle is refused however it arrives. */
		if (type && !strcmp(type, "depend") && amp_json_str(e->doc, "on")) {
			amp_error derr;

			status = amp_coord_check_depend(st, tree, log->task_id, amp_json_str(e->doc, "on"),
							why, sizeof(why), &derr);
			if (status == AMP_ERULE)
				return amp_errlist_add(errors, AMP_ERULE, "/on", "%s", why);
			if (status < 0)
				return amp_errlist_add(errors, status, "", "%s", derr.message);
		}
		return AMP_OK;
	}
	if (amp_task_log_id_taken(&before, e->id))
		return amp_errlist_add(errors, AMP_ESCHEMA, "/msg_id",
				       "%s is the msg_id of an older message", e->id);
	denied = type && !strcmp(type, "task_result") ?
		 amp_rules_unapproved_dispatch(&before, NULL, e->doc, NULL) : NULL;
	if (denied)
		return amp_errlist_add(errors, AMP_ERULE, "/context_ref",
				       "%s awaits the admin's approval: no result before it", denied);
	return amp_rules_check_replayed(st, tree, &before, NULL, e->doc, agent, errors);
}

/* Notes a record the commit adds, for check_signature. */
static void note_record(struct check *c, const char *task, const char *path, const json_t *doc)
{
	json_array_append_new(c->froms, json_pack("{s:s,s:s,s:s?,s:s}",
		"from", amp_or_none(amp_json_str(doc, "from")), "task", task,
		"agent", doc ? amp_coord_record_instance(doc) : NULL, "path", path));
}

/* Moves the problems found from `found` to the check's list, each placed
 * at its commit and file. */
static void place(struct check *c, amp_errlist *found, const char *file)
{
	size_t k;

	for (k = 0; k < found->count; k++)
		if (found->items[k].status == AMP_EIO)
			amp_errlist_add(c->errors, AMP_EIO, "", "commit %s: %s", c->commit,
					found->items[k].message);
		else
			refuse(c, found->items[k].status, file, found->items[k].path, "%s%s",
			       found->items[k].message, NULL);
	amp_errlist_free(found);
}

/* 1 unless e is a round, acked or address record (round.h) whose record
 * is not one the commit adds: an instance is named in the commit that
 * writes what it names.  The record named goes to *named. */
static int names_own_commit(const amp_task_log *log, const amp_entry *e, json_t *added,
			    const char **named)
{
	amp_entry_kind kind;
	const amp_entry *m;
	char name[300];

	if (e->kind != AMP_ENTRY_CTL || !(*named = amp_round_names(e->doc, &kind)))
		return 1;
	m = amp_task_log_find(log, kind, *named);
	return m && amp_store_entry_name(m->seq, m->kind, m->id, name, sizeof(name)) == 0 &&
	       json_object_get(added, name);
}

/* Checks the records `added` (names, as keys) of one task of the commit. */
static int check_task(struct check *c, const char *task, json_t *added)
{
	amp_task_log log;
	amp_error err;
	char dir[128], file[AMP_PATH_MAX], name[300];
	int status, last_old = -1;
	size_t i;

	if (amp_store_task_dir(AMP_LAYOUT_FLAT, task, dir, sizeof(dir)) < 0)
		return refuse(c, AMP_ESCHEMA, task, NULL, "not a task directory%s%s", NULL, NULL), AMP_OK;
	if ((status = amp_store_read_task(c->st, c->tree, task, &log, &err)) < 0)
		return amp_errlist_add(c->errors, status, "", "commit %s: %s", c->commit,
				       err.message);
	for (i = 0; i < log.nbad; i++) {
		if (!json_object_get(added, log.bad[i].name))
			continue;
		amp_task_log_record_path(&log, log.bad[i].name, file, sizeof(file));
		refuse(c, AMP_ESCHEMA, file, NULL, "%s%s", log.bad[i].reason, NULL);
	}
	for (i = 0; i < log.count; i++) {
		const amp_entry *e = &log.entries[i];

		if (amp_store_entry_name(e->seq, e->kind, e->id, name, sizeof(name)) < 0)
			continue;
		if (!json_object_get(added, name)) {
			if (e->seq > last_old)
				last_old = e->seq;
			continue;
		}
		amp_task_log_record_path(&log, name, file, sizeof(file));
		note_record(c, task, file, e->doc);
		/* Records are numbered in the order they enter the task. */
		if (e->seq <= last_old) {
			char seq[16];

			snprintf(seq, sizeof(seq), "%06d", last_old);
			refuse(c, AMP_ESCHEMA, file, NULL, "its sequence number is not above the task's older record %s%s",
			       seq, NULL);
			continue;
		}
		{
			amp_errlist found = { 0 };
			const char *record, *named;

			int rc = amp_hook_check_record(c->st, c->set, c->tree, &log, i, c->agent,
						       &found);

			if (rc == AMP_EIO)
				status = AMP_EIO;
			/* An inbox's records are checked against the rules
			 * when the hub joins them, in their place there. */
			if (rc == AMP_ERULE && c->inbox)
				amp_errlist_free(&found);
			/* A marker sets aside a record of its own commit only:
			 * never one already in force. */
			if (amp_entry_is_marker(e, &record) && !json_object_get(added, record))
				amp_errlist_add(&found, AMP_ESCHEMA, "/record",
						"%s is not the next record of this commit: a superseded marker sets aside only the record committed right after it",
						record);
			if (!names_own_commit(&log, e, added, &named))
				amp_errlist_add(&found, AMP_ESCHEMA, "/type",
						"names %s, which this commit does not write: a record naming the instance of a message or an ACK comes in the same commit",
						named);
			place(c, &found, file);
		}
		if (status < 0)
			break;
	}
	/* A superseded record is kept, not in force: its form is checked,
	 * no rule (it lost its place to one in force). */
	for (i = 0; status == AMP_OK && i < log.nsuperseded; i++) {
		const amp_entry *e = &log.superseded[i];
		amp_errlist found = { 0 };

		if (amp_store_entry_name(e->seq, e->kind, e->id, name, sizeof(name)) < 0 ||
		    !json_object_get(added, name))
			continue;
		amp_task_log_record_path(&log, name, file, sizeof(file));
		note_record(c, task, file, e->doc);
		if (check_form(c->st, c->set, &log, e, 0, &found) == AMP_EIO)
			status = AMP_EIO;
		place(c, &found, file);
	}
	amp_task_log_free(&log);
	return status;
}

static const char *delta_verb(git_delta_t status)
{
	switch (status) {
	case GIT_DELTA_DELETED: return "deletes";
	case GIT_DELTA_TYPECHANGE: return "changes the type of";
	case GIT_DELTA_RENAMED: return "renames";
	default: return "modifies";
	}
}

/* Strict mode (sign.h, recsig.h): each record's signature, when it has
 * one, names a key allowed to write its role; the commit is signed by a
 * key allowed to write as the role it was written as, and adds records
 * of that role only -- or, when every record proves its own author, by
 * any key of the file. */
static int check_signature(struct check *c, git_commit *commit)
{
	amp_signed_record recs[AMP_HOOK_MAX_RECORDS];
	char why[600];
	size_t i, n = json_array_size(c->froms);
	amp_error err;
	int ok;

	if (n > AMP_HOOK_MAX_RECORDS) {
		refuse(c, AMP_ERULE, NULL, NULL, "it adds more than %s records: too many to check%s",
		       "1000", NULL);
		return AMP_OK;
	}
	for (i = 0; i < n; i++) {
		const json_t *r = json_array_get(c->froms, i);

		recs[i].from = amp_json_str(r, "from");
		recs[i].task = amp_json_str(r, "task");
		recs[i].agent = amp_json_str(r, "agent");
		recs[i].path = amp_json_str(r, "path");
	}
	/* Each record's own signature first (recsig.h): a record it proves
	 * needs no proof from the commit. */
	ok = amp_store_check_commit_signed(c->st, commit, recs, c->messages ? n : 0, c->agent, why,
					   sizeof(why), &err);
	/* History the admin's marker vouches for (sign.h): asked only of a
	 * commit that fails, so a signed history never walks for it. */
	if (ok == 0 && c->trust)
		ok = amp_trust_vouches(c->trust, amp_store_repo(c->st), amp_store_signing(c->st),
				       git_commit_id(commit), &err);
	if (ok < 0)
		return amp_errlist_add(c->errors, ok, "", "commit %s: %s", c->commit, err.message);
	if (!ok)
		refuse(c, AMP_ERULE, NULL, NULL, "%s (git config amp.requireSigned)%s", why, NULL);
	return AMP_OK;
}

/* One file a commit changes. */
struct change {
	git_delta_t status;
	git_filemode_t mode; /* the new file's (an added one) */
	const char *bad_name; /* a name git refuses (gitpath.h): why, else NULL */
	char path[AMP_PATH_MAX];
};

struct changes {
	struct change *items;
	size_t count, alloc;
};

static int change_add(struct changes *ch, git_delta_t status, git_filemode_t mode,
		      const char *prefix, const char *name)
{
	if (ch->count == ch->alloc) {
		size_t n = ch->alloc ? ch->alloc * 2 : 16;
		struct change *items = realloc(ch->items, n * sizeof(*items));

		if (!items)
			return -1;
		ch->items = items;
		ch->alloc = n;
	}
	ch->items[ch->count].status = status;
	ch->items[ch->count].mode = mode;
	ch->items[ch->count].bad_name = NULL;
	snprintf(ch->items[ch->count].path, AMP_PATH_MAX, "%s%s%s", prefix, *prefix ? "/" : "", name);
	ch->count++;
	return 0;
}

/*
 * The files that differ between trees a and b (either NULL: empty), as
 * git_diff_tree_to_tree lists them without rename detection, but skipping
 * the subtrees both hold with the same id (amp_tree_diff_walk): the cost
 * of a commit follows its change, not the size of the SSOT (libgit2's
 * diff reads every entry of both trees, which makes a walk of the whole
 * history quadratic).  This is its visit of one entry that differs.
 */
static int tree_change(amp_tree_diff *d, const amp_tree_diff_entry *e)
{
	struct changes *ch = d->ctx;
	const git_tree_entry *ae = e->a, *be = e->b;
	int atree = ae && git_tree_entry_type(ae) == GIT_OBJECT_TREE;
	int btree = be && git_tree_entry_type(be) == GIT_OBJECT_TREE;
	const char *why;

	if (!be) /* only a has it */
		return atree ? AMP_TREE_DIFF_DESCEND | AMP_TREE_DIFF_GONE :
		       change_add(ch, GIT_DELTA_DELETED, git_tree_entry_filemode(ae), e->prefix, e->name);
	/* git fsck checks every entry of a tree, an empty tree's too:
	 * so does the hook, for each entry the commit adds or changes. */
	if ((why = amp_gitpath_component_problem(e->name, strlen(e->name)))) {
		if (change_add(ch, GIT_DELTA_ADDED, git_tree_entry_filemode(be), e->prefix, e->name) < 0)
			return -1;
		ch->items[ch->count - 1].bad_name = why;
		return AMP_TREE_DIFF_SKIP;
	}
	if (btree || atree) {
		if ((ae && !atree &&
		     change_add(ch, GIT_DELTA_DELETED, git_tree_entry_filemode(ae), e->prefix, e->name) < 0) ||
		    (!btree &&
		     change_add(ch, GIT_DELTA_ADDED, git_tree_entry_filemode(be), e->prefix, e->name) < 0))
			return -1;
		return AMP_TREE_DIFF_DESCEND | AMP_TREE_DIFF_GONE;
	}
	return change_add(ch, ae ? GIT_DELTA_MODIFIED : GIT_DELTA_ADDED,
			  git_tree_entry_filemode(be), e->prefix, e->name);
}

/* The files that differ between trees a and b (tree_change); 0, or -1
 * when a tree cannot be read or memory runs out. */
static int tree_changes(git_repository *repo, git_tree *a, git_tree *b, struct changes *ch)
{
	amp_tree_diff d = { repo, 1, tree_change, NULL, ch };

	return amp_tree_diff_walk(&d, a, b, "", 0, AMP_TREE_DIFF_GONE);
}

/* A file added on the errors ref: one of a refusal's two files in its
 * place, errors/<YYYY>/<MM>/<DD>/<unix_ms>-<blob id>[-<n>][~<n>]/raw or
 * reasons.json (amp_store_log_rejection, amp sync's union), of at most
 * AMP_LIMIT_MESSAGE_BYTES: the log keeps no more of a refused input than
 * the messages ref keeps of a record, and every clone fetches it. */
static void check_error_file(struct check *c, const char *path)
{
	const char *p = path + 7, *slash = strrchr(path, '/');
	git_odb *odb = NULL;
	git_tree_entry *e = NULL;
	git_object_t type;
	size_t len = 0;
	char size[32], limit[32];

	if (strncmp(path, "errors/", 7) || strlen(path) < 7 + 11 || !slash ||
	    strspn(p, "0123456789") != 4 || p[4] != '/' || strspn(p + 5, "0123456789") != 2 ||
	    p[7] != '/' || strspn(p + 8, "0123456789") != 2 || p[10] != '/' ||
	    slash <= p + 11 || slash - (p + 11) > 64 ||
	    strspn(p + 11, "0123456789abcdef-~") != (size_t)(slash - (p + 11)) ||
	    (strcmp(slash + 1, "raw") && strcmp(slash + 1, "reasons.json"))) {
		refuse(c, AMP_ESCHEMA, amp_json_text(path), NULL,
		       "not a file of the error log (errors/<YYYY>/<MM>/<DD>/<unix_ms>-<blob>/raw or reasons.json)%s%s",
		       NULL, NULL);
		return;
	}
	if (git_tree_entry_bypath(&e, c->tree, path) < 0 ||
	    git_repository_odb(&odb, amp_store_repo(c->st)) < 0 ||
	    git_odb_read_header(&len, &type, odb, git_tree_entry_id(e)) < 0) {
		amp_error err;

		amp_error_git(&err, AMP_EIO, "cannot read %s", path);
		amp_errlist_add(c->errors, AMP_EIO, "", "commit %s: %s", c->commit, err.message);
	} else if (len > AMP_LIMIT_MESSAGE_BYTES) {
		snprintf(size, sizeof(size), "%zu", len);
		snprintf(limit, sizeof(limit), "%d", AMP_LIMIT_MESSAGE_BYTES);
		refuse(c, AMP_ESCHEMA, path, NULL,
		       "%s bytes: an error log file is at most %s bytes, as a record is", size, limit);
	}
	git_odb_free(odb);
	git_tree_entry_free(e);
}

/* A register record (registry.h) the commit adds at `path`: its form and
 * its role, written by the instance itself (the commit's Amp-Agent) unless
 * the admin writes it; in strict mode, signed by that instance's key
 * ("<agent>@<role>"). */
static int check_register(struct check *c, git_commit *commit, const char *path)
{
	git_tree_entry *e = NULL;
	git_blob *b = NULL;
	json_t *doc = NULL;
	amp_errlist found = { 0 };
	amp_error perr;
	char agent[AMP_AGENT_MAX + 1], principal[256], why[400];
	const char *from;
	int status = AMP_OK, ok;

	if (git_tree_entry_bypath(&e, c->tree, path) < 0 ||
	    git_blob_lookup(&b, amp_store_repo(c->st), git_tree_entry_id(e)) < 0) {
		amp_error_git(&perr, AMP_EIO, "cannot read %s", path);
		status = amp_errlist_add(c->errors, AMP_EIO, "", "commit %s: %s", c->commit, perr.message);
		goto cleanup;
	}
	if (amp_bounds_parse_record(git_blob_rawcontent(b), (size_t)git_blob_rawsize(b), &doc,
				    &perr) < 0 || !json_is_object(doc)) {
		refuse(c, AMP_ESCHEMA, path, NULL, "not a JSON object: %s%s", perr.message, NULL);
		goto cleanup;
	}
	amp_commit_agent(commit, agent, sizeof(agent));
	json_array_append_new(c->froms, json_pack("{s:s,s:s,s:n,s:s}", "from",
		amp_or_none(amp_json_str(doc, "from")), "task", "", "agent", "path", path));
	if (amp_registry_check(c->set, path, git_tree_entry_id(e), doc, agent, &found) == AMP_OK &&
	    c->signatures && strcmp((from = amp_json_str(doc, "from")), "admin")) {
		int present;

		/* The key names the instance: "<agent>@<role>", nothing else;
		 * the record's own signature says it (recsig.h), else the
		 * commit's. */
		ok = amp_store_record_sig_verify(c->st, c->tree, path, from, agent,
						 (int64_t)git_commit_committer(commit)->when.time,
						 &present, principal, sizeof(principal), why,
						 sizeof(why), &perr);
		if (ok == 0 && !present)
			ok = amp_signing_verify_commit(amp_store_repo(c->st), amp_store_signing(c->st),
						       git_commit_id(commit), from, principal,
						       sizeof(principal), why, sizeof(why), &perr);
		if (ok < 0)
			status = amp_errlist_add(c->errors, ok, "", "commit %s: %s", c->commit, perr.message);
		else if (ok && (strncmp(principal, agent, strlen(agent)) || principal[strlen(agent)] != '@'))
			amp_errlist_add(&found, AMP_ERULE, "/agent",
					"%s registers itself with its own key: the signing key's principal is %s, not %s@%s",
					agent, principal, agent, from);
	}
	place(c, &found, path);
cleanup:
	amp_errlist_free(&found);
	json_decref(doc);
	git_blob_free(b);
	git_tree_entry_free(e);
	return status;
}

/*
 * A commit that moves the SSOT from layout 1 to 2 (store.h "Layout")
 * deletes every record's old path: it is accepted when its tree is the
 * one `amp migrate` makes of its parent's, the same records in their new
 * places and nothing else (1), refused otherwise (1, the reason in
 * c->errors).  0 when the commit is no migration; -1 when a tree cannot be
 * read.
 */
static int amp_hook_check_migration(struct check *c, git_tree *old_tree)
{
	git_repository *repo = amp_store_repo(c->st);
	git_oid want;
	amp_error err;
	int from = amp_store_tree_layout(repo, old_tree), to = amp_store_tree_layout(repo, c->tree);

	if (from == AMP_LAYOUT_UNREADABLE || to == AMP_LAYOUT_UNREADABLE) {
		const git_error *ge = git_error_last();

		amp_errlist_add(c->errors, AMP_EIO, AMP_LAYOUT_FILE, "commit %s: cannot read it: %s",
				c->commit, ge && ge->message ? ge->message : "unknown error");
		return -1;
	}
	if (from == to || !old_tree) /* a root commit: amp init's (below) */
		return 0;
	if (from != AMP_LAYOUT_FLAT || to != AMP_LAYOUT_FANNED) {
		refuse(c, AMP_ESCHEMA, AMP_LAYOUT_FILE, NULL,
		       "changes the SSOT's layout other than from 1 to 2 (amp migrate)%s%s", NULL, NULL);
		return 1;
	}
	if (amp_store_migrate_tree(c->st, old_tree, &want, &err) < 0) {
		amp_errlist_add(c->errors, AMP_EIO, "", "commit %s: %s", c->commit, err.message);
		return -1;
	}
	if (!git_oid_equal(&want, git_tree_id(c->tree)))
		refuse(c, AMP_ESCHEMA, AMP_LAYOUT_FILE, NULL,
		       "moves the SSOT to layout 2 with a tree other than amp migrate's (%s): records added, lost or changed on the way%s",
		       git_oid_tostr_s(&want), NULL);
	return 1;
}

/* The record signatures a commit adds (recsig.h), each beside a record
 * the same commit adds (in `tasks`: task -> names, or `registers`), and
 * no larger than AMP_RECORD_SIG_MAX: a signature is its record's, made
 * when it is written.  Whether it verifies is check_signature's. */
static void check_sig_files(struct check *c, int layout, json_t *sigs, json_t *tasks,
			    json_t *registers)
{
	size_t i, k;

	for (i = 0; i < json_array_size(sigs); i++) {
		const char *path = json_string_value(json_array_get(sigs, i)), *name;
		char rec[AMP_PATH_MAX], task_id[64];
		git_tree_entry *e = NULL;
		int found = 0;

		amp_store_sig_record_path(path, rec, sizeof(rec));
		if (amp_store_record_path_parse(layout, rec, task_id, sizeof(task_id), &name) == 0)
			found = json_object_get(json_object_get(tasks, task_id), name) != NULL;
		for (k = 0; !found && k < json_array_size(registers); k++)
			found = !strcmp(json_string_value(json_array_get(registers, k)), rec);
		if (!found) {
			refuse(c, AMP_ESCHEMA, path, NULL,
			       "a record signature (%s) whose record this commit does not add%s",
			       AMP_RECORD_SIG_SUFFIX, NULL);
			continue;
		}
		if (git_tree_entry_bypath(&e, c->tree, path) == 0) {
			git_odb *odb = NULL;
			git_object_t type;
			size_t len = 0;

			if (git_repository_odb(&odb, amp_store_repo(c->st)) == 0 &&
			    git_odb_read_header(&len, &type, odb, git_tree_entry_id(e)) == 0 &&
			    len > AMP_RECORD_SIG_MAX) {
				char max[16];

				snprintf(max, sizeof(max), "%d", AMP_RECORD_SIG_MAX);
				refuse(c, AMP_ESCHEMA, path, NULL,
				       "a record signature larger than %s bytes%s", max, NULL);
			}
			git_odb_free(odb);
		}
		git_error_clear();
		git_tree_entry_free(e);
	}
}

/* Checks one new commit: only added files, and on the messages ref only
 * valid records in their place. */
static int check_commit(struct check *c, git_commit *commit)
{
	git_repository *repo = amp_store_repo(c->st);
	git_commit *parent = NULL;
	git_tree *old_tree = NULL;
	struct changes ch = { 0 };
	json_t *tasks = json_object(), *added, *registers = json_array(), *sigs = json_array();
	const char *task;
	char task_id[64], sigof[AMP_PATH_MAX];
	int status = AMP_OK, layout, migration;
	size_t i, n;

	git_oid_tostr(c->commit, 8, git_commit_id(commit));
	if (git_commit_parentcount(commit) > 1) {
		refuse(c, AMP_ESCHEMA, NULL, NULL, "a merge commit: the SSOT keeps a linear history%s%s", NULL, NULL);
		goto cleanup;
	}
	if (amp_git_commit_tree(&c->tree, commit) < 0 ||
	    (git_commit_parentcount(commit) == 1 &&
	     (amp_git_commit_parent(&parent, commit, 0) < 0 ||
	      amp_git_commit_tree(&old_tree, parent) < 0)) ||
	    tree_changes(repo, old_tree, c->tree, &ch) < 0) {
		amp_error err;

		status = amp_error_git(&err, AMP_EIO, "commit %s cannot be read", c->commit);
		amp_errlist_add(c->errors, status, "", "%s", err.message);
		goto cleanup;
	}
	if (c->messages && (migration = amp_hook_check_migration(c, old_tree)) != 0) {
		status = migration < 0 ? AMP_EIO : AMP_OK;
		goto cleanup;
	}
	layout = amp_store_tree_layout(repo, c->tree);
	n = ch.count;
	for (i = 0; i < n; i++) {
		const struct change *d = &ch.items[i];
		const char *path = d->path, *name;

		if (d->bad_name) {
			refuse(c, AMP_ESCHEMA, amp_json_text(path), NULL,
			       "a name git refuses (git fsck; a hub or clone with fsckObjects refuses the push or fetch): %s%s",
			       d->bad_name, NULL);
			continue;
		}
		if (d->status != GIT_DELTA_ADDED) {
			refuse(c, AMP_ESCHEMA, path, NULL, "%s a file: the SSOT only appends%s",
			       delta_verb(d->status), NULL);
			continue;
		}
		if (d->mode != GIT_FILEMODE_BLOB) {
			refuse(c, AMP_ESCHEMA, path, NULL, "not a regular file (mode %s)%s",
			       d->mode == GIT_FILEMODE_LINK ? "symlink" :
			       d->mode == GIT_FILEMODE_COMMIT ? "submodule" : "executable",
			       NULL);
			continue;
		}
		if (c->errlog && strcmp(path, "AMP")) {
			check_error_file(c, path);
			continue;
		}
		if (!c->messages || !strcmp(path, "AMP") ||
		    /* amp init's new SSOT is in layout 2 (store.h "Layout") */
		    (!old_tree && !strcmp(path, AMP_LAYOUT_FILE) && layout == AMP_LAYOUT_FANNED))
			continue;
		/* amp's names are ASCII; one that is not UTF-8 no list of the
		 * records can name (JSON names are UTF-8), so none would check it */
		if (!amp_utf8_valid(path)) {
			refuse(c, AMP_ESCHEMA, amp_json_text(path), NULL,
			       "a file name that is not UTF-8: amp never writes one%s%s", NULL, NULL);
			continue;
		}
		if (amp_store_sig_record_path(path, sigof, sizeof(sigof)) == 0) {
			json_array_append_new(sigs, json_string(path));
			continue;
		}
		if (!strncmp(path, AMP_REGISTRY_DIR "/", strlen(AMP_REGISTRY_DIR "/"))) {
			json_array_append_new(registers, json_string(path));
			continue;
		}
		if (amp_store_record_path_parse(layout, path, task_id, sizeof(task_id), &name) < 0) {
			refuse(c, AMP_ESCHEMA, path, NULL, "%s%s",
			       layout == AMP_LAYOUT_FLAT ?
			       "not a record in its task's directory (tasks/<YYYY>/<S>/<task_id>/<seq>.<msg|ack|ctl>.<id>.json)" :
			       "not a record in its task's directory (tasks/<YYYY>/<A>/<B>/<task_id>/<s1>/<s2>/<seq>.<msg|ack|ctl>.<id>.json)",
			       NULL);
			continue;
		}
		if (!(added = json_object_get(tasks, task_id))) {
			added = json_object();
			json_object_set_new(tasks, task_id, added);
		}
		json_object_set_new(added, name, json_true());
	}
	check_sig_files(c, layout, sigs, tasks, registers);
	if (c->errors->count > c->base)
		goto cleanup;
	json_array_clear(c->froms);
	amp_commit_agent(commit, c->agent, sizeof(c->agent));
	json_object_foreach(tasks, task, added)
		if ((status = check_task(c, task, added)) < 0)
			break;
	for (i = 0; status == AMP_OK && i < json_array_size(registers); i++)
		status = check_register(c, commit, json_string_value(json_array_get(registers, i)));
	if (status == AMP_OK && c->signatures)
		status = check_signature(c, commit);
cleanup:
	json_decref(tasks);
	json_decref(registers);
	json_decref(sigs);
	free(ch.items);
	git_tree_free(old_tree);
	git_tree_free(c->tree);
	c->tree = NULL;
	git_commit_free(parent);
	if (status == AMP_OK && c->errors->count > c->base)
		status = AMP_ERULE;
	return status;
}

int amp_hook_check_commit(amp_store *st, amp_schema_set *set, const char *ref,
			  git_commit *commit, amp_trust *trust, amp_errlist *errors)
{
	struct check c = { st, set, ref, !strcmp(ref, amp_store_messages_ref(st)), "", NULL,
			   errors, errors->count, json_array(), 1,
			   amp_store_signing(st)->allowed[0] != '\0', 0, "",
			   !strcmp(ref, amp_store_errors_ref(st)), trust };
	int status;

	if (!c.froms)
		return amp_errlist_add(errors, AMP_EIO, "", "out of memory");
	status = check_commit(&c, commit);
	json_decref(c.froms);
	return status;
}

static int parse_oid(git_oid *oid, const char *hex, struct check *c)
{
	if (strlen(hex) != GIT_OID_HEXSZ || git_oid_fromstr(oid, hex) < 0)
		return amp_errlist_add(c->errors, AMP_EUSAGE, "", "%s: '%.60s' is not an object id",
				       c->ref, hex);
	return AMP_OK;
}

/*
 * The commits `new` brings past `stops` (ids, or zero ids for none), when
 * they are one line of single parents: into *out (the caller frees it),
 * newest first.  1 when they are; 0 when a merge is on the way (*out
 * NULL); < 0 a libgit2 error.  What libgit2's revwalk would give, oldest
 * first, holding an id per commit instead of the revwalk's node and the
 * topological sort (at 100k messages a push of the whole history peaked
 * at 80 MB with them); amp_first_parents steps the index trim per commit.
 */
static int first_parent_line(git_repository *repo, const git_oid *new, const git_oid *stops,
			     size_t nstops, git_oid **out, size_t *count)
{
	amp_first_parents chain;
	git_commit *commit = NULL;
	git_oid *v = NULL, *grown;
	size_t n = 0, alloc = 0, i;
	int rc;

	*out = NULL;
	*count = 0;
	amp_first_parents_start(&chain, repo, new);
	while ((rc = amp_first_parents_next(&chain, &commit)) == 0) {
		for (i = 0; i < nstops && !git_oid_equal(git_commit_id(commit), &stops[i]); i++)
			;
		if (i < nstops)
			break;
		if (git_commit_parentcount(commit) > 1)
			goto cleanup; /* rc 0: not one line */
		if (n == alloc) {
			alloc = alloc ? alloc * 2 : 64;
			if (!(grown = realloc(v, alloc * sizeof(*v)))) {
				git_error_set_oom();
				rc = -1;
				goto cleanup;
			}
			v = grown;
		}
		git_oid_cpy(&v[n++], git_commit_id(commit));
		git_commit_free(commit);
		commit = NULL;
	}
	if (rc == 0 || rc == GIT_ITEROVER) {
		*out = v;
		*count = n;
		v = NULL;
		rc = 1;
	}
cleanup:
	git_commit_free(commit);
	free(v);
	return rc;
}

/* check_commit of pushed commit `id`; AMP_EIO when it cannot be read. */
static int check_pushed(struct check *c, const git_oid *id)
{
	git_commit *commit = NULL;
	amp_error err;
	int status;

	amp_store_walk_step();
	if (amp_git_commit_lookup(&commit, amp_store_repo(c->st), id) < 0) {
		status = amp_error_git(&err, AMP_EIO, "cannot read a pushed commit");
		amp_errlist_add(c->errors, status, "", "%s", err.message);
		return status;
	}
	status = check_commit(c, commit);
	git_commit_free(commit);
	return status;
}

/* Reports that the commits of `new_hex` cannot be walked (libgit2's
 * reason): AMP_EIO. */
static int walk_failed(struct check *c, const char *new_hex)
{
	amp_error err;
	int status = amp_error_git(&err, AMP_EIO, "cannot walk %.12s", new_hex);

	amp_errlist_add(c->errors, status, "", "%s", err.message);
	return status;
}

/*
 * Checks, oldest first, every commit `new` brings that neither `hide1` nor
 * `hide2` (NULL, or an id that may be zero or absent) reaches: what a push
 * adds.  AMP_OK, the first refusing commit's status, or AMP_EIO.
 */
static int check_new_commits(struct check *c, const git_oid *new, const git_oid *hide1,
			     const git_oid *hide2, const char *new_hex)
{
	git_repository *repo = amp_store_repo(c->st);
	const git_oid *hide[2] = { hide1, hide2 }, *known[2];
	git_revwalk *walk = NULL;
	git_commit *commit = NULL;
	git_oid id, stops[2], *line = NULL;
	size_t i, nknown = 0, nstops = 0, nline = 0;
	int status, linear;

	/* What the repository does not have cannot be hidden: nothing of it
	 * is reachable from `new` either.  On one line of commits, what a
	 * commit reaches is that line below its base with `new`. */
	for (i = 0; i < 2; i++) {
		if (hide[i] && !git_oid_is_zero(hide[i]) &&
		    amp_git_commit_lookup(&commit, repo, hide[i]) == 0)
			known[nknown++] = hide[i];
		git_commit_free(commit);
		commit = NULL;
	}
	for (i = 0; i < nknown; i++)
		if (git_merge_base(&stops[nstops], repo, new, known[i]) == 0)
			nstops++;
	git_error_clear();
	if ((linear = first_parent_line(repo, new, stops, nstops, &line, &nline)) < 0) {
		status = walk_failed(c, new_hex);
		goto cleanup;
	}
	if (linear) {
		for (i = nline, status = AMP_OK; i-- > 0 && status >= 0;)
			status = check_pushed(c, &line[i]);
		goto cleanup;
	}
	/* A merge on the way (refused by check_commit): every commit, in the
	 * order libgit2's revwalk gives. */
	if (git_revwalk_new(&walk, repo) < 0 ||
	    git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE) < 0 ||
	    git_revwalk_push(walk, new) < 0) {
		status = walk_failed(c, new_hex);
		goto cleanup;
	}
	for (i = 0; i < nknown; i++)
		git_revwalk_hide(walk, known[i]);
	git_error_clear();
	while ((status = git_revwalk_next(&id, walk)) == 0)
		if ((status = check_pushed(c, &id)) < 0)
			goto cleanup;
	status = status == GIT_ITEROVER ? AMP_OK : walk_failed(c, new_hex);
cleanup:
	free(line);
	git_commit_free(commit);
	git_revwalk_free(walk);
	return status;
}

/*
 * A push to a clone's inbox, refs/amp-in/<id>/<name> (sync.h): any update
 * (the clone pushes with force what its own join made), but every commit
 * the hub's refs/amp/<name> does not hold must be well-formed; the rules
 * are the hub's join's, in the records' place there (post-receive).
 */
int amp_hook_inbox_target(amp_store *st, const char *name, char target[AMP_INBOX_TARGET_MAX])
{
	const char *id = name + strlen(AMP_SYNC_INBOX), *slash = strchr(id, '/');

	*target = '\0';
	if (strncmp(name, AMP_SYNC_INBOX, strlen(AMP_SYNC_INBOX)) || !slash || slash == id ||
	    slash - id > 64 ||
	    strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
		    (size_t)(slash - id))
		return -1;
	snprintf(target, AMP_INBOX_TARGET_MAX, "refs/amp/%.200s", slash + 1);
	return strcmp(target, amp_store_messages_ref(st)) &&
	       strcmp(target, amp_store_errors_ref(st)) ? -2 : 0;
}

static int check_inbox_update(struct check *c, const char *old_hex, const char *new_hex)
{
	char target[AMP_INBOX_TARGET_MAX];
	git_oid old, new, tip;
	int status;

	if ((status = amp_hook_inbox_target(c->st, c->ref, target)) == -1)
		return amp_errlist_add(c->errors, AMP_ERULE, "",
				       "not an inbox: refs/amp-in/<id>/<ref> with <id> of [A-Za-z0-9_-]{1,64}");
	if (status < 0)
		return amp_errlist_add(c->errors, AMP_ERULE, "",
				       "an inbox takes the messages or the errors ref, and %s is neither",
				       target);
	if ((status = parse_oid(&old, old_hex, c)) < 0 || (status = parse_oid(&new, new_hex, c)) < 0)
		return status;
	if (git_oid_is_zero(&new))
		return AMP_OK; /* the clone takes its inbox away */
	/* The join re-commits the records on the hub under the hub's own
	 * commit signature: in strict mode each record keeps its author's
	 * signature beside it (recsig.h), so the join forges nothing. */
	c->messages = !strcmp(target, amp_store_messages_ref(c->st));
	c->errlog = !c->messages;
	c->inbox = 1;
	if (git_reference_name_to_id(&tip, amp_store_repo(c->st), target) < 0) {
		git_error_clear();
		c->inbox = 0; /* the first history of the hub is taken as it is:
			       * every rule, on the history it brings */
		return check_new_commits(c, &new, &old, NULL, new_hex);
	}
	return check_new_commits(c, &new, &tip, &old, new_hex);
}

int amp_hook_check_update(amp_store *st, amp_schema_set *set, const char *ref,
			  const char *old_hex, const char *new_hex,
			  amp_errlist *errors)
{
	struct check c = { st, set, ref, !strcmp(ref, amp_store_messages_ref(st)), "", NULL,
			   errors, errors->count, NULL, 0, amp_store_signing(st)->require, 0, "",
			   !strcmp(ref, amp_store_errors_ref(st)), NULL };
	git_repository *repo = amp_store_repo(st);
	git_commit *commit = NULL;
	git_oid old, new;
	amp_trust trust;
	amp_error err;
	int status;

	if (!strncmp(ref, AMP_SYNC_INBOX, strlen(AMP_SYNC_INBOX))) {
		if (!(c.froms = json_array()))
			return amp_errlist_add(errors, AMP_EIO, "", "out of memory");
		status = check_inbox_update(&c, old_hex, new_hex);
		json_decref(c.froms);
		return status;
	}
	/* The hub's join says there what it made of each inbox; a clone's
	 * sync believes it (lib/sync/sync_hub.h). */
	if (!strncmp(ref, AMP_SYNC_JOINED, strlen(AMP_SYNC_JOINED)))
		return amp_errlist_add(errors, AMP_ERULE, "",
				       "only the hub's join writes %s", AMP_SYNC_JOINED);
	if (strncmp(ref, "refs/amp/", 9))
		return AMP_OK;
	if ((status = parse_oid(&old, old_hex, &c)) < 0 ||
	    (status = parse_oid(&new, new_hex, &c)) < 0)
		return status;
	/* Every clone fetches refs/amp/: only what amp reads and checks goes
	 * there (one made before this check may still be deleted). */
	if (!c.messages && !c.errlog)
		return git_oid_is_zero(&new) ? AMP_OK :
		       amp_errlist_add(errors, AMP_ERULE, "",
				       "amp defines no such ref: under refs/amp/ a hub takes %s (amp.ref) and %s (amp.errorsRef) only",
				       amp_store_messages_ref(st), amp_store_errors_ref(st));
	if (git_oid_is_zero(&new))
		return amp_errlist_add(errors, AMP_ERULE, "",
				       "deleting it is refused: the SSOT is append-only");
	if (git_oid_equal(&old, &new))
		return AMP_OK;
	if (!git_oid_is_zero(&old)) {
		int ff;

		if (amp_git_commit_lookup(&commit, repo, &old) < 0) {
			git_error_clear();
			return amp_errlist_add(errors, AMP_ERULE, "",
					       "its tip %.12s is not here: fetch first", old_hex);
		}
		git_commit_free(commit);
		commit = NULL;
		if ((ff = git_graph_descendant_of(repo, &new, &old)) < 0) {
			status = amp_error_git(&err, AMP_EIO, "cannot compare %.12s and %.12s",
					       old_hex, new_hex);
			return amp_errlist_add(errors, status, "", "%s", err.message);
		}
		if (!ff)
			return amp_errlist_add(errors, AMP_ERULE, "",
					       "not a fast-forward of %.12s: the SSOT is append-only (amp sync joins histories)",
					       old_hex);
	}
	if (!(c.froms = json_array()))
		return amp_errlist_add(errors, AMP_EIO, "", "out of memory");
	amp_trust_init(&trust, &new);
	c.trust = &trust;
	status = check_new_commits(&c, &new, &old, NULL, new_hex);
	amp_trust_free(&trust);
	json_decref(c.froms);
	return status;
}

/* The hooks directory of st's repository into buf: git config
 * core.hooksPath (relative to the work tree, or to the git directory of a
 * bare repository), else <common git dir>/hooks. */
static int hooks_dir(amp_store *st, char *buf, size_t bufsz, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	const char *base = git_repository_workdir(repo);
	char conf[AMP_PATH_MAX];
	int n;

	if (!base)
		base = git_repository_commondir(repo);
	/* git's directories end in '/'. */
	if (amp_store_config(st, "core.hooksPath", conf, sizeof(conf)) && conf[0])
		n = conf[0] == '/' ? snprintf(buf, bufsz, "%s", conf)
				   : snprintf(buf, bufsz, "%s%s", base, conf);
	else
		n = snprintf(buf, bufsz, "%shooks", git_repository_commondir(repo));
	if (n < 0 || (size_t)n >= bufsz)
		return amp_error_set(err, AMP_EIO, "", "path of the hooks directory too long");
	return AMP_OK;
}

/* What each hook amp installs runs, and why: the one place that knows a
 * hook's name from the amp-hook command it runs. */
static const struct hook_kind {
	const char *command; /* amp-hook <command> */
	const char *name;    /* git's name of the hook */
	const char *purpose; /* for the script's comment */
} hook_kinds[] = {
	{ "pre-receive", "pre-receive", "refuses a push of refs/amp/* that breaks the SSOT's rules" },
	{ "post-receive", "post-receive", "joins the clones' inboxes (refs/amp-in/*) into refs/amp/*" },
	{ "pre-push", "pre-push", "refuses a push of refs/amp/* that breaks the SSOT's rules" },
	{ "pre-commit", "pre-commit", "refuses an agent's commit on a protected branch" },
	{ "pre-merge-commit", "pre-merge-commit", "refuses an agent's merge into a protected branch" },
	{ "work-pre-push", "pre-push", "refuses an agent's push to a protected branch" },
	{ NULL, NULL, NULL },
};

/* The command the amp hook at path runs: the word after AMP_HOOK_MARKER
 * ": " into buf, or `name` itself for a hook of the first format (marker,
 * then " (AMP/1.0)"), which ran the command of its name.  0 when the file
 * is no hook of amp's. */
static int hook_command(const char *path, const char *name, char *buf, size_t bufsz)
{
	char head[256], *p;
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	n = fread(head, 1, sizeof(head) - 1, f);
	fclose(f);
	head[n] = '\0';
	if (!(p = strstr(head, AMP_HOOK_MARKER)))
		return 0;
	p += strlen(AMP_HOOK_MARKER);
	if (strncmp(p, ": ", 2)) {
		snprintf(buf, bufsz, "%s", name);
		return 1;
	}
	p += 2;
	n = strcspn(p, "\n");
	snprintf(buf, bufsz, "%.*s", (int)n, p);
	return 1;
}

/* Writes s to f single-quoted for sh. */
static void sh_quote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	fputc('\'', f);
}

int amp_hook_install(amp_store *st, const char *command, const char *program,
		     char *path, size_t pathsz, int *chained, amp_error *err)
{
	const struct hook_kind *k;
	char dir[AMP_PATH_MAX], old[AMP_PATH_MAX + 16], tmp[AMP_PATH_MAX + 16], there[64];
	struct stat sb;
	FILE *f = NULL;
	int status = AMP_OK, n;

	*chained = 0;
	for (k = hook_kinds; k->command && strcmp(k->command, command); k++)
		;
	if (!k->command)
		return amp_error_set(err, AMP_EUSAGE, "", "no hook runs amp-hook %s", command);
	if ((status = hooks_dir(st, dir, sizeof(dir), err)) < 0)
		return status;
	n = snprintf(path, pathsz, "%s/%s", dir, k->name);
	if (n < 0 || (size_t)n >= pathsz || (size_t)n + 16 > sizeof(old))
		return amp_error_set(err, AMP_EIO, "", "path of the hook too long");
	snprintf(old, sizeof(old), "%s.amp-chained", path);
	snprintf(tmp, sizeof(tmp), "%s.amp-tmp", path);
	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return amp_error_set(err, AMP_EIO, "", "cannot create %s: %s", dir, strerror(errno));
	/* A hook of amp's that runs another command (the SSOT's pre-push in
	 * a work repository) is chained like anybody's. */
	if (lstat(path, &sb) == 0 &&
	    !(hook_command(path, k->name, there, sizeof(there)) && !strcmp(there, command))) {
		if (lstat(old, &sb) == 0)
			return amp_error_set(err, AMP_EIO, "",
					     "%s and %s are both there: move one away first", path, old);
		if (rename(path, old) < 0)
			return amp_error_set(err, AMP_EIO, "", "cannot move %s to %s: %s", path, old,
					     strerror(errno));
	}
	*chained = lstat(old, &sb) == 0;
	if (!(f = fopen(tmp, "w"))) {
		status = amp_error_set(err, AMP_EIO, "", "cannot write %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	/* Without a chained hook, amp-hook takes git's stdin itself: no
	 * process but it (a hub runs the hook on every push).  With one, the
	 * stdin is read once, by whichever runs first: it is kept in a file
	 * so the chained hook and amp both see all of it. */
	fprintf(f, "#!/bin/sh\n%s: %s\n# AMP/1.0: %s.  A hook that was here\n"
		   "# before runs first, as %s.amp-chained, on the same input.\n"
		   "if [ ! -x \"$0.amp-chained\" ]; then\n\texec ",
		AMP_HOOK_MARKER, command, k->purpose, k->name);
	sh_quote(f, program);
	fprintf(f, " hook %s \"$@\"\nfi\n"
		   "input=$(mktemp \"${TMPDIR:-/tmp}/amp-hook.XXXXXX\") || exit 1\n"
		   "trap 'rm -f \"$input\"' EXIT\n"
		   "cat > \"$input\" || exit 1\n"
		   "\"$0.amp-chained\" \"$@\" < \"$input\" || exit $?\n", command);
	sh_quote(f, program);
	fprintf(f, " hook %s \"$@\" < \"$input\"\n", command);
	if (ferror(f) | fclose(f)) {
		f = NULL;
		status = amp_error_set(err, AMP_EIO, "", "cannot write %s", tmp);
		goto cleanup;
	}
	f = NULL;
	if (chmod(tmp, 0755) < 0 || rename(tmp, path) < 0)
		status = amp_error_set(err, AMP_EIO, "", "cannot install %s: %s", path,
				       strerror(errno));
cleanup:
	if (f)
		fclose(f);
	if (status < 0)
		unlink(tmp);
	return status;
}
