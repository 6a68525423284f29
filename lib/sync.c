/*
 * sync.c - fetch, join and push the SSOT through a git remote (sync.h).
 *
 * Transport is the user's own `git` program, run with an argv (never a
 * shell): ssh agents, credential helpers, insteadOf and proxies work as
 * they do for the user's other repositories.  Everything else (the join,
 * the compare-and-swap of the local ref) is libgit2, in process.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "sync.h"
#include "util.h"

extern char **environ;

/* ---- running git ---------------------------------------------------------- */

/*
 * Runs `git --git-dir=<repo> <args...>` (args NULL-terminated), stdin from
 * /dev/null, stderr passed through (git's own reasons reach the user), and
 * stdout captured into *out (malloc'd, NUL-terminated; the caller frees)
 * when out is not NULL, else sent to stderr so that amp's stdout stays its
 * result alone.  *code is git's exit status (128 + signal when killed).
 * Returns AMP_OK when git ran, AMP_EIO when it could not be started.
 */
static int run_git(amp_store *st, const char *const *args, char **out,
		   int *code, amp_error *err)
{
	posix_spawn_file_actions_t fa;
	const char *argv[32];
	char gitdir[4096 + 16];
	int pipefd[2] = { -1, -1 }, status = AMP_OK, ws, fa_ready = 0;
	size_t n = 0, len = 0, cap = 0;
	char *buf = NULL;
	pid_t pid;

	*code = -1;
	if (out)
		*out = NULL;
	snprintf(gitdir, sizeof(gitdir), "--git-dir=%s",
		 git_repository_path(amp_store_repo(st)));
	argv[n++] = "git";
	argv[n++] = gitdir;
	while (*args && n < sizeof(argv) / sizeof(argv[0]) - 1)
		argv[n++] = *args++;
	argv[n] = NULL;
	if (out && pipe(pipefd) < 0)
		return amp_error_set(err, AMP_EIO, "", "cannot make a pipe: %s",
				     strerror(errno));
	if (posix_spawn_file_actions_init(&fa) != 0) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	fa_ready = 1;
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (out) {
		posix_spawn_file_actions_addclose(&fa, pipefd[0]);
		posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
		posix_spawn_file_actions_addclose(&fa, pipefd[1]);
	} else {
		posix_spawn_file_actions_adddup2(&fa, 2, 1);
	}
	if ((errno = posix_spawnp(&pid, "git", &fa, NULL, (char *const *)argv,
				  environ)) != 0) {
		status = amp_error_set(err, AMP_EIO, "", "cannot run git: %s",
				       strerror(errno));
		goto cleanup;
	}
	if (out) {
		close(pipefd[1]);
		pipefd[1] = -1;
		for (;;) {
			ssize_t got;

			if (cap - len < 4096) {
				char *more = realloc(buf, cap = cap ? cap * 2 : 8192);

				if (!more) {
					status = amp_error_set(err, AMP_EIO, "", "out of memory");
					break; /* still reap the child below */
				}
				buf = more;
			}
			got = read(pipefd[0], buf + len, cap - len - 1);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
				break;
			len += (size_t)got;
		}
		close(pipefd[0]);
		pipefd[0] = -1;
	}
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	*code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	if (out && status == AMP_OK) {
		if (!buf && !(buf = malloc(1))) {
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
			goto cleanup;
		}
		buf[len] = '\0';
		*out = buf;
		buf = NULL;
	}
cleanup:
	if (fa_ready)
		posix_spawn_file_actions_destroy(&fa);
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	free(buf);
	return status;
}

/* ---- names ------------------------------------------------------------------ */

int amp_sync_remote(amp_store *st, const char *given, char *buf, size_t bufsz,
		    amp_error *err)
{
	if (given)
		snprintf(buf, bufsz, "%s", given);
	else if (!amp_store_config(st, "amp.remote", buf, bufsz))
		snprintf(buf, bufsz, "origin");
	if (!*buf)
		return amp_error_set(err, AMP_EUSAGE, "", "the remote is empty");
	if (strlen(buf) + 1 >= bufsz)
		return amp_error_set(err, AMP_EUSAGE, "", "the remote is longer than %zu bytes",
				     bufsz - 2);
	/* git would read it as an option. */
	if (buf[0] == '-')
		return amp_error_set(err, AMP_EUSAGE, "", "'%s' is not a remote", buf);
	return AMP_OK;
}

