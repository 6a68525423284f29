/*
 * arrivals.c - the hub's notes of when pushes arrived (arrivals.h).
 */
#include <errno.h>
#include "base/gitobj.h"
#include <inttypes.h>
#include <limits.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/tempfile.h"
#include "arrivals.h"

#define NOTE_KEY "Amp-Arrived-Ms: "
#define SEEN_KEY "Amp-Unseen-Ms: "
#define LOCAL_KEY "Amp-Local: "

/* How often a note is tried again when another hook moved the ref. */
#define ARRIVALS_TRIES 20

/*
 * The notes commit of `parent` (NULL: none) with note `text` on `commit`
 * at <2 hex digits>/<38> (git's fanout of notes, which git and libgit2
 * read), into *out: each note rewrites a root of at most 256 entries and
 * one small subtree, where libgit2's git_note_commit_create keeps one
 * tree that grows by an entry with every push.  0, or -1.
 */
static int write_notes(git_repository *repo, git_commit *parent, const git_oid *commit,
		       const char *text, const git_signature *sig, const char *msg, git_oid *out)
{
	git_tree *root = NULL, *sub = NULL, *tree = NULL;
	git_treebuilder *rb = NULL, *sb = NULL;
	const git_tree_entry *e;
	const git_commit *parents[1] = { parent };
	git_oid blob, sub_id, root_id;
	char hex[GIT_OID_HEXSZ + 1], dir[3];
	int rc = -1;

	git_oid_tostr(hex, sizeof(hex), commit);
	memcpy(dir, hex, 2);
	dir[2] = '\0';
	if (parent && amp_git_commit_tree(&root, parent) < 0)
		goto cleanup;
	if (root && (e = git_tree_entry_byname(root, dir)) &&
	    git_tree_entry_type(e) == GIT_OBJECT_TREE &&
	    amp_git_tree_lookup(&sub, repo, git_tree_entry_id(e)) < 0)
		goto cleanup;
	if (git_blob_create_from_buffer(&blob, repo, text, strlen(text)) < 0 ||
	    git_treebuilder_new(&sb, repo, sub) < 0 ||
	    git_treebuilder_insert(NULL, sb, hex + 2, &blob, GIT_FILEMODE_BLOB) < 0 ||
	    git_treebuilder_write(&sub_id, sb) < 0 ||
	    git_treebuilder_new(&rb, repo, root) < 0 ||
	    git_treebuilder_insert(NULL, rb, dir, &sub_id, GIT_FILEMODE_TREE) < 0 ||
	    git_treebuilder_write(&root_id, rb) < 0 ||
	    amp_git_tree_lookup(&tree, repo, &root_id) < 0 ||
	    git_commit_create(out, repo, NULL, sig, sig, NULL, msg, tree, parent ? 1 : 0, parents) < 0)
		goto cleanup;
	rc = 0;
cleanup:
	git_treebuilder_free(sb);
	git_treebuilder_free(rb);
	git_tree_free(tree);
	git_tree_free(sub);
	git_tree_free(root);
	return rc;
}

/* One try at noting `text` on `commit` in notes ref `name`, at ms: 1 when
 * written or there already, 0 when the ref moved, -1 on error. */
