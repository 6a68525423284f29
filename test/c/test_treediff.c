/* test_treediff.c - the one walker of two trees (store.h amp_tree_diff_walk)
 * and the one FNV-1a (base/hash.h), on their edges: what is visited, in
 * which order, at which depth, what GONE, `modes`, SKIP, a stop and an
 * unreadable subtree do, and a path too long for AMP_PATH_MAX. */
#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "store/store.h"
#include "tap.h"

/* What a walk visited, as "<depth>:<path>:<a><b> " (a, b: 1 when the side
 * has the entry), and how the visitor answers. */
struct seen {
	char log[4096];
	int answer;         /* returned for a tree (SKIP for a file) */
	const char *stop;   /* a path whose visit returns -7 */
	size_t last_len;    /* path_len of the last visit */
	size_t last_strlen; /* strlen(path) of the last visit */
	int unreadable;     /* calls of the unreadable callback */
	char unreadable_path[64];
};

static int visit(amp_tree_diff *d, const amp_tree_diff_entry *e)
{
	struct seen *s = d->ctx;
	size_t n = strlen(s->log);
	const git_tree_entry *x = e->b ? e->b : e->a;

	snprintf(s->log + n, sizeof(s->log) - n, "%d:%s:%d%d ", e->depth,
		 e->path_len < 40 ? e->path : "(long)", !!e->a, !!e->b);
	s->last_len = e->path_len;
	s->last_strlen = strlen(e->path);
	if (s->stop && !strcmp(e->path, s->stop))
		return -7;
	return git_tree_entry_type(x) == GIT_OBJECT_TREE ? s->answer : AMP_TREE_DIFF_SKIP;
}

static int unreadable(amp_tree_diff *d, const amp_tree_diff_entry *e)
{
	struct seen *s = d->ctx;

	s->unreadable++;
	snprintf(s->unreadable_path, sizeof(s->unreadable_path), "%s", e->path);
	git_error_clear();
	return 0;
}

/* A tree of up to four entries "name" -> (mode, id); NULL ends. */
static int tree(git_repository *repo, git_oid *out, const char *n1, unsigned m1, const git_oid *i1,
		const char *n2, unsigned m2, const git_oid *i2, const char *n3, unsigned m3,
		const git_oid *i3, const char *n4, unsigned m4, const git_oid *i4)
{
	const char *names[4] = { n1, n2, n3, n4 };
	unsigned modes[4] = { m1, m2, m3, m4 };
	const git_oid *ids[4] = { i1, i2, i3, i4 };
	git_treebuilder *tb = NULL;
	int i, rc = git_treebuilder_new(&tb, repo, NULL);

	for (i = 0; rc == 0 && i < 4 && names[i]; i++)
		rc = git_treebuilder_insert(NULL, tb, names[i], ids[i], (git_filemode_t)modes[i]);
	if (rc == 0)
		rc = git_treebuilder_write(out, tb);
	git_treebuilder_free(tb);
	return rc;
}

static int walk(git_repository *repo, const git_oid *a, const git_oid *b, int modes, int how,
		int with_unreadable, struct seen *s, int *rc)
{
	git_tree *ta = NULL, *tb = NULL;
	amp_tree_diff d = { repo, modes, visit, with_unreadable ? unreadable : NULL, s };

	s->log[0] = '\0';
	s->unreadable = 0;
	if ((a && git_tree_lookup(&ta, repo, a) < 0) || (b && git_tree_lookup(&tb, repo, b) < 0))
		return -1;
	*rc = amp_tree_diff_walk(&d, ta, tb, "", 0, how);
	git_tree_free(ta);
	git_tree_free(tb);
	return 0;
}

static void test_fnv(void)
{
	/* FNV's own test vectors (64-bit FNV-1a). */
	ok(amp_fnv1a(AMP_FNV1A_BASIS, "", 0) == 0xcbf29ce484222325ULL &&
	   amp_fnv1a(AMP_FNV1A_BASIS, "a", 1) == 0xaf63dc4c8601ec8cULL &&
	   amp_fnv1a(AMP_FNV1A_BASIS, "foobar", 6) == 0x85944171f73967e8ULL,
	   "amp_fnv1a gives FNV-1a's published 64-bit values");
	ok(amp_fnv1a_str(AMP_FNV1A_BASIS, "foobar") == 0x85944171f73967e8ULL &&
	   amp_fnv1a(amp_fnv1a(AMP_FNV1A_BASIS, "foo", 3), "bar", 3) == 0x85944171f73967e8ULL,
	   "amp_fnv1a_str hashes a string alike, and a hash continues from where it stopped");
}