/* The name of `remote` inside the private namespace: itself when it is a
 * plain remote name, else (a URL, a path) "url-" and a hash of it, so that
 * two hubs never share a mirror. */
static int mirror_key(const char *remote, char *buf, size_t bufsz)
{
	char probe[512], hex[GIT_OID_HEXSZ + 1];
	git_oid id;
	const char *p;
	int plain = remote[0] != '.';

	for (p = remote; *p && plain; p++)
		plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			(*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.';
	snprintf(probe, sizeof(probe), "%s%s/messages", AMP_SYNC_NAMESPACE, remote);
	if (plain && strlen(remote) < 128 && git_reference_is_valid_name(probe)) {
		snprintf(buf, bufsz, "%s", remote);
		return 0;
	}
	if (git_odb_hash(&id, remote, strlen(remote), GIT_OBJECT_BLOB) < 0)
		return -1;
	git_oid_tostr(hex, sizeof(hex), &id);
	snprintf(buf, bufsz, "url-%.16s", hex);
	return 0;
}

/* refs/amp/<x> -> refs/amp-sync/<key>/<x>; refs are always under refs/amp/
 * (the store checks amp.ref and amp.errorsRef). */
static void mirror_ref(const char *key, const char *ref, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s%s/%s", AMP_SYNC_NAMESPACE, key, ref + strlen("refs/amp/"));
}

/* ---- records ----------------------------------------------------------------- */

/* The records of one task directory of a tree, by identity. */
struct dir_index {
	json_t *ids;  /* "<kind>:<id>" (or "?:<name>") -> blob id, hex */
	int next_seq; /* what the next record appended there gets */
};

/* The identity of a record file name: its kind and id, since the seq is
 * per clone; a name that is not a record's is its own identity. */
static void record_key(const char *name, char *buf, size_t bufsz, int *seq,
		       amp_entry_kind *kind, const char **id, size_t *id_len)
{
	if (amp_store_entry_parse(name, seq, kind, id, id_len) == 0) {
		snprintf(buf, bufsz, "%c:%.*s", (char)*kind, (int)*id_len, *id);
	} else {
		*id = NULL;
		snprintf(buf, bufsz, "?:%s", name);
	}
}

/* Indexes directory `dir` of `root` (either may be missing: empty). */
static int index_dir(git_repository *repo, git_tree *root, const char *dir,
		     struct dir_index *ix, amp_error *err)
{
	git_tree_entry *e = NULL;
	git_tree *t = NULL;
	char key[AMP_PATH_MAX], hex[GIT_OID_HEXSZ + 1];
	size_t i, n;
	int status = AMP_OK;

	ix->next_seq = 1;
	if (!(ix->ids = json_object()))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (!root || git_tree_entry_bypath(&e, root, dir) < 0) {
		git_error_clear();
		return AMP_OK;
	}
	if (git_tree_entry_type(e) != GIT_OBJECT_TREE ||
	    git_tree_lookup(&t, repo, git_tree_entry_id(e)) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read %s", dir);
		goto cleanup;
	}
	n = git_tree_entrycount(t);
	for (i = 0; i < n; i++) {
		const git_tree_entry *r = git_tree_entry_byindex(t, i);
		amp_entry_kind kind;
		const char *id;
		size_t id_len;
		int seq = 0;

		record_key(git_tree_entry_name(r), key, sizeof(key), &seq, &kind, &id, &id_len);
		git_oid_tostr(hex, sizeof(hex), git_tree_entry_id(r));
		json_object_set_new(ix->ids, key, json_string(hex));
		if (id && seq >= ix->next_seq)
			ix->next_seq = seq + 1;
	}
cleanup:
	git_tree_free(t);
	git_tree_entry_free(e);
	return status;
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

/*
 * Counts the records of tree b whose identity (task, kind, id) tree a
 * (NULL: empty) does not hold.
 */
static int count_new(git_repository *repo, git_tree *a, git_tree *b,
		     unsigned long *count, amp_error *err)
{
	json_t *touched = json_object(), *files;
	const char *task, *name;
	json_t *v;
	char dir[AMP_PATH_MAX], path[AMP_PATH_MAX * 2], key[AMP_PATH_MAX];
	int status = AMP_OK;

	*count = 0;
	if (!touched)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (amp_store_diff_tasks(repo, a, b, touched, -1) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot compare two trees");
		goto cleanup;
	}
	json_object_foreach(touched, task, files) {
		struct dir_index ix = { NULL, 1 };

		if (!json_is_object(files) || amp_store_task_dir(task, dir, sizeof(dir)) < 0)
			continue;
		if ((status = index_dir(repo, a, dir, &ix, err)) < 0) {
			json_decref(ix.ids);
			goto cleanup;
		}
		json_object_foreach(files, name, v) {
			git_tree_entry *e = NULL;
			amp_entry_kind kind;
			const char *id;
			size_t id_len;

			snprintf(path, sizeof(path), "%s/%s", dir, name);
			if (git_tree_entry_bypath(&e, b, path) < 0) {
				git_error_clear();
				continue;
			}
			git_tree_entry_free(e);
			record_key(name, key, sizeof(key), NULL, &kind, &id, &id_len);
			if (!json_object_get(ix.ids, key))
				(*count)++;
		}
		json_decref(ix.ids);
	}
cleanup:
	json_decref(touched);
	return status;
}

/* A record the two sides hold with different content. */
struct conflict {
	char local[AMP_PATH_MAX * 2];  /* its path in the local commit */
	char remote[AMP_PATH_MAX * 2]; /* the remote's record of that id */
	git_oid blob;                  /* the local content */
	git_oid commit;                /* the local commit that added it */
};

/* The remote's file of identity `key` in the index, into buf. */
static void find_name(git_repository *repo, git_tree *root, const char *dir,
		      const char *key, char *buf, size_t bufsz)
{
	git_tree_entry *e = NULL;
	git_tree *t = NULL;
	char k[AMP_PATH_MAX];
	size_t i;

	snprintf(buf, bufsz, "%s/?", dir);
	if (git_tree_entry_bypath(&e, root, dir) < 0 ||
	    git_tree_lookup(&t, repo, git_tree_entry_id(e)) < 0) {
		git_error_clear();
		goto cleanup;
	}
	for (i = 0; i < git_tree_entrycount(t); i++) {
		const char *name = git_tree_entry_name(git_tree_entry_byindex(t, i)), *id;
		amp_entry_kind kind;
		size_t id_len;

		record_key(name, k, sizeof(k), NULL, &kind, &id, &id_len);
		if (!strcmp(k, key)) {
			snprintf(buf, bufsz, "%s/%s", dir, name);
			break;
		}
	}
cleanup:
	git_tree_free(t);
	git_tree_entry_free(e);
}

/* The new paths of one replayed commit. */
struct updates {
	git_tree_update *items;
	size_t count, alloc;
};

static void updates_clear(struct updates *u)
{
	size_t i;

	for (i = 0; i < u->count; i++)
		free((char *)u->items[i].path);
	u->count = 0;
}

static int updates_add(struct updates *u, const char *path, const git_oid *blob)
{
	git_tree_update *item;

	if (u->count == u->alloc) {
		size_t alloc = u->alloc ? u->alloc * 2 : 8;
		git_tree_update *more = realloc(u->items, alloc * sizeof(*more));

		if (!more)
			return -1;
		u->items = more;
		u->alloc = alloc;
	}
	item = &u->items[u->count];
	memset(item, 0, sizeof(*item));
	if (!(item->path = strdup(path)))
		return -1;
	item->action = GIT_TREE_UPDATE_UPSERT;
	item->filemode = GIT_FILEMODE_BLOB;
	git_oid_cpy(&item->id, blob);
	u->count++;
	return 0;
}

/*
 * Adds to *u the records commit tree `ct` adds to its parent's `pt` (NULL:
 * a root commit), each under the next free seq of its task in `base`, the
 * tree being built; skips the records `base` already holds with the same
 * content.  AMP_ERULE with *c filled for one it holds with other content.
 */
static int replay_records(git_repository *repo, git_tree *pt, git_tree *ct,
			  git_tree *base, struct updates *u, struct conflict *c,
			  amp_error *err)
{
	json_t *touched = json_object(), *files;
	const char *task, **names = NULL;
	char dir[AMP_PATH_MAX], path[AMP_PATH_MAX * 2], key[AMP_PATH_MAX], name[AMP_PATH_MAX];
	char hex[GIT_OID_HEXSZ + 1];
	struct dir_index ix = { NULL, 1 };
	int status = AMP_OK;

	if (!touched)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (amp_store_diff_tasks(repo, pt, ct, touched, -1) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot compare a commit with its parent");
		goto cleanup;
	}
	json_object_foreach(touched, task, files) {
		size_t i, n = 0;

		if (!json_is_object(files)) {
			status = amp_error_set(err, AMP_EIO, "",
					       "the directory of task %s cannot be read", task);
			goto cleanup;
		}
		if (amp_store_task_dir(task, dir, sizeof(dir)) < 0)
			continue;
		json_decref(ix.ids);
		ix.ids = NULL;
		if ((status = index_dir(repo, base, dir, &ix, err)) < 0)
			goto cleanup;
		free(names);
		if (!(names = sorted_names(files, &n))) {
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
			goto cleanup;
		}
		for (i = 0; i < n; i++) {
			git_tree_entry *e = NULL;
			amp_entry_kind kind;
			const char *id, *have;
			size_t id_len;
			git_oid blob;

			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			if (git_tree_entry_bypath(&e, ct, path) < 0) {
				git_error_clear(); /* removed, by hand: nothing to add */
				continue;
			}
			git_oid_cpy(&blob, git_tree_entry_id(e));
			git_tree_entry_free(e);
			record_key(names[i], key, sizeof(key), NULL, &kind, &id, &id_len);
			git_oid_tostr(hex, sizeof(hex), &blob);
			have = json_string_value(json_object_get(ix.ids, key));
			if (have && !strcmp(have, hex))
				continue; /* already there, byte for byte */
			if (have) {
				snprintf(c->local, sizeof(c->local), "%s", path);
				find_name(repo, base, dir, key, c->remote, sizeof(c->remote));
				git_oid_cpy(&c->blob, &blob);
				status = amp_error_set(err, AMP_ERULE, "",
						       "conflict: %s (local) and %s (remote) are the same record with different content",
						       c->local, c->remote);
				goto cleanup;
			}
			if (!id)
				snprintf(name, sizeof(name), "%s", names[i]);
			else {
				char idbuf[AMP_PATH_MAX];

				snprintf(idbuf, sizeof(idbuf), "%.*s", (int)id_len, id);
				if (amp_store_entry_name(ix.next_seq++, kind, idbuf, name,
							 sizeof(name)) < 0)
					continue; /* cannot happen: it fitted before */
			}
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			json_object_set_new(ix.ids, key, json_string(hex));
			if (updates_add(u, path, &blob) < 0) {
				status = amp_error_set(err, AMP_EIO, "", "out of memory");
				goto cleanup;
			}
		}
	}
cleanup:
	free(names);
	json_decref(ix.ids);
	json_decref(touched);
	return status;
}

/*
 * Replays the first-parent commits of `local` that `base` (NULL: none,
 * the roots differ) does not reach onto `onto`, oldest first; *out is the
 * new tip (`onto` when nothing was new) and *replayed counts the records.
 */
static int replay(amp_store *st, const git_oid *local, const git_oid *base,
		  const git_oid *onto, git_oid *out, unsigned long *replayed,
		  struct conflict *c, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	git_revwalk *walk = NULL;
	git_commit *tip = NULL, *lc = NULL, *parent = NULL, *next = NULL;
	git_tree *tree = NULL, *ct = NULL, *pt = NULL, *nt = NULL;
	git_signature *committer = NULL;
	struct updates u = { NULL, 0, 0 };
	git_oid oid, tree_oid;
	int64_t now_ms;
	int status = AMP_OK;

	*replayed = 0;
	if ((status = amp_clock_now_ms(&now_ms, err)) < 0)
		return status;
	if (git_signature_new(&committer, "amp", "amp@amp.invalid",
			      (git_time_t)(now_ms / 1000), 0) < 0 ||
	    git_commit_lookup(&tip, repo, onto) < 0 || git_commit_tree(&tree, tip) < 0 ||
	    git_revwalk_new(&walk, repo) < 0 ||
	    git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE) < 0 ||
	    git_revwalk_simplify_first_parent(walk) < 0 || git_revwalk_push(walk, local) < 0 ||
	    (base && git_revwalk_hide(walk, base) < 0)) {
		status = amp_error_git(err, AMP_EIO, "cannot walk the local history");
		goto cleanup;
	}
	while (git_revwalk_next(&oid, walk) == 0) {
		if (git_commit_lookup(&lc, repo, &oid) < 0 || git_commit_tree(&ct, lc) < 0 ||
		    (git_commit_parentcount(lc) > 0 &&
		     (git_commit_parent(&parent, lc, 0) < 0 || git_commit_tree(&pt, parent) < 0))) {
			status = amp_error_git(err, AMP_EIO, "cannot read local commit %s",
					       git_oid_tostr_s(&oid));
			goto cleanup;
		}
		status = replay_records(repo, pt, ct, tree, &u, c, err);
		if (status == AMP_ERULE)
			git_oid_cpy(&c->commit, &oid);
		if (status < 0)
			goto cleanup;
		if (u.count) {
			git_oid next_oid;

			/* The same author, author time and message (trailers
			 * included): only the parent, the seqs and the
			 * committer differ. */
			if (git_tree_create_updated(&tree_oid, repo, tree, u.count, u.items) < 0 ||
			    git_tree_lookup(&nt, repo, &tree_oid) < 0 ||
			    git_commit_create(&next_oid, repo, NULL, git_commit_author(lc), committer,
					      git_commit_message_encoding(lc), git_commit_message(lc),
					      nt, 1, (const git_commit **)&tip) < 0 ||
			    git_commit_lookup(&next, repo, &next_oid) < 0) {
				status = amp_error_git(err, AMP_EIO, "cannot replay local commit %s",
						       git_oid_tostr_s(&oid));
				goto cleanup;
			}
			*replayed += u.count;
			git_commit_free(tip);
			git_tree_free(tree);
			tip = next;
			tree = nt;
			next = NULL;
			nt = NULL;
			updates_clear(&u);
		}
		git_commit_free(lc);
		git_commit_free(parent);
		git_tree_free(ct);
		git_tree_free(pt);
		lc = parent = NULL;
		ct = pt = NULL;
	}
	git_oid_cpy(out, git_commit_id(tip));
cleanup:
	updates_clear(&u);
	free(u.items);
	git_tree_free(nt);
	git_tree_free(pt);
	git_tree_free(ct);
	git_tree_free(tree);
	git_commit_free(next);
	git_commit_free(parent);
	git_commit_free(lc);
	git_commit_free(tip);
	git_revwalk_free(walk);
	git_signature_free(committer);
	return status;
}

/* ---- joining ------------------------------------------------------------------ */

/* Reads ref into *id; 1 when it exists, 0 when not, AMP_EIO. */
static int read_ref(git_repository *repo, const char *ref, git_oid *id, amp_error *err)
{
	int rc = git_reference_name_to_id(id, repo, ref);

	if (rc == 0)
		return 1;
	if (rc == GIT_ENOTFOUND) {
		git_error_clear();
		return 0;
	}
	return amp_error_git(err, AMP_EIO, "cannot read %s", ref);
}

/* Moves ref from `old` (NULL: must not exist) to `next`, a compare-and-swap
 * like the store's own writers do.  0 moved, 1 someone else moved it
 * first (join again), or AMP_EIO. */
static int cas_ref(git_repository *repo, const char *ref, const git_oid *old,
		   const git_oid *next, const char *why, amp_error *err)
{
	git_reference *out = NULL;
	int rc = git_reference_create_matching(&out, repo, ref, next, old != NULL, old, why);

	git_reference_free(out);
	if (rc == 0)
		return 0;
	if (rc == GIT_EMODIFIED || rc == GIT_EEXISTS || rc == GIT_ELOCKED) {
		git_error_clear();
		return 1;
	}
	return amp_error_git(err, AMP_EIO, "cannot update %s", ref);
}

/* What a join left to do. */
struct joined {
	git_oid tip;       /* the local ref now */
	int have_remote;   /* the remote has the ref */
	git_oid remote;    /* its tip, when it has */
	int push;          /* the remote lacks commits of tip */
	int diverged;      /* not joined: the histories diverged (errors ref) */
	unsigned long replayed;
};

#define AMP_SYNC_JOIN_TRIES 100

/*
 * Joins local `ref` with its mirror.  With `replay_ok` diverged histories
 * are joined by replaying the local records onto the mirror's tip; without
 * it they are left apart (j->diverged).  A local writer moving the ref
 * meanwhile makes the join start over.
 */
static int join(amp_store *st, const char *ref, const char *mirror, int replay_ok,
		struct joined *j, struct conflict *c, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	git_oid local, base, next;
	int have_local, rc, tries;
	char why[300];

	snprintf(why, sizeof(why), "amp sync: joined with %s", mirror);
	for (tries = 0; tries < AMP_SYNC_JOIN_TRIES; tries++) {
		memset(j, 0, sizeof(*j));
		if ((have_local = read_ref(repo, ref, &local, err)) < 0 ||
		    (j->have_remote = read_ref(repo, mirror, &j->remote, err)) < 0)
			return AMP_EIO;
		if (!j->have_remote) {
			if (!have_local)
				return AMP_OK; /* nothing on either side */
			git_oid_cpy(&j->tip, &local);
			j->push = 1;
			return AMP_OK;
		}
		if (have_local && git_oid_equal(&local, &j->remote)) {
			git_oid_cpy(&j->tip, &local);
			return AMP_OK;
		}
		rc = have_local ? git_merge_base(&base, repo, &local, &j->remote) : GIT_ENOTFOUND;
		if (rc < 0 && rc != GIT_ENOTFOUND)
			return amp_error_git(err, AMP_EIO, "cannot compare %s with %s", ref, mirror);
		git_error_clear();
		if (rc == 0 && git_oid_equal(&base, &j->remote)) {
			git_oid_cpy(&j->tip, &local); /* the remote is behind */
			j->push = 1;
			return AMP_OK;
		}
		if (!have_local || (rc == 0 && git_oid_equal(&base, &local))) {
			git_oid_cpy(&next, &j->remote); /* fast-forward */
		} else if (!replay_ok) {
			git_oid_cpy(&j->tip, &local);
			j->diverged = 1;
			return AMP_OK;
		} else {
			int status = replay(st, &local, rc == 0 ? &base : NULL, &j->remote,
					    &next, &j->replayed, c, err);
			if (status < 0)
				return status;
			j->push = !git_oid_equal(&next, &j->remote);
		}
		if ((rc = cas_ref(repo, ref, have_local ? &local : NULL, &next, why, err)) < 0)
			return rc;
		if (rc == 0) {
			git_oid_cpy(&j->tip, &next);
			return AMP_OK;
		}
	}
	return amp_error_set(err, AMP_EIO, "", "%s kept moving while it was joined (%d tries)",
			     ref, AMP_SYNC_JOIN_TRIES);
}

/* ---- the round trip ---------------------------------------------------------- */

static int fetch(amp_store *st, const char *remote, const char *key, amp_error *err)
{
	char refspec[600];
	int code, status;
	const char *args[] = { "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
			       "--prune", remote, refspec, NULL };

	snprintf(refspec, sizeof(refspec), "+refs/amp/*:%s%s/*", AMP_SYNC_NAMESPACE, key);
	if ((status = run_git(st, args, NULL, &code, err)) < 0)
		return status;
	if (code != 0)
		return amp_error_set(err, AMP_EIO, "",
				     "git fetch from %s failed (exit %d, git's reason above); nothing changed locally",
				     remote, code);
	return AMP_OK;
}

enum { PUSHED, PUSH_RACED, PUSH_FAILED };

/*
 * Pushes the messages ref (and the errors ref when `errors`), non-forced.
 * Returns PUSHED, PUSH_RACED (someone pushed first: fetch and join again),
 * or a negative status (err filled; git's reason went to stderr).
 */
static int push(amp_store *st, const char *remote, int errors, amp_error *err)
{
	const char *ref = amp_store_messages_ref(st), *eref = amp_store_errors_ref(st);
	char spec[600], espec[600], *out = NULL, *line, *save = NULL;
	int code, status, found = 0;
	const char *args[] = { "-c", "advice.pushUpdateRejected=false", "push", "--porcelain",
			       remote, spec, errors ? espec : NULL, NULL };

	snprintf(spec, sizeof(spec), "%s:%s", ref, ref);
	snprintf(espec, sizeof(espec), "%s:%s", eref, eref);
	if ((status = run_git(st, args, &out, &code, err)) < 0)
		return status;
	status = PUSHED;
	/* --porcelain: "<flag>\t<from>:<to>\t<summary>" per ref; "!" is a
	 * refusal, "[rejected]" the remote's ref moved first, "[remote
	 * rejected]" a hook or the server said no. */
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *summary;

		if (!line[0] || line[1] != '\t' || strncmp(line + 2, spec, strlen(spec)) ||
		    line[2 + strlen(spec)] != '\t')
			continue;
		found = 1;
		summary = line + 3 + strlen(spec);
		if (line[0] != '!')
			break;
		/* "[rejected]": the remote's ref had moved when git compared;
		 * "failed to update ref" / "failed to lock": it moved between
		 * that check and the server's own compare-and-swap.  Both are
		 * someone pushing first. */
		if (!strncmp(summary, "[rejected]", 10) ||
		    (!strncmp(summary, "[remote rejected]", 17) &&
		     (strstr(summary, "failed to update ref") || strstr(summary, "failed to lock"))))
			status = PUSH_RACED;
		else
			status = amp_error_set(err, AMP_EIO, "", "%s refused the push of %s: %s",
					       remote, ref, amp_term(summary));
		break;
	}
	if (!found)
		status = amp_error_set(err, AMP_EIO, "",
				       "git push to %s failed (exit %d, git's reason above); nothing lost: the local history stays on %s",
				       remote, code, ref);
	free(out);
	return status;
}

