/*
 * fsck.c - the check of the whole SSOT history (fsck.h).
 */
#include "fsck.h"
#include "base/gitobj.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook.h"
#include "record/record.h"
#include "store/store.h"
#include "base/util.h"
#include "json/json.h"

struct fsck {
	amp_store *st;
	amp_schema_set *set;
	const char *ref;
	int messages;          /* the ref is the messages ref */
	json_t *findings;
	amp_fsck_stats *stats;
	amp_trust *trust;      /* where trust starts on the ref (sign.h) */
};

/* One commit being checked. */
struct fsck_commit {
	git_commit *commit;
	git_tree *tree;
	git_tree *parent_tree; /* NULL for the root */
	char hex[GIT_OID_HEXSZ + 1];
	json_t *added;         /* {task: {record name: true}}: what differs from
				* the first parent (amp_store_diff_tasks) */
};

static void finding(struct fsck *f, const struct fsck_commit *c, const char *file,
		    const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void finding(struct fsck *f, const struct fsck_commit *c, const char *file,
		    const char *kind, const char *fmt, ...)
{
	char reason[AMP_MSG_MAX + 64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	json_array_append_new(f->findings,
			      json_pack("{s:s,s:s,s:s,s:s,s:s}", "ref", f->ref, "commit", c->hex,
					"file", file ? file : "", "kind", kind, "reason", reason));
	if (!strcmp(kind, "corrupt"))
		f->stats->corrupt++;
	else if (!strcmp(kind, "rule"))
		f->stats->rule++;
	else
		f->stats->unreadable++;
}

/* ---- the checks of one commit ------------------------------------------- */

/* Append-only, place and form of every record, and the rules on the history
 * before it: what the hook checks on a push (hook.h). */
static void check_history(struct fsck *f, struct fsck_commit *c)
{
	amp_errlist found = { 0 };
	size_t i;

	amp_hook_check_commit(f->st, f->set, f->ref, c->commit, f->trust, &found);
	for (i = 0; i < found.count; i++) {
		const amp_error *e = &found.items[i];

		finding(f, c, e->path,
			e->status == AMP_EIO ? "unreadable" : e->status == AMP_ERULE ? "rule" : "corrupt",
			"%s", e->message);
	}
	amp_errlist_free(&found);
}

/* The added record of `kind` and `id` (any task when task is NULL): its
 * task into *task_out and its name into *name_out (borrowed); 0 when found. */
static int find_added(const struct fsck_commit *c, const char *task, amp_entry_kind kind,
		      const char *id, const char **task_out, const char **name_out)
{
	const char *t, *name, *rid;
	json_t *names, *v;
	amp_entry_kind k;
	size_t len;

	json_object_foreach(c->added, t, names) {
		if (task && strcmp(t, task))
			continue;
		json_object_foreach(names, name, v)
			if (amp_store_entry_parse(name, NULL, &k, &rid, &len) == 0 && k == kind &&
			    strlen(id) == len && !strncmp(rid, id, len)) {
				*task_out = t;
				*name_out = name;
				return 0;
			}
	}
	return -1;
}

/* The "type" of record `name` of task `task` in the commit's tree, into
 * buf ("" when it cannot be read or has none). */
static void added_type(const struct fsck_commit *c, const char *task, const char *name,
		       char *buf, size_t bufsz)
{
	char path[AMP_PATH_MAX];
	git_tree_entry *e = NULL;
	git_blob *blob = NULL;
	json_t *doc = NULL;

	buf[0] = '\0';
	if (amp_store_record_lookup(c->tree, task, name, &e, path, sizeof(path)) == 0 &&
	    git_blob_lookup(&blob, git_commit_owner(c->commit), git_tree_entry_id(e)) == 0)
		doc = amp_json_loadb(git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob), 0, NULL, NULL);
	git_error_clear();
	if (amp_json_str(doc, "type"))
		snprintf(buf, bufsz, "%s", amp_json_str(doc, "type"));
	json_decref(doc);
	git_blob_free(blob);
	git_tree_entry_free(e);
}

/* The kind of an Amp-Superseded trailer's first word. */
static int superseded_kind(const char *word, size_t len, amp_entry_kind *kind)
{
	if (len == 7 && !strncmp(word, "message", len))
		*kind = AMP_ENTRY_MSG;
	else if (len == 3 && !strncmp(word, "ack", len))
		*kind = AMP_ENTRY_ACK;
	else if (len == 7 && !strncmp(word, "control", len))
		*kind = AMP_ENTRY_CTL;
	else
		return -1;
	return 0;
}

/* What the trailers of one commit say it adds. */
struct trailers {
	const char *task;      /* Amp-Task */
	size_t ntask;
	const char *type;      /* Amp-Type */
	const char *msg_id;    /* Amp-Msg-Id */
	const char *ack_for;   /* Amp-Ack-For */
	json_t *named;         /* {"<m|a|c><id>": true}: every record named */
};

static void name_record(struct trailers *t, amp_entry_kind kind, const char *id, size_t len)
{
	char key[300];

	snprintf(key, sizeof(key), "%c%.*s", (char)kind, (int)len, id);
	json_object_set_new(t->named, key, json_true());
}

/* A trailer naming record `id` of `kind` that the commit must add. */
static void expect_added(struct fsck *f, const struct fsck_commit *c, struct trailers *t,
			 const char *key, amp_entry_kind kind, const char *id, size_t len)
{
	const char *task, *name;
	char want[300];

	snprintf(want, sizeof(want), "%.*s", (int)len, id);
	name_record(t, kind, want, strlen(want));
	if (find_added(c, NULL, kind, want, &task, &name) < 0)
		finding(f, c, "", "corrupt", "its trailer %s: %s names no %s the commit adds", key,
			want, kind == AMP_ENTRY_MSG ? "message" :
					kind == AMP_ENTRY_ACK ? "ACK" : "control record");
}

/* The log says what the files say: the amp trailers of the commit message
 * name what the commit adds (lib/write/send.c, lib/write/control.c, lib/sync/sync.c write
 * them), and a commit that carries them adds no message or ACK they leave
 * out. */
static void check_trailers(struct fsck *f, struct fsck_commit *c)
{
	git_message_trailer_array arr = { 0 };
	struct trailers t = { 0 };
	const char *task, *name;
	json_t *names, *v;
	char type[64], path[AMP_PATH_MAX], key[300];
	size_t i;

	if (!f->messages || git_message_trailers(&arr, git_commit_message(c->commit)) < 0) {
		git_error_clear();
		return;
	}
	t.named = json_object();
	for (i = 0; i < arr.count; i++) {
		const char *k = arr.trailers[i].key, *val = arr.trailers[i].value;
		size_t len = strcspn(val, " ");

		if (!strcmp(k, "Amp-Task")) {
			t.task = val;
			t.ntask++;
		} else if (!strcmp(k, "Amp-Type")) {
			t.type = val;
		} else if (!strcmp(k, "Amp-Msg-Id")) {
			t.msg_id = val;
			expect_added(f, c, &t, k, AMP_ENTRY_MSG, val, strlen(val));
		} else if (!strcmp(k, "Amp-Escalation")) {
			expect_added(f, c, &t, k, AMP_ENTRY_MSG, val, strlen(val));
		} else if (!strcmp(k, "Amp-Ack-For")) {
			t.ack_for = val;
			expect_added(f, c, &t, k, AMP_ENTRY_ACK, val, strlen(val));
		} else if (!strcmp(k, "Amp-Superseded")) {
			amp_entry_kind kind;
			const char *id = val + len + (val[len] == ' ');

			if (superseded_kind(val, len, &kind) < 0)
				finding(f, c, "", "corrupt", "its trailer Amp-Superseded: %s names no kind of record",
					val);
			else
				expect_added(f, c, &t, k, kind, id, strcspn(id, " "));
		}
	}
	if (t.ntask > 1)
		finding(f, c, "", "corrupt", "it has %zu Amp-Task trailers: a commit writes to one task",
			t.ntask);
	if (t.type && t.msg_id) {
		if (find_added(c, NULL, AMP_ENTRY_MSG, t.msg_id, &task, &name) == 0) {
			added_type(c, task, name, type, sizeof(type));
			if (strcmp(type, t.type))
				finding(f, c, "", "corrupt", "its trailer Amp-Type: %s is not the type of %s (%s)",
					t.type, t.msg_id, type);
		}
	} else if (t.type && t.ack_for) {
		if (strcmp(t.type, "ack"))
			finding(f, c, "", "corrupt", "its trailer Amp-Type: %s names no ACK",
				t.type);
	} else if (t.type && t.ntask) {
		int found = 0;

		json_object_foreach(c->added, task, names)
			json_object_foreach(names, name, v) {
				amp_entry_kind k;
				const char *id;
				size_t len;

				if (found || amp_store_entry_parse(name, NULL, &k, &id, &len) < 0 ||
				    k != AMP_ENTRY_CTL)
					continue;
				added_type(c, task, name, type, sizeof(type));
				found = !strcmp(type, t.type);
			}
		if (!found)
			finding(f, c, "", "corrupt", "its trailer Amp-Type: %s names no record the commit adds",
				t.type);
	}
	/* Without Amp-Task the commit is not amp's (made by hand): only what
	 * its trailers name is held against it. */
	json_object_foreach(t.ntask ? c->added : NULL, task, names) {
		json_object_foreach(names, name, v) {
			amp_entry_kind k;
			const char *id;
			size_t len;

			if (amp_store_entry_parse(name, NULL, &k, &id, &len) < 0 ||
			    amp_store_record_path(amp_store_tree_layout(git_commit_owner(c->commit), c->tree),
						  task, name, path, sizeof(path)) < 0)
				continue;
			if (strcmp(task, t.task))
				finding(f, c, path, "corrupt", "a record of %s, not of its trailer Amp-Task: %s",
					task, t.task);
			snprintf(key, sizeof(key), "%c%.*s", (char)k, (int)len, id);
			if (k != AMP_ENTRY_CTL && !json_object_get(t.named, key))
				finding(f, c, path, "corrupt", "the commit's trailers do not name it (%s)",
					k == AMP_ENTRY_MSG ? "Amp-Msg-Id, Amp-Escalation or Amp-Superseded"
							   : "Amp-Ack-For or Amp-Superseded");
		}
	}
	json_decref(t.named);
	git_message_trailer_array_free(&arr);
}

/* The checks every commit gets, in this order: checking one more thing of
 * each commit (its signature) is one more line. */
typedef void (*fsck_check_fn)(struct fsck *f, struct fsck_commit *c);

static const fsck_check_fn commit_checks[] = {
	check_history,
	check_trailers,
};

/* ---- the walk ------------------------------------------------------------- */

/* Leaves in c->added the records the commit's tree holds: a record it
 * deletes is the history check's finding, not one the trailers name. */
static void keep_added(struct fsck_commit *c)
{
	const char *task, *name;
	json_t *names, *v;
	void *tmp, *tmp2;
	char path[AMP_PATH_MAX];
	git_tree_entry *e;

	json_object_foreach_safe(c->added, tmp, task, names) {
		if (!json_is_object(names)) {
			json_object_del(c->added, task);
			continue;
		}
		json_object_foreach_safe(names, tmp2, name, v) {
			if (amp_store_record_lookup(c->tree, task, name, &e, path, sizeof(path)) < 0) {
				json_object_del(names, name);
				continue;
			}
			git_tree_entry_free(e);
		}
	}
}

/* Reads commit `id` with its tree, its first parent's and what differs
 * between them; an unreadable commit is a finding (-1). */
static int commit_open(struct fsck *f, const git_oid *id, struct fsck_commit *c)
{
	git_repository *repo = amp_store_repo(f->st);
	git_commit *parent = NULL;
	amp_error err;

	memset(c, 0, sizeof(*c));
	git_oid_tostr(c->hex, sizeof(c->hex), id);
	c->added = json_object();
	if (amp_git_commit_lookup(&c->commit, repo, id) < 0 ||
	    amp_git_commit_tree(&c->tree, c->commit) < 0 ||
	    (git_commit_parentcount(c->commit) &&
	     (amp_git_commit_parent(&parent, c->commit, 0) < 0 ||
	      amp_git_commit_tree(&c->parent_tree, parent) < 0)) ||
	    (f->messages &&
	     amp_store_diff_tasks(repo, c->parent_tree, c->tree, c->added, -1) < 0)) {
		amp_error_git(&err, AMP_EIO, "cannot read the commit");
		finding(f, c, "", "unreadable", "%s", err.message);
		git_commit_free(parent);
		return -1;
	}
	git_commit_free(parent);
	keep_added(c);
	return 0;
}

static void commit_close(struct fsck_commit *c)
{
	json_decref(c->added);
	git_tree_free(c->parent_tree);
	git_tree_free(c->tree);
	git_commit_free(c->commit);
}

/* Checks every commit of ref, root first, along the first parents: their
 * ids listed from the tip down (amp_first_parents), then checked from the
 * end of the list. */
static int check_ref(struct fsck *f, amp_error *err)
{
	git_repository *repo = amp_store_repo(f->st);
	git_oid tip, *ids = NULL;
	size_t n = 0, i, k;
	amp_trust trust;
	int rc, status = AMP_OK;

	if ((rc = git_reference_name_to_id(&tip, repo, f->ref)) < 0) {
		if (rc == GIT_ENOTFOUND)
			return amp_error_set(err, AMP_EIO, "",
					     "no AMP store in this repository (%s is missing): run 'amp init'",
					     f->ref);
		return amp_error_git(err, AMP_EIO, "cannot read %s", f->ref);
	}
	/* A commit of the chain that cannot be read: nothing is checked. */
	if ((status = amp_first_parents_ids(repo, &tip, &ids, &n, err)) < 0)
		return status;
	amp_trust_init(&trust, &tip);
	f->trust = &trust;
	for (i = n; i-- > 0;) {
		struct fsck_commit fc;

		f->stats->commits++;
		if (commit_open(f, &ids[i], &fc) == 0)
			for (k = 0; k < sizeof(commit_checks) / sizeof(commit_checks[0]); k++)
				commit_checks[k](f, &fc);
		commit_close(&fc);
	}
	f->trust = NULL;
	amp_trust_free(&trust);
	free(ids);
	return status;
}

/* A history can be whole and still not be the one this clone saw: the
 * records of the last intact tip amp watch kept (seen.h) that the tip has
 * lost, each a finding of the seen commit. */
static int check_seen(struct fsck *f, amp_error *err)
{
	git_repository *repo = amp_store_repo(f->st);
	git_commit *sc = NULL, *tc = NULL;
	git_tree *st = NULL, *tt = NULL;
	json_t *lost = json_array(), *l;
	struct fsck_commit c = { 0 };
	char ref[AMP_PATH_MAX], tip_hex[GIT_OID_HEXSZ + 1];
	git_oid seen, tip;
	size_t i;
	int status;

	if ((status = amp_seen_read(f->st, &seen, err)) <= 0)
		goto cleanup;
	status = AMP_OK;
	amp_seen_ref(f->st, ref, sizeof(ref));
	git_oid_tostr(c.hex, sizeof(c.hex), &seen);
	if (git_reference_name_to_id(&tip, repo, f->ref) < 0 ||
	    amp_git_commit_lookup(&tc, repo, &tip) < 0 || amp_git_commit_tree(&tt, tc) < 0 ||
	    amp_git_commit_lookup(&sc, repo, &seen) < 0 || amp_git_commit_tree(&st, sc) < 0 ||
	    amp_seen_lost(repo, st, tt, lost) < 0) {
		amp_error e;

		amp_error_git(&e, AMP_EIO, "cannot compare %s with %s", ref, f->ref);
		finding(f, &c, "", "unreadable", "%s", e.message);
		goto cleanup;
	}
	git_oid_tostr(tip_hex, sizeof(tip_hex), &tip);
	json_array_foreach(lost, i, l)
		finding(f, &c, json_string_value(json_object_get(l, "path")), "corrupt",
			"%s: %s (%.12s) holds it, %s (%.12s) %s", !strcmp(amp_json_str(l, "change"), "changed") ?
			"changed" : "removed", ref, c.hex, f->ref, tip_hex,
			!strcmp(amp_json_str(l, "change"), "changed") ? "holds other content under its name" :
									 "does not: history was rewritten");
cleanup:
	json_decref(lost);
	git_tree_free(st);
	git_tree_free(tt);
	git_commit_free(sc);
	git_commit_free(tc);
	return status;
}

/* A ref under refs/amp/ that is neither amp's messages ref nor its errors
 * ref nor the hub's arrival notes (store/arrivals.h, which its hook writes
 * and amp reads as hostile text): every clone fetches it, nothing checks
 * it (the hub's hook refuses to create one). */
static int check_other_refs(struct fsck *f, amp_error *err)
{
	git_reference_iterator *it = NULL;
	git_reference *r = NULL;
	struct fsck_commit c = { 0 };
	const char *name;
	int rc;

	if (git_reference_iterator_glob_new(&it, amp_store_repo(f->st), "refs/amp/*") < 0)
		return amp_error_git(err, AMP_EIO, "cannot list refs/amp/");
	while ((rc = git_reference_next(&r, it)) == 0) {
		name = git_reference_name(r);
		if (strcmp(name, amp_store_messages_ref(f->st)) &&
		    strcmp(name, amp_store_errors_ref(f->st)) && strcmp(name, AMP_ARRIVALS_REF)) {
			f->ref = name;
			if (git_reference_target(r))
				git_oid_tostr(c.hex, sizeof(c.hex), git_reference_target(r));
			else
				snprintf(c.hex, sizeof(c.hex), "%s", "");
			finding(f, &c, name, "corrupt",
				"amp defines no such ref: the SSOT is %s and %s only (git update-ref -d %s)",
				amp_store_messages_ref(f->st), amp_store_errors_ref(f->st), name);
			f->ref = amp_store_errors_ref(f->st);
		}
		git_reference_free(r);
		r = NULL;
	}
	git_reference_iterator_free(it);
	if (rc != GIT_ITEROVER)
		return amp_error_git(err, AMP_EIO, "cannot list refs/amp/");
	git_error_clear();
	return AMP_OK;
}

int amp_fsck_run(amp_store *st, amp_schema_set *set, json_t *findings,
		 amp_fsck_stats *stats, amp_error *err)
{
	struct fsck f = { st, set, amp_store_messages_ref(st), 1, findings, stats, NULL };
	int status;

	memset(stats, 0, sizeof(*stats));
	/* The other commands trust an object's name (amp_store_open turns
	 * libgit2's re-hash off, as git does); fsck is where it is checked,
	 * so that a damaged object is a finding, not a record. */
	if ((status = amp_store_git_verify_hashes(1, err)) < 0 ||
	    (status = check_ref(&f, err)) < 0 || (status = check_seen(&f, err)) < 0)
		return status;
	f.ref = amp_store_errors_ref(st);
	f.messages = 0;
	if ((status = check_ref(&f, err)) < 0)
		return status;
	return check_other_refs(&f, err);
}