static void test_walk(void)
{
	char dir[] = "/tmp/amp-test-treediff-XXXXXX", obj[4200], hex[GIT_OID_HEXSZ + 1];
	char longname[301];
	git_repository *repo = NULL;
	git_oid b1, b2, b2x, b3, b4, b5, b6, b7, ax, bx, same, gone, nw, ta, tb, l1, l2, tl;
	struct seen s = { .answer = AMP_TREE_DIFF_DESCEND };
	int made = mkdtemp(dir) != NULL, rc = 0;

	memset(longname, 'n', 300);
	longname[300] = '\0';
	if (!made || git_repository_init(&repo, dir, 1) < 0 ||
	    git_blob_create_from_buffer(&b1, repo, "1", 1) < 0 ||
	    git_blob_create_from_buffer(&b2, repo, "2", 1) < 0 ||
	    git_blob_create_from_buffer(&b2x, repo, "2x", 2) < 0 ||
	    git_blob_create_from_buffer(&b3, repo, "3", 1) < 0 ||
	    git_blob_create_from_buffer(&b4, repo, "4", 1) < 0 ||
	    git_blob_create_from_buffer(&b5, repo, "5", 1) < 0 ||
	    git_blob_create_from_buffer(&b6, repo, "6", 1) < 0 ||
	    git_blob_create_from_buffer(&b7, repo, "7", 1) < 0 ||
	    /* a: x/{f1,f2} same/{g} gone/{h} m;  b: x/{f1,f2',f3} same/{g} new/{k} m (+x) */
	    tree(repo, &ax, "f1", 0100644, &b1, "f2", 0100644, &b2, NULL, 0, NULL, NULL, 0, NULL) < 0 ||
	    tree(repo, &bx, "f1", 0100644, &b1, "f2", 0100644, &b2x, "f3", 0100644, &b6, NULL, 0, NULL) < 0 ||
	    tree(repo, &same, "g", 0100644, &b3, NULL, 0, NULL, NULL, 0, NULL, NULL, 0, NULL) < 0 ||
	    tree(repo, &gone, "h", 0100644, &b4, NULL, 0, NULL, NULL, 0, NULL, NULL, 0, NULL) < 0 ||
	    tree(repo, &nw, "k", 0100644, &b7, NULL, 0, NULL, NULL, 0, NULL, NULL, 0, NULL) < 0 ||
	    tree(repo, &ta, "x", 040000, &ax, "same", 040000, &same, "gone", 040000, &gone, "m",
		 0100644, &b5) < 0 ||
	    tree(repo, &tb, "x", 040000, &bx, "same", 040000, &same, "new", 040000, &nw, "m",
		 0100755, &b5) < 0 ||
	    tree(repo, &l1, longname, 0100644, &b1, NULL, 0, NULL, NULL, 0, NULL, NULL, 0, NULL) < 0 ||
	    tree(repo, &l2, longname, 040000, &l1, NULL, 0, NULL, NULL, 0, NULL, NULL, 0, NULL) < 0 ||
	    tree(repo, &tl, "top", 040000, &l2, NULL, 0, NULL, NULL, 0, NULL, NULL, 0, NULL) < 0) {
		ok(0, "trees for the walker's tests");
		goto cleanup;
	}

	ok(walk(repo, &ta, &tb, 0, 0, 0, &s, &rc) == 0 && rc == 0 &&
	   !strcmp(s.log, "0:new:01 1:new/k:01 0:x:11 1:x/f2:11 1:x/f3:01 "),
	   "b's entries that differ, in b's order, each subtree after its entry; same ids and a mode alone are passed over");
	ok(walk(repo, &ta, &tb, 1, 0, 0, &s, &rc) == 0 && rc == 0 &&
	   !strcmp(s.log, "0:m:11 0:new:01 1:new/k:01 0:x:11 1:x/f2:11 1:x/f3:01 "),
	   "with modes, an entry whose mode alone changed is visited");
	s.answer = AMP_TREE_DIFF_DESCEND | AMP_TREE_DIFF_GONE;
	ok(walk(repo, &ta, &tb, 0, AMP_TREE_DIFF_GONE, 0, &s, &rc) == 0 && rc == 0 &&
	   !strcmp(s.log, "0:new:01 1:new/k:01 0:x:11 1:x/f2:11 1:x/f3:01 0:gone:10 1:gone/h:10 "),
	   "with GONE, a's entries that b lacks come after b's, their subtrees walked against nothing");
	s.answer = AMP_TREE_DIFF_DESCEND;
	ok(walk(repo, &ta, &tb, 0, AMP_TREE_DIFF_GONE, 0, &s, &rc) == 0 && rc == 0 &&
	   !strcmp(s.log, "0:new:01 1:new/k:01 0:x:11 1:x/f2:11 1:x/f3:01 0:gone:10 "),
	   "GONE holds where it was asked: a subtree walked without it lists b's side only");
	s.answer = AMP_TREE_DIFF_SKIP;
	ok(walk(repo, &ta, &tb, 0, 0, 0, &s, &rc) == 0 && rc == 0 && !strcmp(s.log, "0:new:01 0:x:11 "),
	   "SKIP reads no subtree");
	s.answer = AMP_TREE_DIFF_DESCEND;
	s.stop = "x/f2";
	ok(walk(repo, &ta, &tb, 0, 0, 0, &s, &rc) == 0 && rc == -7 &&
	   !strcmp(s.log, "0:new:01 1:new/k:01 0:x:11 1:x/f2:11 "),
	   "a visitor's negative answer stops the walk and is its result");
	s.stop = NULL;
	ok(walk(repo, NULL, NULL, 0, AMP_TREE_DIFF_GONE, 0, &s, &rc) == 0 && rc == 0 && !s.log[0] &&
	   walk(repo, &ta, &ta, 1, AMP_TREE_DIFF_GONE, 0, &s, &rc) == 0 && rc == 0 && !s.log[0],
	   "two empty trees, and a tree against itself, visit nothing");
	ok(walk(repo, NULL, &tl, 0, 0, 0, &s, &rc) == 0 && rc == 0 &&
	   s.last_len == 3 + 1 + 300 + 1 + 300 && s.last_strlen == AMP_PATH_MAX - 1 &&
	   !strcmp(s.log, "0:top:01 1:(long):01 2:(long):01 "),
	   "a path past AMP_PATH_MAX is cut, and path_len says how long it is");

	/* x of b, unreadable: its loose object removed */
	git_oid_tostr(hex, sizeof(hex), &bx);
	snprintf(obj, sizeof(obj), "%s/objects/%.2s/%s", git_repository_path(repo), hex, hex + 2);
	git_repository_free(repo);
	repo = NULL;
	if (unlink(obj) < 0 || git_repository_open(&repo, dir) < 0) {
		ok(0, "a tree made unreadable");
		goto cleanup;
	}
	ok(walk(repo, &ta, &tb, 0, 0, 0, &s, &rc) == 0 && rc == -1 &&
	   !strcmp(s.log, "0:new:01 1:new/k:01 0:x:11 "),
	   "a subtree that cannot be read ends the walk in -1 without an unreadable callback");
	ok(walk(repo, &ta, &tb, 0, 0, 1, &s, &rc) == 0 && rc == 0 && s.unreadable == 1 &&
	   !strcmp(s.unreadable_path, "x") && !strcmp(s.log, "0:new:01 1:new/k:01 0:x:11 "),
	   "the unreadable callback gets the entry, and its 0 lets the walk go on");
cleanup:
	git_repository_free(repo);
	if (made)
		tap_remove_dir(dir);
}

int main(void)
{
	git_libgit2_init();
	test_fnv();
	test_walk();
	git_libgit2_shutdown();
	return tap_done();
}