/* Full-jitter exponential backoff: [0, min(2 s, 50 ms * 2^attempt)). */
static void backoff(unsigned *rng, unsigned attempt)
{
	unsigned long span = 50000, cap = 2000000, us;
	struct timespec ts;

	while (attempt-- > 0 && span < cap)
		span *= 2;
	if (span > cap)
		span = cap;
	us = (unsigned long)rand_r(rng) % span;
	ts.tv_sec = (time_t)(us / 1000000);
	ts.tv_nsec = (long)(us % 1000000) * 1000;
	nanosleep(&ts, NULL);
}

static int tree_of(git_repository *repo, const git_oid *id, git_tree **tree, amp_error *err)
{
	git_commit *c = NULL;
	int status = AMP_OK;

	if (git_commit_lookup(&c, repo, id) < 0 || git_commit_tree(tree, c) < 0)
		status = amp_error_git(err, AMP_EIO, "cannot read commit %s", git_oid_tostr_s(id));
	git_commit_free(c);
	return status;
}

/* Logs the conflict on the errors ref: the local record's bytes and why. */
static void log_conflict(amp_store *st, const char *remote, const struct conflict *c,
			 const amp_error *why)
{
	git_blob *blob = NULL;
	amp_errlist reasons = { NULL, 0, 0 };
	amp_error ignored;

	if (git_blob_lookup(&blob, amp_store_repo(st), &c->blob) < 0) {
		git_error_clear();
		return;
	}
	amp_errlist_add(&reasons, AMP_ERULE, "", "%s (local commit %s)", why->message,
			git_oid_tostr_s(&c->commit));
	/* Best effort: the refusal itself is what the user must see. */
	amp_store_log_rejection(st, "sync", remote, git_blob_rawcontent(blob),
				(size_t)git_blob_rawsize(blob), 0, AMP_ERULE, &reasons, &ignored);
	amp_errlist_free(&reasons);
	git_blob_free(blob);
}

