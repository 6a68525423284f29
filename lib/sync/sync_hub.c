/*
 * sync_hub.c - the hub's join of its clones' inboxes (amp.syncPush inbox,
 * sync.h): one join at a time takes every inbox still pending, and a push
 * that finds a join under way leaves its inbox to it and returns at once,
 * instead of waiting its turn (issue 32: "the hub's join runs once per
 * push and never makes a push wait for another's join").  What the join
 * made of each inbox is said by a marker the clones fetch,
 * refs/amp-joined/<id>/<name> (sync_hub.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/proc.h"
#include "store/store.h"
#include "sync.h"
#include "sync_hub.h"

/* The flock the joins take turns on (store/update.c's, by this name). */
#define AMP_SYNC_JOIN_LOCK "refs/amp-in"

/* The most inboxes one look takes (2 a clone: messages and errors). */
#define AMP_SYNC_INBOXES_MAX 4096

struct inbox {
	char ref[300];    /* refs/amp-in/<id>/<name> */
	char target[AMP_INBOX_TARGET_MAX]; /* refs/amp/<name> */
	char marker[300]; /* refs/amp-joined/<id>/<name> */
	git_oid tip;      /* the inbox's tip when looked at */
};

/* What a marker at `at` says of the pushed tip `pushed` (amp_sync_mark_read). */
static int mark_state(git_repository *repo, const git_oid *at, const git_oid *pushed,
		      char *reason, size_t reasonsz)
{
	git_oid said;
	git_blob *blob = NULL;
	const char *text, *colon;
	size_t len;
	int state = AMP_SYNC_MARK_NONE;

	if (reasonsz)
		reason[0] = '\0';
	/* Joined: the marker is the inbox's tip itself (or one of this
	 * clone's later pushes, which holds what `pushed` held). */
	if (git_oid_equal(at, pushed) || git_graph_descendant_of(repo, at, pushed) == 1) {
		git_error_clear();
		return AMP_SYNC_MARK_JOINED;
	}
	git_error_clear();
	/* Refused: a blob "refused <inbox tip>: <reason>\n"; left to the
	 * join under way: "left <inbox tip>\n". */
	if (git_blob_lookup(&blob, repo, at) < 0) {
		git_error_clear();
		return AMP_SYNC_MARK_NONE;
	}
	text = git_blob_rawcontent(blob);
	len = (size_t)git_blob_rawsize(blob);
	if (len == 5 + GIT_OID_HEXSZ + 1 && !strncmp(text, "left ", 5) && text[len - 1] == '\n' &&
	    git_oid_fromstrn(&said, text + 5, GIT_OID_HEXSZ) == 0 && git_oid_equal(&said, pushed))
		state = AMP_SYNC_MARK_LEFT;
	else if (len > 8 + GIT_OID_HEXSZ + 2 && !strncmp(text, "refused ", 8) &&
		 git_oid_fromstrn(&said, text + 8, GIT_OID_HEXSZ) == 0 && git_oid_equal(&said, pushed) &&
		 (colon = text + 8 + GIT_OID_HEXSZ)[0] == ':') {
		len -= (size_t)(colon + 2 - text);
		if (reasonsz)
			snprintf(reason, reasonsz, "%.*s", (int)(len < reasonsz ? len : reasonsz - 1),
				 colon + 2);
		if (reasonsz && (len = strlen(reason)) && reason[len - 1] == '\n')
			reason[len - 1] = '\0';
		state = AMP_SYNC_MARK_REFUSED;
	}
	git_error_clear();
	git_blob_free(blob);
	return state;
}

int amp_sync_mark_read(git_repository *repo, const char *marker, const git_oid *pushed,
		       char *reason, size_t reasonsz)
{
	git_oid at;

	if (reasonsz)
		reason[0] = '\0';
	if (git_reference_name_to_id(&at, repo, marker) < 0) {
		git_error_clear();
		return AMP_SYNC_MARK_NONE;
	}
	return mark_state(repo, &at, pushed, reason, reasonsz);
}

/* The inbox ref `name` (refs/amp-in/<id>/<name>) as an inbox of this hub
 * into *in: 0, or -1 when it is none (a ref the hook would refuse). */
static int parse_inbox(amp_store *st, const char *name, struct inbox *in)
{
	if (strlen(name) >= sizeof(in->ref) || amp_hook_inbox_target(st, name, in->target) < 0)
		return -1;
	snprintf(in->ref, sizeof(in->ref), "%s", name);
	snprintf(in->marker, sizeof(in->marker), AMP_SYNC_JOINED "%s",
		 name + strlen(AMP_SYNC_INBOX));
	return 0;
}