static int note_once(git_repository *repo, const char *name, const git_oid *commit,
		     const char *text, int64_t ms)
{
	git_reference *ref = NULL;
	git_commit *parent = NULL;
	git_note *old = NULL;
	git_signature *sig = NULL;
	git_oid notes, *had = NULL, had_id;
	char when[AMP_TIME_BUFSZ], msg[120];
	int rc = -1, got = git_reference_name_to_id(&had_id, repo, name);

	if (got == 0) {
		had = &had_id;
		if (amp_git_commit_lookup(&parent, repo, had) < 0)
			goto cleanup;
		if (git_note_commit_read(&old, repo, parent, commit) == 0) {
			rc = 1; /* the first arrival stands */
			goto cleanup;
		}
	} else if (got != GIT_ENOTFOUND) {
		goto cleanup;
	}
	snprintf(msg, sizeof(msg), "amp: noted %s", amp_time_format(ms, when));
	if (git_signature_new(&sig, "amp hook", "amp-hook@hub.invalid", (git_time_t)(ms / 1000), 0) < 0 ||
	    write_notes(repo, parent, commit, text, sig, msg, &notes) < 0)
		goto cleanup;
	/* Compare and swap: a hook that moved the ref first keeps its note. */
	if (had)
		got = git_reference_create_matching(&ref, repo, name, &notes, 1, had, msg);
	else
		got = git_reference_create(&ref, repo, name, &notes, 0, msg);
	rc = got == 0 ? 1 : (got == GIT_EMODIFIED || got == GIT_EEXISTS) ? 0 : -1;
cleanup:
	git_reference_free(ref);
	git_note_free(old);
	git_signature_free(sig);
	git_commit_free(parent);
	return rc;
}

/* note_once until it is not the ref that moved. */
static int note(git_repository *repo, const char *name, const git_oid *commit, const char *text,
		int64_t ms, amp_error *err)
{
	int i, rc = 0;

	for (i = 0; i < ARRIVALS_TRIES && (rc = note_once(repo, name, commit, text, ms)) == 0; i++)
		git_error_clear();
	if (rc == 1)
		return AMP_OK;
	if (rc < 0)
		return amp_error_git(err, AMP_EIO, "cannot note the arrival on %s", name);
	return amp_error_set(err, AMP_EIO, name, "moved by other writers %d times in a row",
			     ARRIVALS_TRIES);
}

int amp_arrivals_note(git_repository *repo, const git_oid *commit, int64_t ms, amp_error *err)
{
	char text[160], when[AMP_TIME_BUFSZ];

	snprintf(text, sizeof(text), NOTE_KEY "%" PRId64 "\nAmp-Arrived: %s\n", ms,
		 amp_time_format(ms, when));
	return note(repo, AMP_ARRIVALS_REF, commit, text, ms, err);
}

void amp_arrivals_open(amp_arrivals *a, git_repository *repo, const char *name)
{
	git_oid id;

	a->repo = repo;
	a->notes = NULL;
	if (git_reference_name_to_id(&id, repo, name) < 0 ||
	    amp_git_commit_lookup(&a->notes, repo, &id) < 0)
		a->notes = NULL;
	git_error_clear();
}

void amp_arrivals_close(amp_arrivals *a)
{
	git_commit_free(a->notes);
	a->notes = NULL;
}

/* The time after `key` at the start of a line of text, or -1 (hostile
 * input too: a clone takes the hub's notes as they come). */
static int64_t note_ms(const char *text, const char *key)
{
	const char *p;
	char *end;
	long long ms;

	if (!text || !(p = strstr(text, key)) || (p != text && p[-1] != '\n'))
		return -1;
	p += strlen(key);
	ms = strtoll(p, &end, 10);
	return end == p || *end != '\n' || ms < 0 || ms > AMP_CLOCK_MAX_SEC * 1000LL ? -1 : ms;
}

/* The note on `commit` in a's notes, NULL when none (free with
 * git_note_free). */
static git_note *read_note(const amp_arrivals *a, const git_oid *commit)
{
	git_note *note = NULL;

	if (!a->notes || git_note_commit_read(&note, a->repo, a->notes, commit) < 0) {
		git_error_clear();
		return NULL;
	}
	return note;
}

int64_t amp_arrivals_get(const amp_arrivals *a, const git_oid *commit)
{
	git_note *note = read_note(a, commit);
	int64_t ms = note ? note_ms(git_note_message(note), NOTE_KEY) : -1;

	git_note_free(note);
	return ms;
}