static int sync_retries(amp_store *st, long long *out, amp_error *err)
{
	char buf[64];

	*out = AMP_SYNC_RETRIES_DEFAULT;
	if (!amp_store_config(st, "amp.syncRetries", buf, sizeof(buf)))
		return AMP_OK;
	return amp_parse_int("git config amp.syncRetries", buf, 1, AMP_SYNC_RETRIES_MAX, out, err);
}

int amp_sync(amp_store *st, const char *remote, amp_sync_result *res, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	const char *ref = amp_store_messages_ref(st), *eref = amp_store_errors_ref(st);
	char key[300], mirror[600], emirror[600];
	git_tree *before = NULL, *after = NULL, *remote_tree = NULL;
	struct joined j, ej;
	struct conflict c;
	struct timespec now;
	long long retries;
	git_reference *pushed_ref = NULL;
	git_oid start;
	unsigned rng;
	int status, have_start, rc;

	memset(res, 0, sizeof(*res));
	memset(&c, 0, sizeof(c));
	snprintf(res->remote, sizeof(res->remote), "%s", remote);
	if ((status = sync_retries(st, &retries, err)) < 0)
		return status;
	if (mirror_key(remote, key, sizeof(key)) < 0)
		return amp_error_git(err, AMP_EIO, "cannot name the mirror of %s", remote);
	mirror_ref(key, ref, mirror, sizeof(mirror));
	mirror_ref(key, eref, emirror, sizeof(emirror));
	clock_gettime(CLOCK_REALTIME, &now);
	rng = (unsigned)getpid() ^ (unsigned)now.tv_nsec;
	if ((have_start = read_ref(repo, ref, &start, err)) < 0)
		return AMP_EIO;
	if (have_start && (status = tree_of(repo, &start, &before, err)) < 0)
		goto cleanup;
	for (;;) {
		if ((status = fetch(st, remote, key, err)) < 0)
			goto cleanup;
		status = join(st, ref, mirror, 1, &j, &c, err);
		if (status == AMP_ERULE)
			log_conflict(st, remote, &c, err);
		if (status < 0)
			goto cleanup;
		if (git_oid_is_zero(&j.tip)) {
			status = amp_error_set(err, AMP_EIO, "",
					       "no AMP store here nor on %s: run 'amp init'", remote);
			goto cleanup;
		}
		/* The errors ref is joined only when one side is behind: its
		 * records are logs, never worth refusing a sync for. */
		if ((status = join(st, eref, emirror, 0, &ej, NULL, err)) < 0)
			goto cleanup;
		res->replayed = j.replayed;
		if (!j.push && !(ej.push && !ej.diverged))
			break;
		rc = push(st, remote, ej.push && !ej.diverged, err);
		if (rc < 0) {
			status = rc;
			goto cleanup;
		}
		if (rc == PUSHED) {
			res->did_push = 1;
			/* The mirror says what the remote has, as a
			 * remote-tracking ref does after a push. */
			if (git_reference_create(&pushed_ref, repo, mirror, &j.tip, 1,
						 "amp sync: pushed") == 0)
				git_reference_free(pushed_ref);
			if (ej.push && !ej.diverged &&
			    git_reference_create(&pushed_ref, repo, emirror, &ej.tip, 1,
						 "amp sync: pushed") == 0)
				git_reference_free(pushed_ref);
			git_error_clear();
			break;
		}
		if (res->retries >= (unsigned)retries) {
			status = amp_error_set(err, AMP_EIO, "",
					       "%s: the push was refused %u times because others pushed first (amp.syncRetries); nothing lost: the local history stays on %s, run amp sync again",
					       remote, res->retries + 1, ref);
			goto cleanup;
		}
		backoff(&rng, res->retries++);
	}
	res->errors_synced = !ej.diverged;
	git_oid_tostr(res->tip, sizeof(res->tip), &j.tip);
	if ((status = tree_of(repo, &j.tip, &after, err)) < 0 ||
	    (status = count_new(repo, before, after, &res->fetched, err)) < 0)
		goto cleanup;
	if (res->did_push) {
		if (j.have_remote && (status = tree_of(repo, &j.remote, &remote_tree, err)) < 0)
			goto cleanup;
		if ((status = count_new(repo, remote_tree, after, &res->pushed, err)) < 0)
			goto cleanup;
	}
	status = AMP_OK;
cleanup:
	git_tree_free(remote_tree);
	git_tree_free(after);
	git_tree_free(before);
	return status;
}