/*
 * The inboxes whose tip the marker does not say yet, and that this join
 * did not try at that tip already (`tried`: inbox ref -> hex tip), into
 * *out (freed by the caller), *n of them.  AMP_OK or AMP_EIO.
 */
static int pending(amp_store *st, json_t *tried, struct inbox **out, size_t *n, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	git_reference_iterator *it = NULL;
	git_reference *r = NULL;
	struct inbox in, *grown;
	size_t alloc = 0;
	const char *was;
	int rc, status = AMP_OK;

	*out = NULL;
	*n = 0;
	if (git_reference_iterator_glob_new(&it, repo, AMP_SYNC_INBOX "*") < 0)
		return amp_error_git(err, AMP_EIO, "cannot list the inboxes");
	while ((rc = git_reference_next(&r, it)) == 0) {
		const git_oid *tip = git_reference_target(r);

		if (tip && parse_inbox(st, git_reference_name(r), &in) == 0 && !git_oid_is_zero(tip) &&
		    *n < AMP_SYNC_INBOXES_MAX) {
			git_oid_cpy(&in.tip, tip);
			was = json_string_value(json_object_get(tried, in.ref));
			int state = amp_sync_mark_read(repo, in.marker, tip, NULL, 0);

			if ((state == AMP_SYNC_MARK_NONE || state == AMP_SYNC_MARK_LEFT) &&
			    !(was && !strcmp(was, git_oid_tostr_s(tip)))) {
				if (*n == alloc) {
					alloc = alloc ? 2 * alloc : 16;
					if (!(grown = realloc(*out, alloc * sizeof(**out)))) {
						status = amp_error_set(err, AMP_EIO, "", "out of memory");
						break;
					}
					*out = grown;
				}
				(*out)[(*n)++] = in;
			}
		}
		git_reference_free(r);
		r = NULL;
	}
	if (status == AMP_OK && rc != GIT_ITEROVER)
		status = amp_error_git(err, AMP_EIO, "cannot list the inboxes");
	git_error_clear();
	git_reference_iterator_free(it);
	return status;
}

/* Writes the marker of `in`: its tip when joined, else a blob saying why
 * the join refused it.  A marker that cannot be written leaves the inbox
 * pending: the next join takes it again, and finds it joined. */
static void mark(git_repository *repo, const struct inbox *in, int status, const amp_error *why)
{
	git_reference *ref = NULL;
	char text[AMP_MSG_MAX + 128];
	git_oid at;

	git_oid_cpy(&at, &in->tip);
	if (status != AMP_OK) {
		snprintf(text, sizeof(text), "refused %s: %s\n", git_oid_tostr_s(&in->tip),
			 why->message);
		if (git_blob_create_from_buffer(&at, repo, text, strlen(text)) < 0) {
			git_error_clear();
			return;
		}
	}
	if (git_reference_create(&ref, repo, in->marker, &at, 1,
				 status == AMP_OK ? "amp hook: joined" : "amp hook: refused") == 0)
		git_reference_free(ref);
	git_error_clear();
}

int amp_sync_mark_left(amp_store *st, const char *inbox, const git_oid *tip, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	git_reference *ref = NULL;
	struct inbox in;
	char text[8 + GIT_OID_HEXSZ];
	git_oid at, blob;
	int have, rc;

	if (parse_inbox(st, inbox, &in) < 0)
		return AMP_OK; /* no inbox of this hub: the pre-receive refused it */
	have = git_reference_name_to_id(&at, repo, in.marker) == 0;
	git_error_clear();
	/* The join under way said what it made of this tip already. */
	if (have && mark_state(repo, &at, tip, NULL, 0) != AMP_SYNC_MARK_NONE)
		return AMP_OK;
	snprintf(text, sizeof(text), "left %s\n", git_oid_tostr_s(tip));
	if (git_blob_create_from_buffer(&blob, repo, text, strlen(text)) < 0)
		return amp_error_git(err, AMP_EIO, "cannot write the marker of %s", inbox);
	/* Compare-and-swap on what was read: a join that marked the inbox
	 * meanwhile wins (its marker is the later word). */
	rc = have ? git_reference_create_matching(&ref, repo, in.marker, &blob, 1, &at,
						  "amp hook: left")
		  : git_reference_create(&ref, repo, in.marker, &blob, 0, "amp hook: left");
	git_reference_free(ref);
	if (rc == GIT_EMODIFIED || rc == GIT_EEXISTS || rc == GIT_ELOCKED) {
		git_error_clear();
		return AMP_OK;
	}
	if (rc < 0)
		return amp_error_git(err, AMP_EIO, "cannot write the marker of %s", inbox);
	return AMP_OK;
}

