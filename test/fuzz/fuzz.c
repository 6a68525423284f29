/* fuzz.c - the shared setup of the fuzz targets (see fuzz.h). */
#define _GNU_SOURCE /* memmem */
#include <ftw.h>
#include <git2.h>
#include <git2/sys/mempack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "base/util.h"

static char tree[4096];
static amp_schema_set *schemas;
static amp_store *store;
static git_odb_backend *mempack;
static git_oid first_messages, first_errors;
static char scratch[4096], scratch_file[4200];

void fuzz_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static int is_tree(const char *dir)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/schemas/message.schema.json", dir);
	return access(path, R_OK) == 0;
}

/* The executable sits in build/fuzz/, build/test/ or build/asan/test/:
 * the tree is one to three levels above its directory. */
static int find_tree(void)
{
	const char *env = getenv("AMP_SCHEMA_DIR");
	char dir[4096], *slash;
	int up;

	if (env && *env) {
		snprintf(dir, sizeof(dir), "%s/..", env);
		if (is_tree(dir) && realpath(dir, tree))
			return 0;
	}
	if (amp_exe_dir(dir, sizeof(dir)) < 0)
		return -1;
	for (up = 0; up < 4; up++) {
		if (is_tree(dir) && realpath(dir, tree))
			return 0;
		if (!(slash = strrchr(dir, '/')) || slash == dir)
			return -1;
		*slash = '\0';
	}
	return -1;
}

void fuzz_env(void)
{
	char dir[4200];

	if (find_tree() < 0) {
		fprintf(stderr, "fuzz: cannot find the source tree (set AMP_SCHEMA_DIR)\n");
		exit(2);
	}
	snprintf(dir, sizeof(dir), "%s/schemas", tree);
	if (!getenv("AMP_SCHEMA_DIR") || !*getenv("AMP_SCHEMA_DIR"))
		setenv("AMP_SCHEMA_DIR", dir, 1);
	setenv("AMP_NOW", FUZZ_NOW, 1);
	/* A role from the environment would change what `amp send` builds. */
	unsetenv("AMP_ROLE");
	unsetenv("AMP_REPO");
}

const char *fuzz_tree(void) { return tree; }

static void free_schemas(void)
{
	amp_schema_set_free(schemas);
	schemas = NULL;
}

amp_schema_set *fuzz_schemas(void)
{
	amp_error err;

	if (schemas)
		return schemas;
	if (amp_schema_set_load_amp(&schemas, NULL, &err) < 0) {
		fprintf(stderr, "fuzz: cannot load the schemas: %s\n", err.message);
		exit(2);
	}
	atexit(free_schemas);
	return schemas;
}

static int remove_one(const char *path, const struct stat *sb, int flag,
		      struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Only the process that made the scratch directory removes it: replay.c
 * forks a child per input, and the children share it. */
static pid_t owner;

static void drop_repo(void)
{
	amp_store_free(store);
	store = NULL;
	if (owner == getpid() && scratch[0])
		nftw(scratch, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void git_die(const char *what)
{
	const git_error *e = git_error_last();

	fprintf(stderr, "fuzz: %s: %s\n", what, e ? e->message : "?");
	exit(2);
}

amp_store *fuzz_repo(void)
{
	const char *tmp = getenv("TMPDIR");
	git_repository *repo = NULL;
	git_odb *odb = NULL;
	amp_error err;

	if (store)
		return store;
	/* A memory file system when there is one: every input moves two refs
	 * on disk, and tmpfs makes the targets about twice as fast. */
	if (!tmp || !*tmp)
		tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(scratch, sizeof(scratch), "%s/amp-fuzz-XXXXXX", tmp);
	if (!mkdtemp(scratch)) {
		perror("fuzz: mkdtemp");
		exit(2);
	}
	owner = getpid();
	atexit(drop_repo);
	snprintf(scratch_file, sizeof(scratch_file), "%s/input.json", scratch);
	git_libgit2_init();
	if (git_repository_init(&repo, scratch, 1) < 0)
		git_die("git init");
	git_repository_free(repo);
	git_libgit2_shutdown();
	if (amp_store_open(&store, scratch, &err) < 0 ||
	    amp_store_init(store, NULL, &err) < 0) {
		fprintf(stderr, "fuzz: amp init: %s\n", err.message);
		exit(2);
	}
	repo = amp_store_repo(store);
	if (git_reference_name_to_id(&first_messages, repo, amp_store_messages_ref(store)) < 0 ||
	    git_reference_name_to_id(&first_errors, repo, amp_store_errors_ref(store)) < 0)
		git_die("read the refs");
	/* Everything written from now on stays in memory: the highest
	 * priority backend that can write takes every write. */
	if (git_repository_odb(&odb, repo) < 0 || git_mempack_new(&mempack) < 0 ||
	    git_odb_add_backend(odb, mempack, 1000) < 0)
		git_die("in-memory object database");
	git_odb_free(odb);
	return store;
}

void fuzz_repo_reset(void)
{
	git_repository *repo = amp_store_repo(fuzz_repo());
	git_reference *ref = NULL;

	if (git_reference_create(&ref, repo, amp_store_messages_ref(store),
				 &first_messages, 1, NULL) < 0)
		git_die("reset the messages ref");
	git_reference_free(ref);
	if (git_reference_create(&ref, repo, amp_store_errors_ref(store),
				 &first_errors, 1, NULL) < 0)
		git_die("reset the errors ref");
	git_reference_free(ref);
	/* amp watch's memory of the last intact tip names objects of the
	 * input before: it goes with them (a fresh clone has none). */
	if (git_reference_lookup(&ref, repo, "refs/amp-seen/messages") == 0 &&
	    git_reference_delete(ref) < 0)
		git_die("reset refs/amp-seen/messages");
	git_reference_free(ref);
	git_error_clear();
	if (git_mempack_reset(mempack) < 0)
		git_die("reset the in-memory objects");
}

const char *fuzz_scratch_file(void)
{
	fuzz_repo();
	return scratch_file;
}

void fuzz_split(const uint8_t *data, size_t size, size_t max,
		int (*fn)(const char *part, size_t len, void *ctx), void *ctx)
{
	const char *p = (const char *)data, *end = p + size, *sep;
	size_t seplen = strlen(FUZZ_SEP), n = 0;

	while (n++ < max) {
		sep = memmem(p, (size_t)(end - p), FUZZ_SEP, seplen);
		if (fn(p, (size_t)((sep ? sep : end) - p), ctx) || !sep)
			return;
		p = sep + seplen;
	}
}
