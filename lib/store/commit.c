/*
 * commit.c - a write's commit (store_int.h): the blobs of its files, the
 * trees along their one directory's path, the commit, signed in strict
 * mode, as is each record (recsig.h).  Objects go to whatever odb the repository has: the mempack of a
 * write or a batch (objects.c).
 */
#include "store_int.h"
#include "base/gitobj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/clock.h"

/* ---- writing ------------------------------------------------------------ */

/* Length of the directory part of path ("a/b/c.json" -> 3). */
static size_t dir_len(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? (size_t)(slash - path) : 0;
}

int amp_store_write_add(amp_store_write *w, const char *path, const char *data,
			size_t len, amp_error *err)
{
	char *copy;

	if (w->nfiles == AMP_WRITE_MAX_FILES)
		return amp_error_set(err, AMP_EIO, "", "too many files in one commit");
	/* One commit adds to one directory, or to two fan-out directories of
	 * one task (a marker and its record either side of a hundred): one
	 * path of trees to rewrite, or two.  All but the file name alike, or
	 * all but the last 6 bytes of the directory ("/ss/ss"). */
	if (w->nfiles && (dir_len(path) != dir_len(w->files[0].path) ||
			  (strncmp(path, w->files[0].path, dir_len(path)) &&
			   (dir_len(path) < 6 ||
			    strncmp(path, w->files[0].path, dir_len(path) - 6)))))
		return amp_error_set(err, AMP_EIO, "", "%s is not in the directory of %s",
				     path, w->files[0].path);
	if (!fits(snprintf(w->files[w->nfiles].path, AMP_PATH_MAX, "%s", path), AMP_PATH_MAX))
		return amp_error_set(err, AMP_EIO, "", "path too long: %s", path);
	if (!(copy = malloc(len + 1)))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	memcpy(copy, data, len);
	copy[len] = '\0';
	w->files[w->nfiles].data = copy;
	w->files[w->nfiles].len = len;
	w->nfiles++;
	return AMP_OK;
}

void amp_store_write_reset(amp_store_write *w)
{
	size_t i;

	for (i = 0; i < w->nfiles; i++)
		free(w->files[i].data);
	memset(w, 0, sizeof(*w));
}

/* git's order of the entries of a tree, for a name not yet in one: names
 * compared byte by byte, a subtree's as if it ended in '/' (what
 * git_tree_entry_cmp does for two entries). */
static int entry_order(const char *a, int atree, const char *b, int btree)
{
	size_t alen = strlen(a), blen = strlen(b), n = alen < blen ? alen : blen;
	int c = memcmp(a, b, n);

	if (c)
		return c;
	return (n < alen ? (unsigned char)a[n] : atree ? '/' : 0) -
	       (n < blen ? (unsigned char)b[n] : btree ? '/' : 0);
}

/* Names libgit2's treebuilder takes without a doubt: not empty, no '/',
 * not ".", ".." or ".git" (anything else is left to it). */
static int entry_name_valid(const char *name)
{
	return *name && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..") &&
	       strcasecmp(name, ".git");
}

/* Appends "<mode> <name>\0<id>" to buf; the mode in octal as git writes
 * it (no leading zero), by hand: snprintf was 2.5% of an import. */
static int put_entry(char **buf, size_t *len, size_t *alloc, unsigned mode,
		     const char *name, const git_oid *id)
{
	size_t name_len = strlen(name), need = *len + 8 + name_len + 1 + GIT_OID_RAWSZ;
	char digits[12], *grown;
	int n = 0;

	if (need > *alloc) {
		if (!(grown = realloc(*buf, need * 2)))
			return -1;
		*buf = grown;
		*alloc = need * 2;
	}
	do
		digits[n++] = (char)('0' + (mode & 7));
	while ((mode >>= 3) && n < 7);
	if (mode)
		return -1;
	while (n > 0)
		(*buf)[(*len)++] = digits[--n];
	(*buf)[(*len)++] = ' ';
	memcpy(*buf + *len, name, name_len + 1);
	*len += name_len + 1;
	memcpy(*buf + *len, id->id, GIT_OID_RAWSZ);
	*len += GIT_OID_RAWSZ;
	return 0;
}

/* An entry merge_write adds to a tree. */
struct new_entry {
	const char *name;
	const git_oid *id;
	unsigned mode;
};

/* 1 when the entries of `base` are in git's order (not made by hand). */
static int in_git_order(git_tree *base)
{
	size_t i, count = base ? git_tree_entrycount(base) : 0;

	for (i = 1; i < count; i++)
		if (git_tree_entry_cmp(git_tree_entry_byindex(base, i - 1),
				       git_tree_entry_byindex(base, i)) >= 0)
			return 0;
	return 1;
}

