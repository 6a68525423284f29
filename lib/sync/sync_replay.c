/*
 * sync_replay.c - the join of two histories by replaying the local commits
 * onto the remote's tip (sync_replay.h): the messages ref record by record,
 * the errors ref by a union of its files.
 */
#include <ctype.h>
#include "base/gitobj.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/util.h"
#include "protocol/protocol.h"
#include "read/read.h"
#include "record/record.h"
#include "store/store.h"
#include "sync.h"
#include "sync_aside.h"
#include "sync_index.h"
#include "sync_replay.h"

static void replay_ctx_free(struct replay_ctx *r)
{
	size_t i;

	json_decref(r->kept);
	for (i = 0; i < r->nlogs; i++)
		amp_task_log_free(&r->logs[i]);
	free(r->logs);
	json_decref(r->contested);
	json_decref(r->renamed);
	json_decref(r->sigs);
	amp_sync_updates_clear(&r->u);
	free(r->u.items);
}

/* The log of contested task `task`, read from `base` the first time; NULL
 * (*status set) when the task is not contested or on failure. */
static amp_task_log *contested_log(struct replay_ctx *r, const char *task, git_tree *base,
				   int *status, amp_error *err)
{
	json_t *slot = json_object_get(r->contested, task);
	amp_task_log *more;

	*status = AMP_OK;
	if (!slot) {
		json_object_set_new(r->contested, task, json_integer(0));
		slot = json_object_get(r->contested, task);
	}
	if (!slot)
		return NULL;
	if (json_integer_value(slot) > 0)
		return &r->logs[json_integer_value(slot) - 1];
	if (!(more = realloc(r->logs, (r->nlogs + 1) * sizeof(*more)))) {
		*status = amp_error_set(err, AMP_EIO, "", "out of memory");
		return NULL;
	}
	r->logs = more;
	if ((*status = amp_store_read_task(r->st, base, task, &r->logs[r->nlogs], err)) < 0)
		return NULL;
	json_object_set_new(r->contested, task, json_integer((json_int_t)++r->nlogs));
	return &r->logs[r->nlogs - 1];
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the object `files`, sorted (so in seq order); the caller
 * frees the array only (the strings are the object's). */
static const char **sorted_names(json_t *files, size_t *count)
{
	const char **names = malloc((json_object_size(files) + 1) * sizeof(*names));
	const char *name;
	json_t *v;
	size_t n = 0;

	if (!names)
		return NULL;
	json_object_foreach(files, name, v)
		names[n++] = name;
	qsort(names, n, sizeof(*names), cmp_str);
	*count = n;
	return names;
}

/* The remote's file of identity `key` in the index, into buf. */
static void find_name(git_repository *repo, git_tree *root, const char *dir,
		      const char *key, char *buf, size_t bufsz)
{
	git_tree_entry *e = NULL;
	git_tree *t = NULL;
	char k[AMP_PATH_MAX], path[128];
	amp_flat f = { 0 };
	size_t i;

	snprintf(buf, bufsz, "%s/?", dir);
	if (amp_store_task_lookup(root, dir, &e, path, sizeof(path)) < 0 ||
	    amp_git_tree_lookup(&t, repo, git_tree_entry_id(e)) < 0 ||
	    amp_store_task_files(repo, t, &f) < 0) {
		git_error_clear();
		goto cleanup;
	}
	snprintf(buf, bufsz, "%s/?", path);
	for (i = 0; i < f.count; i++) {
		const char *name = git_tree_entry_name(f.v[i].e), *id;
		amp_entry_kind kind;
		size_t id_len;

		amp_sync_record_key(name, k, sizeof(k), NULL, &kind, &id, &id_len);
		if (!strcmp(k, key)) {
			snprintf(buf, bufsz, "%s/%s%s%s", path, f.v[i].sub, *f.v[i].sub ? "/" : "",
				 name);
			break;
		}
	}
cleanup:
	amp_flat_free(&f);
	git_tree_free(t);
	git_tree_entry_free(e);
}

/* Replaces, in JSON value v, every string that `renamed` maps; returns
 * how many.  Records are bounded in depth (bounds.h). */
static int rename_refs(json_t *v, json_t *renamed)
{
	void *it = json_is_object(v) ? json_object_iter(v) : NULL;
	size_t i = 0, n = json_is_array(v) ? json_array_size(v) : 0;
	int hits = 0;

	/* An object's members by iterator, an array's by index. */
	while (it || i < n) {
		json_t *x = it ? json_object_iter_value(it) : json_array_get(v, i);
		json_t *to = json_is_string(x) ? json_object_get(renamed, json_string_value(x)) : NULL;

		if (!to)
			hits += rename_refs(x, renamed);
		else if ((it ? json_object_iter_set(v, it, to) : json_array_set(v, i, to)) == 0)
			hits++;
		if (it)
			it = json_object_iter_next(v, it);
		else
			i++;
	}
	return hits;
}

/* Writes doc as a record blob into *blob. */
static int write_doc(git_repository *repo, const json_t *doc, git_oid *blob, amp_error *err)
{
	char *text = amp_message_dump(doc);
	int rc;

	if (!text)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	rc = git_blob_create_from_buffer(blob, repo, text, strlen(text));
	free(text);
	return rc < 0 ? amp_error_git(err, AMP_EIO, "cannot write a renamed record") : AMP_OK;
}

/*
 * A local record that names a record this join renamed (its msg_id in
 * ack_for, context_ref, a payload) names the new id instead: *blob becomes
 * the rewritten record, and idbuf (an ACK's id is the msg_id it
 * acknowledges) the new id.
 */
static int follow_renames(struct replay_ctx *r, amp_entry_kind kind, char *idbuf,
			  size_t idsz, git_oid *blob, amp_error *err)
{
	json_t *doc = NULL, *to;
	int status;

	if (!r->renamed || !json_object_size(r->renamed))
		return AMP_OK;
	if ((status = amp_sync_read_doc(amp_store_repo(r->st), blob, &doc, err)) < 0 || !doc)
		return status;
	if (rename_refs(doc, r->renamed) > 0)
		status = write_doc(amp_store_repo(r->st), doc, blob, err);
	if (kind == AMP_ENTRY_ACK && (to = json_object_get(r->renamed, idbuf)))
		snprintf(idbuf, idsz, "%s", json_string_value(to));
	json_decref(doc);
	return status;
}

/* 1 when id `id` of `kind` is a record of task dir `dir` in the local tip
 * or an id this join gave already. */
static int local_id_taken(struct replay_ctx *r, const char *dir, amp_entry_kind kind,
			  const char *id)
{
	struct dir_index lix = { NULL, 1 };
	amp_error ignored;
	char key[AMP_PATH_MAX];
	const char *old;
	json_t *v;
	int taken = 0;

	json_object_foreach(r->renamed, old, v)
		if (!strcmp(json_string_value(v), id))
			return 1;
	snprintf(key, sizeof(key), "%c:%.400s", (char)kind, id);
	if (amp_sync_index_dir(amp_store_repo(r->st), r->local_tree, dir, &lix, &ignored) == 0)
		taken = json_object_get(lix.ids, key) != NULL;
	json_decref(lix.ids);
	return taken;
}

/*
 * AMP/1.0's msg_id is "{type}-{task_id}-{unix_ms}": two clones writing the
 * same type into one task in one millisecond make one id for two records
 * (a control record's name, "<type>-<unix_ms>", likewise).  The record the
 * remote holds keeps it: it is in force on the hub and on every clone that
 * synced since, and the history there is append-only.  The local one takes
 * the next millisecond free on both sides, as amp send does when its own
 * millisecond is used; the join rewrites the records built on it to name
 * the new id (follow_renames) and the commit says so in an Amp-Renamed:
 * trailer.  Only the clone that joins second renames, and what it pushes
 * is what every other clone fetches: one outcome everywhere.
 */
static int rename_record(struct replay_ctx *r, const struct dir_index *ix, const char *dir,
			 amp_entry_kind kind, char *idbuf, size_t idsz, git_oid *blob,
			 amp_error *err)
{
	char next[AMP_PATH_MAX], key[AMP_PATH_MAX], hex[GIT_OID_HEXSZ + 1];
	const char *dash = strrchr(idbuf, '-'), *have;
	long long ms, k;
	json_t *doc = NULL;
	git_oid renamed;
	size_t len;
	int status = AMP_ESCHEMA;

	if (!dash || sscanf(dash + 1, "%lld", &ms) != 1 || ms < 0)
		return AMP_ESCHEMA;
	if (kind == AMP_ENTRY_MSG &&
	    ((status = amp_sync_read_doc(amp_store_repo(r->st), blob, &doc, err)) < 0 || !doc))
		return status < 0 ? status : AMP_ESCHEMA;
	/* The first millisecond free on both sides, or one where the remote
	 * holds this very record renamed so (a hub's join of an inbox, or
	 * another join of this history that was pushed). */
	for (k = 1, status = AMP_ESCHEMA; k <= 1000 && status == AMP_ESCHEMA; k++) {
		snprintf(next, sizeof(next), "%.*s-%lld", (int)(dash - idbuf), idbuf, ms + k);
		if (local_id_taken(r, dir, kind, next))
			continue;
		git_oid_cpy(&renamed, blob);
		if (doc && (json_object_set_new(doc, "msg_id", json_string(next)) < 0 ||
			    (status = write_doc(amp_store_repo(r->st), doc, &renamed, err)) < 0))
			break;
		status = AMP_ESCHEMA;
		snprintf(key, sizeof(key), "%c:%.400s", (char)kind, next);
		git_oid_tostr(hex, sizeof(hex), &renamed);
		have = json_string_value(json_object_get(ix->ids, key));
		if (!have || !strcmp(have, hex))
			status = AMP_OK;
	}
	json_decref(doc);
	if (status != AMP_OK)
		return status == AMP_EIO ? status : AMP_ESCHEMA;
	if ((!r->renamed && !(r->renamed = json_object())) ||
	    json_object_set_new(r->renamed, idbuf, json_string(next)) < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	len = strlen(r->trailers);
	snprintf(r->trailers + len, sizeof(r->trailers) - len,
		 "Amp-Renamed: %s %s as %s (the remote holds another record of that id)\n",
		 kind == AMP_ENTRY_MSG ? "message" : "control", idbuf, next);
	snprintf(idbuf, idsz, "%s", next);
	git_oid_cpy(blob, &renamed);
	return AMP_OK;
}

/*
 * Replays a marker and the record it sets aside (names `mname`, `rname`
 * of local commit tree `ct`) as a pair at the task's next two seqs, the
 * marker naming the record's new name; nothing when `ix` holds the marker.
 */
static int replay_pair(struct replay_ctx *r, amp_task_log *log, struct dir_index *ix,
		       const char *dir, git_tree *ct, const char *mname, const char *rname,
		       amp_error *err)
{
	git_repository *repo = amp_store_repo(r->st);
	git_tree_entry *me = NULL, *re = NULL;
	json_t *marker = NULL, *record = NULL;
	char mkey[AMP_PATH_MAX], rkey[AMP_PATH_MAX], path[AMP_PATH_MAX * 2];
	char newm[AMP_PATH_MAX], newr[AMP_PATH_MAX], idm[AMP_PATH_MAX], idr[AMP_PATH_MAX];
	char hex[GIT_OID_HEXSZ + 1], *text = NULL;
	amp_entry_kind mk, rk;
	const char *id;
	size_t id_len;
	git_oid mblob;
	int status = AMP_OK, seq = ix->next_seq;

	amp_sync_record_key(mname, mkey, sizeof(mkey), NULL, &mk, &id, &id_len);
	snprintf(idm, sizeof(idm), "%.*s", (int)id_len, id);
	if (json_object_get(ix->ids, mkey))
		return AMP_OK; /* the same record, set aside there too */
	if (amp_store_entry_parse(rname, NULL, &rk, &id, &id_len) < 0)
		return AMP_OK;
	snprintf(idr, sizeof(idr), "%.*s", (int)id_len, id);
	if (amp_store_record_lookup(ct, dir, mname, &me, path, sizeof(path)) < 0 ||
	    amp_store_record_lookup(ct, dir, rname, &re, path, sizeof(path)) < 0) {
		git_error_clear();
		goto cleanup;
	}
	if ((status = amp_sync_read_doc(repo, git_tree_entry_id(me), &marker, err)) < 0 ||
	    (status = amp_sync_read_doc(repo, git_tree_entry_id(re), &record, err)) < 0)
		goto cleanup;
	if (amp_store_entry_name(seq, AMP_ENTRY_CTL, idm, newm, sizeof(newm)) < 0 ||
	    amp_store_entry_name(seq + 1, rk, idr, newr, sizeof(newr)) < 0)
		goto cleanup;
	if (!marker || json_object_set_new(marker, "record", json_string(newr)) < 0 ||
	    !(text = amp_message_dump(marker))) {
		status = amp_error_set(err, AMP_EIO, "", "cannot rewrite marker %s/%s", dir, mname);
		goto cleanup;
	}
	if (git_blob_create_from_buffer(&mblob, repo, text, strlen(text)) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot write a superseded marker");
		goto cleanup;
	}
	if ((status = amp_sync_add_update(r, dir, newm, &mblob, err)) < 0 ||
	    (status = amp_sync_add_update(r, dir, newr, git_tree_entry_id(re), err)) < 0)
		goto cleanup;
	ix->next_seq = seq + 2;
	git_oid_tostr(hex, sizeof(hex), &mblob);
	json_object_set_new(ix->ids, mkey, json_string(hex));
	amp_sync_set_aside_key(mname, rkey, sizeof(rkey));
	git_oid_tostr(hex, sizeof(hex), git_tree_entry_id(re));
	json_object_set_new(ix->ids, rkey, json_string(hex));
	if (log && (amp_task_log_append(log, seq, AMP_ENTRY_CTL, idm, json_incref(marker), 0) < 0 ||
		    (record && amp_task_log_append(log, seq + 1, rk, idr, json_incref(record), 1) < 0)))
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
	if (log)
		log->next_seq = seq + 2;
cleanup:
	free(text);
	json_decref(marker);
	json_decref(record);
	git_tree_entry_free(me);
	git_tree_entry_free(re);
	return status;
}

/*
 * The register records (registry.h) commit tree `ct` adds to `pt`, added
 * to r->u unless `base` holds them: a union of paths, since a path names
 * one content.  AMP_ERULE with *c filled for a path `base` holds with
 * another blob (a name that lies about its content).
 */
static int replay_registry(struct replay_ctx *r, git_tree *pt, git_tree *ct, git_tree *base,
			   struct conflict *c, amp_error *err)
{
	json_t *added = json_object(), *v;
	const char *path;
	int status = AMP_OK;

	if (!added)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (amp_registry_diff(amp_store_repo(r->st), pt, ct, added) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot compare a commit with its parent");
		goto cleanup;
	}
	json_object_foreach(added, path, v) {
		git_tree_entry *e = NULL;
		git_oid blob;
		int same = -1;

		if (git_oid_fromstr(&blob, json_string_value(v)) < 0)
			continue;
		if (base && git_tree_entry_bypath(&e, base, path) == 0)
			same = git_oid_equal(git_tree_entry_id(e), &blob);
		git_tree_entry_free(e);
		git_error_clear();
		if (same == 1)
			continue; /* the remote has it */
		if (same == 0) {
			snprintf(c->local, sizeof(c->local), "%s", path);
			snprintf(c->remote, sizeof(c->remote), "%s", path);
			git_oid_cpy(&c->blob, &blob);
			c->id[0] = '\0';
			status = amp_error_set(err, AMP_ERULE, "",
					       "conflict: %s holds other content on each side", path);
			goto cleanup;
		}
		if (amp_sync_updates_add(&r->u, path, &blob) < 0) {
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
			goto cleanup;
		}
	}
cleanup:
	json_decref(added);
	return status;
}

/*
 * AMP_ESCHEMA naming the first record of directory `dir` that commit tree
 * `ct` adds or changes against `pt` (NULL: none) whose file name is not
 * UTF-8.  The list of a commit's records (amp_store_diff_tasks, JSON) cannot
 * hold such a name, so a join would leave the record out without a word;
 * amp never writes one, and a hub's hook refuses one.
 */
static int refuse_bad_names(git_repository *repo, git_tree *pt, git_tree *ct, const char *dir,
			    amp_error *err)
{
	git_tree_entry *de = NULL, *pe = NULL;
	git_tree *t = NULL;
	amp_flat f = { 0 };
	char path[AMP_PATH_MAX * 2], tdir[128];
	size_t i;
	int status = AMP_OK;

	if (amp_store_task_lookup(ct, dir, &de, tdir, sizeof(tdir)) < 0 ||
	    git_tree_entry_type(de) != GIT_OBJECT_TREE ||
	    amp_git_tree_lookup(&t, repo, git_tree_entry_id(de)) < 0 ||
	    amp_store_task_files(repo, t, &f) < 0) {
		git_error_clear(); /* no directory: nothing added */
		goto cleanup;
	}
	for (i = 0; i < f.count; i++) {
		const git_tree_entry *e = f.v[i].e;
		const char *name = git_tree_entry_name(e);

		if (amp_utf8_valid(name))
			continue;
		snprintf(path, sizeof(path), "%s/%s%s%s", tdir, f.v[i].sub, *f.v[i].sub ? "/" : "",
			 name);
		if (pt && git_tree_entry_bypath(&pe, pt, path) == 0 &&
		    git_oid_equal(git_tree_entry_id(pe), git_tree_entry_id(e))) {
			git_tree_entry_free(pe);
			pe = NULL;
			continue;
		}
		git_error_clear();
		status = amp_error_set(err, AMP_ESCHEMA, amp_json_text(path),
				       "a file name that is not UTF-8, in a local commit: amp never "
				       "writes one and cannot carry it into the join; remove it from "
				       "the local history");
		break;
	}
cleanup:
	amp_flat_free(&f);
	git_tree_entry_free(pe);
	git_tree_entry_free(de);
	git_tree_free(t);
	return status;
}

/*
 * The place of local record `idbuf` (blob, identity `key`, `hex`) of a
 * contested task, on its joined history `log` (amp_sync_place_record): 1
 * when that settles it (placed after the remote's records, or set aside),
 * 0 when it goes on as the record of an uncontested task does (placed but
 * its identity taken, or not well-formed there: the hub's hook judges
 * it), or AMP_EIO.
 */
static int place_contested(struct replay_ctx *r, amp_task_log *log, struct dir_index *ix,
			   const char *dir, git_tree *base, amp_entry_kind kind, const char *idbuf,
			   const git_oid *blob, const char *fname, const char *key,
			   const char *hex, const char *have, amp_error *err)
{
	char name[AMP_PATH_MAX];
	int aside = 0, status;

	status = amp_sync_place_record(r, log, base, dir, kind, idbuf, blob, fname, &aside, err);
	if (status == AMP_EIO)
		return status;
	ix->next_seq = log->next_seq;
	if (aside) {
		json_object_set_new(ix->ids, key, json_string(hex));
		return 1;
	}
	if (status == AMP_OK && !have) {
		/* placed: it is the log's last entry */
		if (amp_store_entry_name(log->entries[log->count - 1].seq, kind, idbuf, name,
					 sizeof(name)) < 0)
			return 1;
		json_object_set_new(ix->ids, key, json_string(hex));
		if ((status = amp_sync_add_update(r, dir, name, blob, err)) < 0)
			return status;
		return 1;
	}
	if (status == AMP_OK) {
		/* placed, but its identity is taken: undo */
		log->count--;
		free(log->entries[log->count].id);
		json_decref(log->entries[log->count].doc);
		ix->next_seq = --log->next_seq;
	} else if (!have) {
		/* not well-formed there: it goes as it is, for the hub's hook
		 * to judge */
		log->next_seq = ix->next_seq + 1;
	}
	return 0;
}

/*
 * Sets local record `id` (blob) aside as it is (amp_sync_set_aside_as_is)
 * unless `ix` shows it set aside there already; a message or control
 * record's id goes to r->kept, so that what names it is set aside too.
 * AMP_ESCHEMA when it is no record (left to the caller), AMP_EIO.
 */
static int keep_aside(struct replay_ctx *r, amp_task_log *log, struct dir_index *ix,
		      const char *dir, amp_entry_kind kind, const char *id, const git_oid *blob,
		      const char *reason, amp_error *err)
{
	char hex[GIT_OID_HEXSZ + 1], mkey[AMP_PATH_MAX];
	int status;

	git_oid_tostr(hex, sizeof(hex), blob);
	snprintf(mkey, sizeof(mkey), "c:" MARKER_PREFIX "%s", hex);
	if (json_object_get(ix->ids, mkey))
		return AMP_OK;
	if ((status = amp_sync_set_aside_as_is(r, log, dir, kind, id, blob, reason, err)) < 0)
		return status;
	ix->next_seq = log->next_seq;
	json_object_set_new(ix->ids, mkey, json_string(hex));
	if (kind != AMP_ENTRY_ACK && ((!r->kept && !(r->kept = json_object())) ||
				      json_object_set_new(r->kept, id, json_string(id)) < 0))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	return AMP_OK;
}

/* The id of r->kept that local record `blob` (of `kind`, id `id`) names,
 * or NULL: an ACK by its id, any record by a string of its document. */
static const char *names_kept(struct replay_ctx *r, amp_entry_kind kind, const char *id,
			      const git_oid *blob)
{
	json_t *doc = NULL;
	amp_error ignored;
	const char *old, *hit = NULL;
	json_t *v;

	if (!r->kept || !json_object_size(r->kept))
		return NULL;
	if (kind == AMP_ENTRY_ACK && json_object_get(r->kept, id))
		return json_string_value(json_object_get(r->kept, id));
	if (amp_sync_read_doc(amp_store_repo(r->st), blob, &doc, &ignored) < 0 || !doc)
		return NULL;
	/* one id at a time: rename_refs counts the strings it maps */
	json_object_foreach(r->kept, old, v) {
		json_t *one = json_pack("{s:s}", old, old);

		if (one && rename_refs(doc, one) > 0)
			hit = old;
		json_decref(one);
		if (hit)
			break;
	}
	json_decref(doc);
	return hit;
}

/*
 * The strict-mode guard of replay_file (issue 32): a record that carries
 * its author's signature (r->sigs) is never given new bytes, which would
 * leave it unproven or proven by the joining clone's key instead.  When
 * the join would rename it (`have`: the remote holds its id with other
 * content), or rewrite it to name a renamed record (`orig` is not
 * `blob`), or it names a record kept aside so (r->kept), it is set aside
 * as it is, with its signature, and told as any record set aside is
 * (sync_escalate.h).  1 when that settles it,
 * 0 when the record goes on as before, or AMP_EIO.
 */
static int keep_signed(struct replay_ctx *r, amp_task_log *log, struct dir_index *ix,
		       const char *dir, amp_entry_kind kind, const char *idbuf,
		       const git_oid *orig, const git_oid *blob, const char *have, amp_error *err)
{
	char reason[600];
	const char *named = log ? names_kept(r, kind, idbuf, orig) : NULL;
	int status, is_signed = r->sigs && json_object_get(r->sigs, git_oid_tostr_s(orig));

	if (!log)
		return 0;
	if (named)
		snprintf(reason, sizeof(reason),
			 "it names %.200s, which this join set aside (the remote holds another record of that id)",
			 named);
	else if (!is_signed)
		return 0;
	else if (have && (kind == AMP_ENTRY_MSG || kind == AMP_ENTRY_CTL))
		snprintf(reason, sizeof(reason),
			 "the remote holds another record of id %.200s, and renamed, this one would lose its author's signature",
			 idbuf);
	else if (!git_oid_equal(orig, blob))
		snprintf(reason, sizeof(reason),
			 "it names a record this join renamed, and rewritten, it would lose its author's signature");
	else
		return 0;
	status = keep_aside(r, log, ix, dir, kind, idbuf, orig, reason, err);
	return status == AMP_ESCHEMA ? 0 : status < 0 ? status : 1;
}

/*
 * Adds to r->u record file `fname` of task dir `dir` of commit tree `ct`
 * (not a marker: replay_pair moves those), under the next free seq of
 * `ix`, the task's directory in `base`, the tree being built; skips it
 * when `base` already holds it with the same content.  A record of a
 * contested task (`log` not NULL) is placed by place_contested.  AMP_ERULE
 * with *c filled for a record `base` holds with other content that is not
 * set aside.
 */
static int replay_file(struct replay_ctx *r, amp_task_log *log, struct dir_index *ix,
		       const char *dir, git_tree *ct, git_tree *base, const char *fname,
		       struct conflict *c, amp_error *err)
{
	git_repository *repo = amp_store_repo(r->st);
	char path[AMP_PATH_MAX * 2], key[AMP_PATH_MAX], name[AMP_PATH_MAX];
	char hex[GIT_OID_HEXSZ + 1], idbuf[AMP_PATH_MAX], mkey[AMP_PATH_MAX];
	git_tree_entry *e = NULL;
	amp_entry_kind kind;
	const char *id, *have;
	size_t id_len;
	git_oid blob, orig;
	int status;

	if (amp_store_record_lookup(ct, dir, fname, &e, path, sizeof(path)) < 0) {
		git_error_clear(); /* removed, by hand: nothing to add */
		return AMP_OK;
	}
	git_oid_cpy(&blob, git_tree_entry_id(e));
	git_oid_cpy(&orig, &blob);
	git_tree_entry_free(e);
	amp_sync_record_key(fname, key, sizeof(key), NULL, &kind, &id, &id_len);
	if (id) {
		snprintf(idbuf, sizeof(idbuf), "%.*s", (int)id_len, id);
		if ((status = follow_renames(r, kind, idbuf, sizeof(idbuf), &blob, err)) < 0)
			return status;
		snprintf(key, sizeof(key), "%c:%.400s", (char)kind, idbuf);
	}
	git_oid_tostr(hex, sizeof(hex), &blob);
	have = json_string_value(json_object_get(ix->ids, key));
	if (have && !strcmp(have, hex))
		return AMP_OK; /* already there, byte for byte */
	/* The remote set this very record aside already (a hub's join of an
	 * inbox, or another clone's): kept there, nothing to add. */
	snprintf(mkey, sizeof(mkey), "c:" MARKER_PREFIX "%s", hex);
	if (json_object_get(ix->ids, mkey))
		return AMP_OK;
	/* A record its author signed is never given new bytes (strict
	 * mode): set aside as it is instead of renamed or rewritten. */
	if (id && (status = keep_signed(r, log, ix, dir, kind, idbuf, &orig, &blob, have, err)) != 0)
		return status < 0 ? status : AMP_OK;
	/* One id, two records: the local one is renamed. */
	if (have && id && (kind == AMP_ENTRY_MSG || kind == AMP_ENTRY_CTL)) {
		status = rename_record(r, ix, dir, kind, idbuf, sizeof(idbuf), &blob, err);
		if (status == AMP_EIO)
			return status;
		if (status == AMP_OK) {
			snprintf(key, sizeof(key), "%c:%.400s", (char)kind, idbuf);
			git_oid_tostr(hex, sizeof(hex), &blob);
			have = json_string_value(json_object_get(ix->ids, key));
			if (have)
				return AMP_OK; /* there already, renamed so */
		}
	}
	/* A record of a contested task takes its place after the remote's,
	 * if a rule lets it; else it is set aside. */
	if (log && id) {
		status = place_contested(r, log, ix, dir, base, kind, idbuf, &blob, fname, key, hex,
					 have, err);
		if (status != 0)
			return status < 0 ? status : AMP_OK;
	}
	if (have) {
		snprintf(c->local, sizeof(c->local), "%s", path);
		find_name(repo, base, dir, key, c->remote, sizeof(c->remote));
		git_oid_cpy(&c->blob, &blob);
		snprintf(c->id, sizeof(c->id), "%s", id && kind == AMP_ENTRY_MSG ? idbuf : "");
		return amp_error_set(err, AMP_ERULE, "",
				     "conflict: %s (local) and %s (remote) are the same record with different content",
				     c->local, c->remote);
	}
	if (!id)
		snprintf(name, sizeof(name), "%s", fname);
	else if (amp_store_entry_name(ix->next_seq++, kind, idbuf, name, sizeof(name)) < 0)
		return AMP_OK; /* cannot happen: it fitted before */
	json_object_set_new(ix->ids, key, json_string(hex));
	return amp_sync_add_update(r, dir, name, &blob, err);
}

/*
 * Takes the record signatures out of `names` (the files commit tree `ct`
 * adds to task `dir`; *n of them, compacted) into r->sigs, each by its
 * record's blob: what amp_sync_add_update adds beside a record it
 * re-commits unchanged.
 */
static int note_sigs(struct replay_ctx *r, git_tree *ct, const char *dir, const char **names,
		     size_t *n, amp_error *err)
{
	char path[AMP_PATH_MAX * 2], rec[AMP_PATH_MAX * 2], recname[AMP_PATH_MAX * 2];
	size_t i, k = 0;

	for (i = 0; i < *n; i++) {
		git_tree_entry *se = NULL, *re = NULL;

		if (amp_store_sig_record_path(names[i], recname, sizeof(recname)) < 0) {
			names[k++] = names[i];
			continue;
		}
		if (!r->sigs && !(r->sigs = json_object()))
			return amp_error_set(err, AMP_EIO, "", "out of memory");
		/* `dir` names the task: its record in either layout, the
		 * signature beside it (store.h "Layout") */
		if (amp_store_record_lookup(ct, dir, recname, &re, rec, sizeof(rec)) == 0 &&
		    amp_store_record_sig_path(rec, path, sizeof(path)) == 0 &&
		    git_tree_entry_bypath(&se, ct, path) == 0) {
			char rhex[GIT_OID_HEXSZ + 1], shex[GIT_OID_HEXSZ + 1];

			git_oid_tostr(rhex, sizeof(rhex), git_tree_entry_id(re));
			git_oid_tostr(shex, sizeof(shex), git_tree_entry_id(se));
			json_object_set_new(r->sigs, rhex, json_string(shex));
		}
		git_error_clear();
		git_tree_entry_free(se);
		git_tree_entry_free(re);
	}
	*n = k;
	return AMP_OK;
}

/*
 * Adds to r->u the records commit tree `ct` adds to its parent's `pt`
 * (NULL: a root commit), each under the next free seq of its task in
 * `base`, the tree being built (replay_file); a marker and the record it
 * sets aside move together (replay_pair).  AMP_ERULE with *c filled for a
 * record `base` holds with other content that is not set aside.
 */
static int replay_records(struct replay_ctx *r, git_tree *pt, git_tree *ct, git_tree *base,
			  struct conflict *c, amp_error *err)
{
	git_repository *repo = amp_store_repo(r->st);
	json_t *touched = json_object(), *files;
	const char *task, **names = NULL;
	char dir[AMP_PATH_MAX];
	struct dir_index ix = { NULL, 1 };
	int status = AMP_OK;

	if (!touched)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (amp_store_diff_tasks(repo, pt, ct, touched, -1) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot compare a commit with its parent");
		goto cleanup;
	}
	json_object_foreach(touched, task, files) {
		amp_task_log *log;
		size_t i, n = 0;

		if (!json_is_object(files)) {
			status = amp_error_set(err, AMP_EIO, "",
					       "the directory of task %s cannot be read", task);
			goto cleanup;
		}
		/* `dir` names the task (its directory is looked up in each
		 * tree's layout, store.h "Layout") */
		if (amp_store_task_dir(AMP_LAYOUT_FLAT, task, dir, sizeof(dir)) < 0)
			continue;
		snprintf(dir, sizeof(dir), "%s", task);
		if ((status = refuse_bad_names(repo, pt, ct, dir, err)) < 0)
			goto cleanup;
		json_decref(ix.ids);
		ix.ids = NULL;
		if ((status = amp_sync_index_dir(repo, base, dir, &ix, err)) < 0)
			goto cleanup;
		log = contested_log(r, task, base, &status, err);
		if (status < 0)
			goto cleanup;
		if (log && log->next_seq > ix.next_seq)
			ix.next_seq = log->next_seq;
		free(names);
		if (!(names = sorted_names(files, &n))) {
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
			goto cleanup;
		}
		/* Record signatures go with their records (amp_sync_add_update),
		 * so a marker and its record stay next to each other. */
		if ((status = note_sigs(r, ct, dir, names, &n, err)) < 0)
			goto cleanup;
		for (i = 0; i < n; i++) {
			/* A record set aside by an earlier join that was not
			 * pushed: it moves with its marker. */
			if (amp_sync_is_marker(names[i]) && i + 1 < n) {
				status = replay_pair(r, log, &ix, dir, ct, names[i], names[i + 1], err);
				i++;
			} else {
				status = replay_file(r, log, &ix, dir, ct, base, names[i], c, err);
			}
			if (status < 0)
				goto cleanup;
		}
	}
	if (status == AMP_OK)
		status = replay_registry(r, pt, ct, base, c, err);
cleanup:
	free(names);
	json_decref(ix.ids);
	json_decref(touched);
	return status;
}

/*
 * The walk both replays make: the first-parent commits of `local` that
 * `base` (NULL: none, the roots differ) does not reach, oldest first, each
 * given with its parent's tree (NULL for a root commit), re-committed onto
 * a tip that starts at `onto`.
 */
struct walker {
	git_repository *repo;
	const amp_signing *signing; /* the replays are signed as amp's writes are */
	git_revwalk *walk;
	git_signature *committer;
	git_commit *tip;        /* the commit built last (onto at first) */
	git_tree *tree;         /* its tree */
	git_commit *lc;         /* the local commit being replayed */
	git_commit *parent;
	git_tree *ct, *pt;      /* their trees */
	git_oid oid;            /* lc's id */
};

static void walker_drop_commit(struct walker *w)
{
	git_commit_free(w->lc);
	git_commit_free(w->parent);
	git_tree_free(w->ct);
	git_tree_free(w->pt);
	w->lc = w->parent = NULL;
	w->ct = w->pt = NULL;
}

static void walker_free(struct walker *w)
{
	walker_drop_commit(w);
	git_tree_free(w->tree);
	git_commit_free(w->tip);
	git_revwalk_free(w->walk);
	git_signature_free(w->committer);
	memset(w, 0, sizeof(*w));
}

static int walker_start(struct walker *w, amp_store *st, const git_oid *local,
			const git_oid *base, const git_oid *onto, amp_error *err)
{
	int64_t now_ms;
	int status;

	memset(w, 0, sizeof(*w));
	w->repo = amp_store_repo(st);
	w->signing = amp_store_signing(st);
	if ((status = amp_clock_now_ms(&now_ms, err)) < 0 ||
	    (status = amp_clock_check_commit(now_ms, err)) < 0)
		return status;
	if (git_signature_new(&w->committer, "amp", "amp@amp.invalid",
			      (git_time_t)(now_ms / 1000), 0) < 0 ||
	    amp_git_commit_lookup(&w->tip, w->repo, onto) < 0 ||
	    amp_git_commit_tree(&w->tree, w->tip) < 0 || git_revwalk_new(&w->walk, w->repo) < 0 ||
	    git_revwalk_sorting(w->walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE) < 0 ||
	    git_revwalk_simplify_first_parent(w->walk) < 0 ||
	    git_revwalk_push(w->walk, local) < 0 || (base && git_revwalk_hide(w->walk, base) < 0))
		return amp_error_git(err, AMP_EIO, "cannot walk the local history");
	return AMP_OK;
}

/* The next local commit into w->lc and its trees: 1, 0 when done, or
 * AMP_EIO. */
static int walker_next(struct walker *w, amp_error *err)
{
	walker_drop_commit(w);
	if (git_revwalk_next(&w->oid, w->walk) != 0) {
		git_error_clear();
		return 0;
	}
	amp_store_walk_step();
	if (amp_git_commit_lookup(&w->lc, w->repo, &w->oid) < 0 || amp_git_commit_tree(&w->ct, w->lc) < 0 ||
	    (git_commit_parentcount(w->lc) > 0 &&
	     (amp_git_commit_parent(&w->parent, w->lc, 0) < 0 ||
	      amp_git_commit_tree(&w->pt, w->parent) < 0)))
		return amp_error_git(err, AMP_EIO, "cannot read local commit %s",
				     git_oid_tostr_s(&w->oid));
	return 1;
}

/* Commits `u` onto the tip as the replay of w->lc: the same author, author
 * time and message (`message`, NULL: lc's own); only the parent, the
 * paths and the committer differ.  The commit becomes the tip. */
static int walker_commit(struct walker *w, const char *message, const struct updates *u,
			 amp_error *err)
{
	git_tree *nt = NULL;
	git_commit *next = NULL;
	git_oid tree_oid, next_oid;

	int status;

	if (git_tree_create_updated(&tree_oid, w->repo, w->tree, u->count, u->items) < 0 ||
	    amp_git_tree_lookup(&nt, w->repo, &tree_oid) < 0) {
		git_tree_free(nt);
		return amp_error_git(err, AMP_EIO, "cannot replay local commit %s",
				     git_oid_tostr_s(&w->oid));
	}
	if ((status = amp_sign_commit_create(w->repo, w->signing, &next_oid,
					     git_commit_author(w->lc), w->committer,
					     git_commit_message_encoding(w->lc),
					     message ? message : git_commit_message(w->lc), nt, 1,
					     (const git_commit **)&w->tip, err)) < 0) {
		git_tree_free(nt);
		return status;
	}
	if (amp_git_commit_lookup(&next, w->repo, &next_oid) < 0) {
		git_tree_free(nt);
		return amp_error_git(err, AMP_EIO, "cannot replay local commit %s",
				     git_oid_tostr_s(&w->oid));
	}
	git_commit_free(w->tip);
	git_tree_free(w->tree);
	w->tip = next;
	w->tree = nt;
	return AMP_OK;
}

/*
 * `msg` (a local commit's message) with each id r->renamed maps, as a whole
 * word, replaced by its new id: the Amp-Msg-Id: and Amp-Ack-For: trailers
 * name the records the commit adds (amp fsck checks it).  A new string, or
 * NULL when out of memory.
 */
static char *rename_message(const char *msg, json_t *renamed)
{
	size_t len = strlen(msg), cap = len + 1, n = 0;
	char *out = malloc(cap), *more;
	const char *p = msg, *old;
	json_t *to;

	if (!out)
		return NULL;
	while (*p) {
		const char *hit = NULL, *with = NULL;

		json_object_foreach(renamed, old, to) {
			size_t k = strlen(old);

			if (!strncmp(p, old, k) && !isalnum((unsigned char)p[k]) &&
			    (p == msg || !isalnum((unsigned char)p[-1]))) {
				hit = old;
				with = json_string_value(to);
				break;
			}
		}
		if (n + (with ? strlen(with) : 1) + 1 > cap) {
			cap = cap * 2 + (with ? strlen(with) : 0);
			if (!(more = realloc(out, cap))) {
				free(out);
				return NULL;
			}
			out = more;
		}
		if (hit) {
			memcpy(out + n, with, strlen(with));
			n += strlen(with);
			p += strlen(hit);
		} else {
			out[n++] = *p++;
		}
	}
	out[n] = '\0';
	return out;
}

/*
 * Replays the local commits (struct walker) onto `onto`; *out is the new
 * tip (`onto` when nothing was new), *replayed counts the records and
 * *superseded those set aside.  Records a rule refuses in their new place,
 * and those `aside` names (blob id -> the hub's reason; NULL: none), are
 * set aside and noted in `refused` (NULL: not noted).
 */
int amp_sync_replay(amp_store *st, amp_schema_set *set, const git_oid *local,
		    const git_oid *base, const git_oid *onto, json_t *refused, json_t *aside,
		    git_oid *out,
		    unsigned long *replayed, unsigned long *superseded, struct conflict *c,
		    amp_error *err)
{
	struct walker w;
	struct replay_ctx r;
	git_commit *bc = NULL, *lc = NULL;
	git_tree *bt = NULL;
	int64_t now_ms;
	char *message = NULL, *renamed_msg = NULL;
	const char *task;
	json_t *v;
	int status;

	memset(&r, 0, sizeof(r));
	r.layout = AMP_LAYOUT_FLAT;
	r.st = st;
	r.set = set;
	r.refused = refused;
	r.aside = aside;
	*replayed = *superseded = 0;
	if ((status = walker_start(&w, st, local, base, onto, err)) < 0 ||
	    (status = amp_clock_now_ms(&now_ms, err)) < 0)
		goto cleanup;
	amp_time_format(now_ms, r.now);
	r.now_ms = now_ms;
	if ((r.layout = amp_store_layout(st, w.tree, err)) < 0) {
		status = r.layout;
		goto cleanup;
	}
	if (!(r.contested = json_object())) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	/* The tasks the remote wrote since the histories parted. */
	if ((base && (amp_git_commit_lookup(&bc, w.repo, base) < 0 || amp_git_commit_tree(&bt, bc) < 0)) ||
	    amp_store_diff_tasks(w.repo, bt, w.tree, r.contested, -1) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot compare the remote's tip with the base");
		goto cleanup;
	}
	json_object_foreach(r.contested, task, v)
		json_object_set_new(r.contested, task, json_integer(0));
	if (amp_git_commit_lookup(&lc, w.repo, local) < 0 || amp_git_commit_tree(&r.local_tree, lc) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read the local tip");
		goto cleanup;
	}
	while ((status = walker_next(&w, err)) == 1) {
		const char *msg = git_commit_message(w.lc);
		size_t len, size;

		r.trailers[0] = '\0';
		r.escalation_files = 0;
		amp_commit_agent(w.lc, r.agent, sizeof(r.agent));
		status = replay_records(&r, w.pt, w.ct, w.tree, c, err);
		if (status == AMP_ERULE)
			git_oid_cpy(&c->commit, &w.oid);
		if (status < 0)
			goto cleanup;
		if (!r.u.count)
			continue;
		free(renamed_msg);
		renamed_msg = NULL;
		if (r.renamed && json_object_size(r.renamed)) {
			if (!(renamed_msg = rename_message(msg, r.renamed))) {
				status = amp_error_set(err, AMP_EIO, "", "out of memory");
				goto cleanup;
			}
			msg = renamed_msg;
		}
		len = strlen(msg);
		/* A trailer per record set aside or renamed. */
		free(message);
		size = len + strlen(r.trailers) + 2;
		if (!(message = malloc(size))) {
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
			goto cleanup;
		}
		snprintf(message, size, "%s%s%s", msg,
			 r.trailers[0] && len && msg[len - 1] != '\n' ? "\n" : "", r.trailers);
		if ((status = walker_commit(&w, message, &r.u, err)) < 0)
			goto cleanup;
		*replayed += r.u.count - r.escalation_files;
		amp_sync_updates_clear(&r.u);
	}
	if (status < 0)
		goto cleanup;
	*superseded = r.superseded;
	git_oid_cpy(out, git_commit_id(w.tip));
	status = AMP_OK;
cleanup:
	free(message);
	free(renamed_msg);
	git_tree_free(r.local_tree);
	git_commit_free(lc);
	replay_ctx_free(&r);
	git_tree_free(bt);
	git_commit_free(bc);
	walker_free(&w);
	return status;
}

/*
 * The errors ref's join: its files are logs, one directory per refusal
 * (errors/<day>/<unix_ms>-<blob>/...), so the join is a union by path.
 * Replays the local commits (struct walker) onto `onto`, each adding the
 * files the tree being built lacks; a path it holds with the same blob is
 * skipped, with another blob the local file gets the first free
 * "<dir>~<n>" (both logs stay).  *out is the new tip.
 */
int amp_sync_replay_union(amp_store *st, const git_oid *local, const git_oid *base,
			  const git_oid *onto, git_oid *out, amp_error *err)
{
	struct walker w;
	struct updates u = { NULL, 0, 0 };
	git_diff *diff = NULL;
	int status;

	if ((status = walker_start(&w, st, local, base, onto, err)) < 0)
		goto cleanup;
	while ((status = walker_next(&w, err)) == 1) {
		size_t i, n;

		git_diff_free(diff);
		diff = NULL;
		if (git_diff_tree_to_tree(&diff, w.repo, w.pt, w.ct, NULL) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot read local commit %s",
					       git_oid_tostr_s(&w.oid));
			goto cleanup;
		}
		n = git_diff_num_deltas(diff);
		for (i = 0; i < n; i++) {
			const git_diff_delta *d = git_diff_get_delta(diff, i);
			char path[AMP_PATH_MAX * 2];
			git_tree_entry *e = NULL;
			const char *slash = strrchr(d->new_file.path, '/');
			int k, same = 0;

			if (d->status != GIT_DELTA_ADDED)
				continue; /* the errors ref only appends */
			snprintf(path, sizeof(path), "%s", d->new_file.path);
			for (k = 1; k <= 1000; k++) {
				if (git_tree_entry_bypath(&e, w.tree, path) < 0) {
					git_error_clear();
					break;
				}
				same = git_oid_equal(git_tree_entry_id(e), &d->new_file.id);
				git_tree_entry_free(e);
				if (same || !slash)
					break;
				snprintf(path, sizeof(path), "%.*s~%d%s",
					 (int)(slash - d->new_file.path), d->new_file.path, k, slash);
			}
			if (same || k > 1000)
				continue;
			if (amp_sync_updates_add(&u, path, &d->new_file.id) < 0) {
				status = amp_error_set(err, AMP_EIO, "", "out of memory");
				goto cleanup;
			}
		}
		if (u.count && (status = walker_commit(&w, NULL, &u, err)) < 0)
			goto cleanup;
		amp_sync_updates_clear(&u);
	}
	if (status == 0) {
		git_oid_cpy(out, git_commit_id(w.tip));
		status = AMP_OK;
	}
cleanup:
	amp_sync_updates_clear(&u);
	free(u.items);
	git_diff_free(diff);
	walker_free(&w);
	return status;
}