/* Joins inboxes ins[0..n) once each. */
static void join_each(amp_store *st, amp_schema_set *set, json_t *tried, amp_sync_joined_fn fn,
		      void *ctx, const struct inbox *ins, size_t n)
{
	amp_sync_inbox_joined j;
	amp_error why;
	size_t i;

	for (i = 0; i < n; i++) {
		memset(&j, 0, sizeof(j));
		j.inbox = ins[i].ref;
		j.target = ins[i].target;
		j.err = &why;
		j.status = amp_sync_absorb(st, set, ins[i].target, &ins[i].tip, ins[i].ref, &j.out,
					   &why);
		/* Each tip once a join: a failure of the hub's own (AMP_EIO),
		 * not the inbox's fault, leaves it pending for the next. */
		json_object_set_new(tried, ins[i].ref, json_string(git_oid_tostr_s(&ins[i].tip)));
		if (fn)
			fn(&j, ctx);
		if (j.status != AMP_EIO)
			mark(amp_store_repo(st), &ins[i], j.status, &why);
	}
}

/*
 * The flag <state dir>/join.wanted: every push raises it before it tries
 * the join's lock, the join clears it before each look under the lock,
 * and looks again only when it is raised after it let go.  A push that
 * found the lock held raised it before: either before the clearing, and
 * its inbox (pushed before its hook ran) is in that look, or after, and
 * the join sees it raised.  So the inboxes are listed once per push, not
 * again after each join to catch a push that came meanwhile.
 */
static void wanted_path(amp_store *st, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/join.wanted", amp_store_state_dir(st));
}

static int raise_wanted(amp_store *st, amp_error *err)
{
	char path[PATH_MAX];
	int fd;

	wanted_path(st, path, sizeof(path));
	if ((mkdir(amp_store_state_dir(st), 0777) < 0 && errno != EEXIST) ||
	    (fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666)) < 0)
		return amp_error_set(err, AMP_EIO, "", "cannot write %s: %s", path,
				     strerror(errno));
	close(fd);
	return AMP_OK;
}

/* Whether the flag is raised: 1 also when that cannot be told (look
 * again, to be safe). */
static int wanted(amp_store *st)
{
	char path[PATH_MAX];
	struct stat sb;

	wanted_path(st, path, sizeof(path));
	return stat(path, &sb) == 0 || errno != ENOENT;
}

static void clear_wanted(amp_store *st)
{
	char path[PATH_MAX];

	wanted_path(st, path, sizeof(path));
	unlink(path);
}

/*
 * The rest of a join in a process of its own, detached from the push
 * whose hook started it (a session of its own, stdio on /dev/null, as
 * git gc --auto detaches), so that push returns after the join's first
 * look instead of waiting while others' inboxes keep coming.  The child
 * holds the same lock: a flock belongs to the open file description fork
 * shares, so the parent only closes its descriptor (flock(LOCK_UN) would
 * let go the child's too).  0 in the parent, 1 in the child, -1 when
 * fork failed (the join goes on here).
 */
static int go_on_detached(int fd)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid > 0) {
		close(fd);
		return 0;
	}
	setsid();
	amp_null_stdio();
	return 1;
}

int amp_sync_join_inboxes(amp_store *st, amp_schema_set *set, amp_sync_joined_fn fn,
			  void *ctx, int *ran, amp_error *err)
{
	json_t *tried = json_object();
	struct inbox *ins = NULL;
	size_t n;
	int fd = -1, rc, status = AMP_OK;

	*ran = AMP_SYNC_JOIN_LEFT;
	if (!tried)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if ((status = raise_wanted(st, err)) < 0)
		goto cleanup;
	for (;;) {
		if ((rc = amp_store_trylock(st, AMP_SYNC_JOIN_LOCK, &fd, err)) <= 0) {
			/* 0: a join is under way, and it looks again after
			 * it lets go (the flag): it takes what this push
			 * brought. */
			status = rc;
			break;
		}
		clear_wanted(st);
		if ((status = pending(st, tried, &ins, &n, err)) < 0) {
			amp_store_unlock(fd);
			break;
		}
		if (*ran == AMP_SYNC_JOIN_LEFT) {
			*ran = AMP_SYNC_JOIN_RAN;
		} else if (n && *ran == AMP_SYNC_JOIN_RAN && (rc = go_on_detached(fd)) >= 0) {
			/* Still pending after the first turn: the rest is
			 * the detached child's, and this push returns. */
			if (rc == 0)
				break;
			*ran = AMP_SYNC_JOIN_CHILD;
		}
		join_each(st, set, tried, fn, ctx, ins, n);
		free(ins);
		ins = NULL;
		amp_store_unlock(fd);
		/* A push that found the lock held after the clearing raised
		 * the flag again: another turn takes its inbox. */
		if (!wanted(st))
			break;
	}
cleanup:
	free(ins);
	json_decref(tried);
	return status;
}