/*
 * Writes the tree `base` (NULL = empty, in git's order) with add[0..n)
 * (sorted in git's order, no two of one name) merged in, in one pass; an
 * entry of base named as one of add is replaced by it.  Hints the batch
 * (objects.c) that the new tree replaced base.
 */
static int merge_write(amp_store *st, git_tree *base, const struct new_entry *add, size_t n,
		       git_oid *out, amp_error *err)
{
	size_t i, j, k, count = base ? git_tree_entrycount(base) : 0, len = 0, alloc = 0;
	const git_tree_entry *e;
	git_odb *odb = NULL;
	char *buf = NULL;
	int rc = 0, status = AMP_OK;

	for (i = 0, j = 0; i < count || j < n;) {
		e = i < count ? git_tree_entry_byindex(base, i) : NULL;
		for (k = 0; e && k < n && strcmp(add[k].name, git_tree_entry_name(e)); k++)
			;
		if (e && k < n) { /* replaced */
			i++;
			continue;
		}
		if (j < n && (!e || entry_order(add[j].name, add[j].mode == GIT_FILEMODE_TREE,
						git_tree_entry_name(e),
						git_tree_entry_type(e) == GIT_OBJECT_TREE) < 0)) {
			rc = put_entry(&buf, &len, &alloc, add[j].mode, add[j].name, add[j].id);
			j++;
		} else {
			rc = put_entry(&buf, &len, &alloc, (unsigned)git_tree_entry_filemode_raw(e),
				       git_tree_entry_name(e), git_tree_entry_id(e));
			i++;
		}
		if (rc < 0) {
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
			goto cleanup;
		}
	}
	if (git_repository_odb(&odb, st->repo) < 0 ||
	    git_odb_write(out, odb, buf ? buf : "", len, GIT_OBJECT_TREE) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot write a tree");
		goto cleanup;
	}
	if (st->batch && base)
		amp_store_batch_hint(st, out, base);
cleanup:
	git_odb_free(odb);
	free(buf);
	return status;
}

/*
 * tree_insert's last step: the directory `base` (NULL = a new one) with the
 * files of `w` added, written as the entries of base and the new files
 * merged in git's order.  A task's directory holds all its records, and
 * libgit2's treebuilder hashed every entry of it into a map and sorted them
 * again for each send (a task of 1,000 records: 5.2M instructions, a tenth
 * of a send into it); the merge copies them in one pass.  A file already
 * there with the same content is not added again; with other content it is
 * refused (append-only).  Returns 1, having written nothing, when base is
 * not in git's order (made by hand) or a name is one git might refuse:
 * the treebuilder does those.
 */
static int leaf_write(amp_store *st, git_tree *base, const amp_store_write *w,
		      const git_oid *blobs, git_oid *out, amp_error *err)
{
	const char *names[AMP_WRITE_MAX_FILES];
	struct new_entry add[AMP_WRITE_MAX_FILES];
	size_t order[AMP_WRITE_MAX_FILES], nnew = 0, i, j, k;
	const git_tree_entry *e;

	if (!in_git_order(base))
		return 1;
	for (i = 0; i < w->nfiles; i++) {
		const char *file = w->files[i].path + dir_len(w->files[i].path);

		file += *file == '/';
		if (!entry_name_valid(file))
			return 1;
		e = base ? git_tree_entry_byname(base, file) : NULL;
		for (j = 0; !e && j < nnew && strcmp(names[order[j]], file); j++)
			;
		if ((e && !git_oid_equal(git_tree_entry_id(e), &blobs[i])) ||
		    (!e && j < nnew && !git_oid_equal(&blobs[order[j]], &blobs[i])))
			return amp_error_set(err, AMP_ERULE, "",
					     "append-only store: %s already exists",
					     w->files[i].path);
		if (e || j < nnew)
			continue; /* there already, or twice in w: once */
		names[i] = file;
		/* Insertion in git's order: a commit adds one to three files. */
		for (k = nnew; k > 0 && entry_order(names[order[k - 1]], 0, file, 0) > 0; k--)
			order[k] = order[k - 1];
		order[k] = i;
		nnew++;
	}
	for (k = 0; k < nnew; k++) {
		add[k].name = names[order[k]];
		add[k].id = &blobs[order[k]];
		add[k].mode = GIT_FILEMODE_BLOB;
	}
	return merge_write(st, base, add, nnew, out, err);
}

static int tree_insert(amp_store *st, git_tree *base, const char *dir,
		       const amp_store_write *w, const git_oid *blobs,
		       git_oid *out, amp_error *err);

