/*
 * bench-floor.c - the floor of share/bench-table.sh: one libgit2 process
 * writing N records in a loop, each a blob at the path amp would use, a
 * commit on the previous tip and a compare-and-swap move of the ref; no
 * schema, no rules, no process start.  Prints the mean milliseconds per
 * record.  Usage: bench-floor REPO N RECORD.json
 */
#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void check(int rc, const char *what)
{
	if (rc < 0) {
		const git_error *e = git_error_last();

		fprintf(stderr, "bench-floor: %s: %s\n", what, e ? e->message : "failed");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	git_repository *repo;
	git_signature *sig;
	git_oid tip, blob, tree_id, next;
	git_commit *parent;
	git_tree *tree, *new_tree;
	git_reference *ref;
	struct timespec t0, t1;
	char path[128], *buf;
	long n, i, len;
	FILE *f;

	if (argc != 4)
		return 2;
	n = atol(argv[2]);
	if (!(f = fopen(argv[3], "rb")) || fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) < 0)
		return 1;
	rewind(f);
	if (!(buf = malloc((size_t)len + 64)) || fread(buf, 1, (size_t)len, f) != (size_t)len)
		return 1;
	fclose(f);
	git_libgit2_init();
	check(git_repository_open(&repo, argv[1]), "open");
	check(git_signature_now(&sig, "floor", "floor@amp.invalid"), "signature");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++) {
		git_tree_update up;
		/* every record differs, as every message does */
		int extra = snprintf(buf + len, 64, " %ld", i);

		check(git_reference_name_to_id(&tip, repo, "refs/amp/floor"), "tip");
		check(git_commit_lookup(&parent, repo, &tip), "commit");
		check(git_commit_tree(&tree, parent), "tree");
		check(git_blob_create_from_buffer(&blob, repo, buf, (size_t)(len + extra)), "blob");
		snprintf(path, sizeof(path), "tasks/2029/%ld/T-2029-%06ld/000001.msg.floor-%ld.json",
			 i / 100, i, i);
		up.action = GIT_TREE_UPDATE_UPSERT;
		git_oid_cpy(&up.id, &blob);
		up.filemode = GIT_FILEMODE_BLOB;
		up.path = path;
		check(git_tree_create_updated(&tree_id, repo, tree, 1, &up), "tree update");
		check(git_tree_lookup(&new_tree, repo, &tree_id), "new tree");
		check(git_commit_create(&next, repo, NULL, sig, sig, NULL, "floor", new_tree, 1,
					(const git_commit **)&parent), "commit create");
		check(git_reference_create_matching(&ref, repo, "refs/amp/floor", &next, 1, &tip,
						    "floor"), "update ref");
		git_reference_free(ref);
		git_tree_free(new_tree);
		git_tree_free(tree);
		git_commit_free(parent);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.3f\n", ((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6) / (double)n);
	git_signature_free(sig);
	git_repository_free(repo);
	free(buf);
	git_libgit2_shutdown();
	return 0;
}