int amp_arrivals_get_seen(const amp_arrivals *a, const git_oid *commit, int64_t *unseen,
			  git_oid *local)
{
	git_note *note = read_note(a, commit);
	const char *text = note ? git_note_message(note) : NULL, *p;
	int found = 0;

	memset(local, 0, sizeof(*local));
	if (text && (*unseen = note_ms(text, SEEN_KEY)) >= 0) {
		found = 1;
		if ((p = strstr(text, "\n" LOCAL_KEY)) && strlen(p) > strlen(LOCAL_KEY) + GIT_OID_HEXSZ &&
		    git_oid_fromstrn(local, p + 1 + strlen(LOCAL_KEY), GIT_OID_HEXSZ) < 0)
			memset(local, 0, sizeof(*local));
	}
	git_error_clear();
	git_note_free(note);
	return found;
}

/* The path of this clone's memory of its fetches into buf. */
static void fetched_path(amp_store *st, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/first-seen.json", amp_store_state_dir(st));
}

/* Remembers this fetch of `key`, best effort: without it the next fetch
 * notes nothing (it knows no fetch before), and records count from their
 * commits, as before. */
static void remember_fetch(amp_store *st, json_t *all, const char *key, const git_oid *tip,
			   int64_t now)
{
	char path[PATH_MAX + 32], hex[GIT_OID_HEXSZ + 1];
	amp_tempfile t = { .fd = -1 };
	FILE *f;

	json_object_set_new(all, key, json_pack("{s:s,s:I}", "tip", git_oid_tostr(hex, sizeof(hex), tip),
						"at", (json_int_t)now));
	fetched_path(st, path, sizeof(path));
	if ((mkdir(amp_store_state_dir(st), 0777) < 0 && errno != EEXIST) ||
	    amp_tempfile_open(&t, path, 0) < 0 || !(f = amp_tempfile_stream(&t)) ||
	    json_dumpf(all, f, JSON_COMPACT) < 0 || amp_tempfile_commit(&t) < 0)
		amp_tempfile_rollback(&t);
}

int amp_arrivals_fetched(amp_store *st, const char *key, const git_oid *mirror_tip,
			 const git_oid *local_tip, int64_t now, amp_error *err)
{
	char path[PATH_MAX + 32], text[300], when[AMP_TIME_BUFSZ], hex[GIT_OID_HEXSZ + 1];
	json_t *all, *last;
	const char *tip;
	git_oid last_tip;
	int status = AMP_OK;

	fetched_path(st, path, sizeof(path));
	if (!(all = json_load_file(path, 0, NULL)) || !json_is_object(all)) {
		json_decref(all);
		all = json_object();
	}
	last = json_object_get(all, key);
	tip = json_string_value(json_object_get(last, "tip"));
	if (tip && json_is_integer(json_object_get(last, "at")) &&
	    json_integer_value(json_object_get(last, "at")) >= 0 &&
	    json_integer_value(json_object_get(last, "at")) <= now &&
	    git_oid_fromstr(&last_tip, tip) == 0 && !git_oid_equal(&last_tip, mirror_tip)) {
		snprintf(text, sizeof(text), SEEN_KEY "%" JSON_INTEGER_FORMAT "\n" LOCAL_KEY "%s\nAmp-Seen: %s\n",
			 json_integer_value(json_object_get(last, "at")),
			 local_tip ? git_oid_tostr(hex, sizeof(hex), local_tip) : "none",
			 amp_time_format(now, when));
		status = note(amp_store_repo(st), AMP_FIRST_SEEN_REF, mirror_tip, text, now, err);
	}
	git_error_clear();
	if (status == AMP_OK)
		remember_fetch(st, all, key, mirror_tip, now);
	json_decref(all);
	return status;
}

int amp_arrivals_take(git_repository *repo, const char *mirror, amp_error *err)
{
	git_reference *ref = NULL;
	git_oid id;

	if (git_reference_name_to_id(&id, repo, mirror) < 0) {
		git_error_clear();
		return AMP_OK;
	}
	if (git_reference_create(&ref, repo, AMP_ARRIVALS_REF, &id, 1, "amp sync: the hub's arrivals") < 0)
		return amp_error_git(err, AMP_EIO, "cannot update %s", AMP_ARRIVALS_REF);
	git_reference_free(ref);
	return AMP_OK;
}