/*
 * tree_insert's step down a directory: `base` with its entry named as the
 * first part of `dir` replaced by that subtree with the files added, merged
 * in one pass (merge_write).  libgit2's treebuilder put each of the
 * hundred entries of a shard tree in a map, sorted them and printed each
 * mode: a fifth of an import's instructions.  Returns 1, having written
 * nothing, where leaf_write would (the treebuilder does those).
 */
static int subtree_write(amp_store *st, git_tree *base, const char *dir,
			 const amp_store_write *w, const git_oid *blobs, git_oid *out,
			 amp_error *err)
{
	const char *slash = strchr(dir, '/');
	size_t len = slash ? (size_t)(slash - dir) : strlen(dir);
	const git_tree_entry *existing;
	struct new_entry add;
	git_tree *sub = NULL;
	git_oid sub_oid;
	char name[256];
	int status;

	if (len >= sizeof(name))
		return 1;
	memcpy(name, dir, len);
	name[len] = '\0';
	if (!entry_name_valid(name) || !in_git_order(base))
		return 1;
	existing = base ? git_tree_entry_byname(base, name) : NULL;
	if (existing && git_tree_entry_type(existing) == GIT_OBJECT_TREE &&
	    amp_git_tree_lookup(&sub, st->repo, git_tree_entry_id(existing)) < 0)
		return amp_error_git(err, AMP_EIO, "cannot read %s", name);
	status = tree_insert(st, sub, slash ? slash + 1 : "", w, blobs, &sub_oid, err);
	git_tree_free(sub);
	if (status < 0)
		return status;
	add.name = name;
	add.id = &sub_oid;
	add.mode = GIT_FILEMODE_TREE;
	return merge_write(st, base, &add, 1, out, err);
}

/*
 * Returns in *out the tree `base` (NULL = empty) with every file of `w`
 * added under `dir` (the files' common directory, relative to base),
 * rewriting only the trees along that one path.  Append-only: a name that
 * already holds a different object is refused.
 */

static int tree_insert(amp_store *st, git_tree *base, const char *dir,
		       const amp_store_write *w, const git_oid *blobs,
		       git_oid *out, amp_error *err)
{
	git_repository *repo = st->repo;
	const char *slash = strchr(dir, '/');
	git_treebuilder *tb = NULL;
	git_tree *sub = NULL;
	const git_tree_entry *existing;
	git_oid sub_oid;
	char name[256];
	size_t i;
	int status = AMP_OK;

	if (!*dir && (status = leaf_write(st, base, w, blobs, out, err)) != 1)
		return status;
	if (*dir && (status = subtree_write(st, base, dir, w, blobs, out, err)) != 1)
		return status;
	status = AMP_OK;
	if (git_treebuilder_new(&tb, repo, base) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot build a tree");
		goto cleanup;
	}
	if (!*dir) {
		for (i = 0; i < w->nfiles; i++) {
			const char *file = w->files[i].path + dir_len(w->files[i].path);

			file += *file == '/';
			existing = git_treebuilder_get(tb, file);
			if (existing && !git_oid_equal(git_tree_entry_id(existing), &blobs[i])) {
				status = amp_error_set(err, AMP_ERULE, "",
						       "append-only store: %s already exists",
						       w->files[i].path);
				goto cleanup;
			}
			if (!existing &&
			    git_treebuilder_insert(NULL, tb, file, &blobs[i], GIT_FILEMODE_BLOB) < 0) {
				status = amp_error_git(err, AMP_EIO, "cannot add %s", w->files[i].path);
				goto cleanup;
			}
		}
	} else {
		size_t len = slash ? (size_t)(slash - dir) : strlen(dir);

		if (!fits(snprintf(name, sizeof(name), "%.*s", (int)len, dir), sizeof(name))) {
			status = amp_error_set(err, AMP_EIO, "", "name too long: %.*s", (int)len, dir);
			goto cleanup;
		}
		existing = git_treebuilder_get(tb, name);
		if (existing && git_tree_entry_type(existing) == GIT_OBJECT_TREE &&
		    amp_git_tree_lookup(&sub, repo, git_tree_entry_id(existing)) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot read %s", name);
			goto cleanup;
		}
		if ((status = tree_insert(st, sub, slash ? slash + 1 : "", w, blobs,
					  &sub_oid, err)) < 0)
			goto cleanup;
		if (git_treebuilder_insert(NULL, tb, name, &sub_oid, GIT_FILEMODE_TREE) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot add %s", name);
			goto cleanup;
		}
	}
	if (git_treebuilder_write(out, tb) < 0)
		status = amp_error_git(err, AMP_EIO, "cannot write a tree");
	else if (st->batch && base)
		amp_store_batch_hint(st, out, base);
cleanup:
	git_tree_free(sub);
	git_treebuilder_free(tb);
	return status;
}

int amp_store_write_commit(amp_store *st, git_commit *parent, git_tree *base,
			   const amp_store_write *given, git_oid *out, amp_error *err)
{
	/* The files given and, in strict mode, each record's signature
	 * (recsig.h); only those added here are freed here. */
	amp_store_write signed_w = *given, *w = &signed_w;
	git_oid blobs[AMP_WRITE_MAX_FILES], tree_oid, next;
	git_oid group_blobs[AMP_WRITE_MAX_FILES];
	amp_store_write group; /* the files of one directory, borrowed */
	git_tree *tree = NULL, *next_tree = NULL;
	git_signature *author = NULL, *committer = NULL;
	char email[64], message[3072], dir[AMP_PATH_MAX];
	int64_t now_ms;
	size_t i;
	int status;

	if ((status = amp_clock_now_ms(&now_ms, err)) < 0 ||
	    (status = amp_clock_check_commit(w->time_ms ? w->time_ms : now_ms, err)) < 0)
		return status;
	for (i = 0; i < given->nfiles; i++) {
		char sigpath[AMP_PATH_MAX], *sig;
		size_t siglen;

		status = amp_store_record_sig_make(st, w->files[i].path, w->files[i].data,
						   w->files[i].len, sigpath, sizeof(sigpath), &sig,
						   &siglen, err);
		if (status == AMP_OK)
			status = amp_store_write_add(w, sigpath, sig, siglen, err);
		free(sig);
		if (status < 0)
			goto cleanup;
	}
	if (base && amp_git_tree_lookup(&tree, st->repo, git_tree_id(base)) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read the tip tree");
		goto cleanup;
	}
	for (i = 0; i < w->nfiles; i++)
		if (git_blob_create_from_buffer(&blobs[i], st->repo, w->files[i].data,
						w->files[i].len) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot write %s",
					       w->files[i].path);
			goto cleanup;
		}
	for (i = 0; i < w->nfiles; i += group.nfiles) {
		/* The files of one directory (amp_store_write_add): one pass. */
		size_t k;

		memset(&group, 0, sizeof(group));
		for (k = i; k < w->nfiles && dir_len(w->files[k].path) == dir_len(w->files[i].path) &&
			    !strncmp(w->files[k].path, w->files[i].path, dir_len(w->files[i].path)); k++) {
			group.files[group.nfiles] = w->files[k];
			group_blobs[group.nfiles++] = blobs[k];
		}
		/* Fits: files[].path has the same size. */
		snprintf(dir, sizeof(dir), "%.*s", (int)dir_len(w->files[i].path),
			 w->files[i].path);
		if ((status = tree_insert(st, tree, dir, &group, group_blobs, &tree_oid, err)) < 0)
			goto cleanup;
		if (amp_git_tree_lookup(&next_tree, st->repo, &tree_oid) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot read a new tree");
			goto cleanup;
		}
		git_tree_free(tree);
		tree = next_tree;
		next_tree = NULL;
	}
	if (w->replace) {
		git_tree_free(tree);
		tree = NULL;
		if (amp_git_tree_lookup(&tree, st->repo, &w->tree) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot read the new tree %s",
					       git_oid_tostr_s(&w->tree));
			goto cleanup;
		}
	}
	snprintf(email, sizeof(email), "%.31s@amp.invalid",
		 w->author[0] ? w->author : "system");
	/* A named instance signs as itself; the email keeps the role. */
	if (git_signature_new(&author, st->agent[0] ? st->agent : w->author[0] ? w->author : "system",
			      email, (git_time_t)((w->time_ms ? w->time_ms : now_ms) / 1000),
			      0) < 0 ||
	    /* An imported record's commit is dated by the record, as
	     * fast-import would date it: amp watch reads a record's arrival
	     * from its commit, and a year-old log is not a year late. */
	    git_signature_new(&committer, "amp", "amp@amp.invalid",
			      (git_time_t)((w->time_ms ? w->time_ms : now_ms) / 1000), 0) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot make a signature");
		goto cleanup;
	}
	snprintf(message, sizeof(message), "%s\n%s%s%s%s%s", w->subject,
		 w->trailers[0] || st->agent[0] ? "\n" : "", w->trailers,
		 st->agent[0] ? "Amp-Agent: " : "", st->agent, st->agent[0] ? "\n" : "");
	if ((status = amp_sign_commit_create(st->repo, &st->signing, &next, author, committer,
					     NULL, message, tree, parent ? 1 : 0,
					     (const git_commit **)&parent, err)) < 0)
		goto cleanup;
	git_oid_cpy(out, &next);
	status = AMP_OK;
cleanup:
	for (i = given->nfiles; i < w->nfiles; i++)
		free(w->files[i].data);
	git_signature_free(author);
	git_signature_free(committer);
	git_tree_free(next_tree);
	git_tree_free(tree);
	return status;
}
