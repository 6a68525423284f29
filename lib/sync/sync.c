/*
 * sync.c - fetch, join and push the SSOT through a git remote (sync.h):
 * the round trip and its settings.  The fetch and the push are
 * sync_git.c's, the join sync_join.c's (the replay of records in
 * sync_replay.c, their set-aside in sync_aside.c), what is told to the
 * admin sync_tell.c's.
 *
 * Transport is the user's own `git` program, run with an argv (never a
 * shell): ssh agents, credential helpers, insteadOf and proxies work as
 * they do for the user's other repositories.  Everything else (the join,
 * the compare-and-swap of the local ref) is libgit2, in process.
 */
#include <stdio.h>
#include "base/gitobj.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "protocol/protocol.h"
#include "store/store.h"
#include "sync.h"
#include "sync_git.h"
#include "sync_hub.h"
#include "sync_index.h"
#include "sync_join.h"
#include "sync_ssh.h"
#include "sync_tell.h"
#include "verify.h"

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

/*
 * Counts the records of tree b whose identity (task, kind, id; a set-aside
 * record's is its marker's) tree a (NULL: empty) does not hold.
 */
static int count_new(git_repository *repo, git_tree *a, git_tree *b,
		     unsigned long *count, amp_error *err)
{
	json_t *touched = json_object(), *files, *v;
	const char *task, *key;
	char dir[AMP_PATH_MAX];
	int status = AMP_OK;

	*count = 0;
	if (!touched)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (amp_store_diff_tasks(repo, a, b, touched, -1) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot compare two trees");
		goto cleanup;
	}
	json_object_foreach(touched, task, files) {
		struct dir_index ia = { NULL, 1 }, ib = { NULL, 1 };

		if (amp_store_task_dir(AMP_LAYOUT_FLAT, task, dir, sizeof(dir)) < 0)
			continue;
		snprintf(dir, sizeof(dir), "%s", task); /* amp_sync_index_dir's */
		if ((status = amp_sync_index_dir(repo, a, dir, &ia, err)) == AMP_OK &&
		    (status = amp_sync_index_dir(repo, b, dir, &ib, err)) == AMP_OK)
			json_object_foreach(ib.ids, key, v)
				*count += !json_object_get(ia.ids, key);
		json_decref(ia.ids);
		json_decref(ib.ids);
		if (status < 0)
			goto cleanup;
	}
	/* Register records: a path is an identity (registry.h). */
	json_object_clear(touched);
	if (amp_registry_diff(repo, a, b, touched) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot compare two trees");
		goto cleanup;
	}
	*count += json_object_size(touched);
cleanup:
	json_decref(touched);
	return status;
}

/* Exponential backoff, span min(2 s, first_us * 2^attempt): full jitter,
 * [0, span), or (`half`) [span / 2, span).  A push that raced goes again
 * at once as often as not; a fetch for a join under way waits at least
 * half the span, as a fetch before the join is done is CPU spent on both
 * sides for nothing. */
static void backoff(unsigned *rng, unsigned attempt, unsigned long first_us, int half)
{
	unsigned long span = first_us, cap = 2000000, us;
	struct timespec ts;

	while (attempt-- > 0 && span < cap)
		span *= 2;
	if (span > cap)
		span = cap;
	us = (unsigned long)rand_r(rng) % (half ? span / 2 : span) + (half ? span / 2 : 0);
	ts.tv_sec = (time_t)(us / 1000000);
	ts.tv_nsec = (long)(us % 1000000) * 1000;
	nanosleep(&ts, NULL);
}

/*
 * After a push that raced or was reset (`rc` PUSH_RACED, PUSH_RESET) or a
 * fetch that was reset (`rc` -1): waits its backoff and counts a retry in
 * res->retries, AMP_OK; AMP_EIO (err filled) once amp.syncRetries
 * (`retries`) are spent.
 */
static int try_again(int rc, const char *remote, const char *ref, unsigned *rng,
		     long long retries, amp_sync_result *res, amp_error *err)
{
	if (res->retries < (unsigned)retries) {
		backoff(rng, res->retries++, 50000, 0);
		return AMP_OK;
	}
	if (rc < 0)
		return amp_error_set(err, AMP_EIO, "",
				     "git fetch from %s was reset %u times (amp.syncRetries; git's reason above); nothing changed locally",
				     remote, res->retries + 1);
	return amp_error_set(err, AMP_EIO, "",
			     "%s: the push was %s %u times%s (amp.syncRetries); nothing lost: the local history stays on %s, run amp sync again",
			     remote, rc == PUSH_RESET ? "reset by the server" : "refused",
			     res->retries + 1, rc == PUSH_RESET ? "" : " because others pushed first",
			     ref);
}

static int tree_of(git_repository *repo, const git_oid *id, git_tree **tree, amp_error *err)
{
	git_commit *c = NULL;
	int status = AMP_OK;

	if (amp_git_commit_lookup(&c, repo, id) < 0 || amp_git_commit_tree(tree, c) < 0)
		status = amp_error_git(err, AMP_EIO, "cannot read commit %s", git_oid_tostr_s(id));
	git_commit_free(c);
	return status;
}

/* The most pushes a sync makes again after setting aside what the hub's
 * hook refused: each must set aside a record it had not. */
#define AMP_SYNC_ASIDE_ROUNDS 100

/*
 * The records of the local history (`ref`) the hub's hook refused (`paths`
 * {path: reason}, from push) and this sync did not set aside yet: into
 * `aside` (blob id -> reason, for the join) and `seen`.  AMP_OK when there
 * is one, for the next join to set aside; AMP_EIO (err left as the push's
 * refusal) when none is, or after AMP_SYNC_ASIDE_ROUNDS (*rounds counts
 * them).  A marker, a path that is no record of the local history, or a
 * record set aside already and refused again is none: the sync stops with
 * the hub's refusal then, instead of pushing it again and again.
 */
static int hub_refused(git_repository *repo, const char *ref, const char *remote,
		       json_t *paths, json_t *aside, json_t *seen, unsigned *rounds)
{
	git_tree *tree = NULL;
	git_tree_entry *e = NULL;
	git_oid tip;
	const char *path, *name;
	char reason[AMP_MSG_MAX];
	json_t *why;
	amp_error ignored;
	int n = 0;

	if (++*rounds > AMP_SYNC_ASIDE_ROUNDS ||
	    amp_sync_read_ref(repo, ref, &tip, &ignored) <= 0 || tree_of(repo, &tip, &tree, &ignored) < 0)
		return AMP_EIO;
	json_object_foreach(paths, path, why) {
		const char *hex;

		name = strrchr(path, '/');
		if (amp_sync_is_marker(name ? name + 1 : path) ||
		    git_tree_entry_bypath(&e, tree, path) < 0 ||
		    git_tree_entry_type(e) != GIT_OBJECT_BLOB) {
			git_error_clear();
			git_tree_entry_free(e);
			e = NULL;
			continue;
		}
		hex = git_oid_tostr_s(git_tree_entry_id(e));
		if (!json_object_get(seen, hex)) {
			snprintf(reason, sizeof(reason), "%.200s's hook refused it: %s", remote,
				 json_string_value(why));
			json_object_set_new(aside, hex, json_string(reason));
			json_object_set_new(seen, hex, json_true());
			n++;
		}
		git_tree_entry_free(e);
		e = NULL;
	}
	git_tree_free(tree);
	return n ? AMP_OK : AMP_EIO;
}

static int sync_retries(amp_store *st, long long *out, amp_error *err)
{
	char buf[64];

	*out = AMP_SYNC_RETRIES_DEFAULT;
	if (!amp_store_config(st, "amp.syncRetries", buf, sizeof(buf)))
		return AMP_OK;
	return amp_parse_int("git config amp.syncRetries", buf, 1, AMP_SYNC_RETRIES_MAX, out, err);
}

/* 1 when local `ref` holds commits its mirror (what the last fetch saw of
 * the remote) does not; the mirror's tip into *mtip (*have: it exists). */
static int ahead_of_mirror(git_repository *repo, const char *ref, const char *mirror,
			   git_oid *mtip, int *have)
{
	git_oid local;

	*have = git_reference_name_to_id(mtip, repo, mirror) == 0;
	if (git_reference_name_to_id(&local, repo, ref) < 0) {
		git_error_clear();
		return 0;
	}
	git_error_clear();
	return !*have || (!git_oid_equal(&local, mtip) &&
			  git_graph_descendant_of(repo, mtip, &local) != 1);
}

/* git config amp.syncPush: 0 "ref" (default), 1 "inbox". */
static int sync_push_mode(amp_store *st, int *inbox, amp_error *err)
{
	char buf[32];

	*inbox = 0;
	if (!amp_store_config(st, "amp.syncPush", buf, sizeof(buf)) || !strcmp(buf, "ref"))
		return AMP_OK;
	if (!strcmp(buf, "inbox")) {
		*inbox = 1;
		return AMP_OK;
	}
	return amp_error_set(err, AMP_EUSAGE, "", "git config amp.syncPush: '%s' is not ref or inbox",
			     amp_term(buf));
}

/* This clone's name in the hub's inbox: git config amp.syncId, made of 16
 * random hex digits and stored on first use. */
static int sync_id(amp_store *st, char *buf, size_t bufsz, amp_error *err)
{
	git_config *cfg = NULL;
	unsigned char raw[8];
	FILE *f;
	size_t i;
	int status = AMP_OK;

	if (amp_store_config(st, "amp.syncId", buf, bufsz)) {
		if (!*buf || strlen(buf) > 64 ||
		    strspn(buf, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
			    strlen(buf))
			return amp_error_set(err, AMP_EUSAGE, "",
					     "git config amp.syncId: '%s' is not [A-Za-z0-9_-]{1,64}",
					     amp_term(buf));
		return AMP_OK;
	}
	if (!(f = fopen("/dev/urandom", "rb")) || fread(raw, 1, sizeof(raw), f) != sizeof(raw)) {
		if (f)
			fclose(f);
		return amp_error_set(err, AMP_EIO, "", "cannot read /dev/urandom");
	}
	fclose(f);
	for (i = 0; i < sizeof(raw) && 2 * i + 2 < bufsz; i++)
		snprintf(buf + 2 * i, 3, "%02x", raw[i]);
	if (git_repository_config(&cfg, amp_store_repo(st)) < 0 ||
	    git_config_set_string(cfg, "amp.syncId", buf) < 0)
		status = amp_error_git(err, AMP_EIO, "cannot store git config amp.syncId");
	git_config_free(cfg);
	return status;
}

/* Where a sync fetches to and pushes to. */
struct targets {
	char key[300];      /* the remote's name in the mirror namespace */
	char mirror[600];   /* the mirror of the messages ref */
	char emirror[600];  /* of the errors ref */
	char dst[600];      /* the remote's ref the messages ref goes to */
	char edst[600];     /* the errors ref's */
	char marks[600];    /* inbox: the hub's marker of dst, fetched (sync_hub.h) */
	char emarks[600];   /* of edst */
};

/* Inbox: what the last push delivered there. */
struct inbox_push {
	int left;           /* a hub before the "left" marker said it left it to
			     * the join under way, or the inbox held it */
	int have, ehave;    /* the messages (errors) ref went */
	git_oid tip, etip;  /* at these tips */
};

/* The targets of a sync with `remote`: the same refs there, or (`inbox`,
 * amp.syncPush inbox) this clone's inbox named `id`. */
static int sync_targets(amp_store *st, const char *remote, int inbox, const char *id,
			struct targets *t, amp_error *err)
{
	const char *ref = amp_store_messages_ref(st), *eref = amp_store_errors_ref(st);

	if (inbox) {
		snprintf(t->dst, sizeof(t->dst), AMP_SYNC_INBOX "%s/%s", id,
			 ref + strlen("refs/amp/"));
		snprintf(t->edst, sizeof(t->edst), AMP_SYNC_INBOX "%s/%s", id,
			 eref + strlen("refs/amp/"));
	} else {
		snprintf(t->dst, sizeof(t->dst), "%s", ref);
		snprintf(t->edst, sizeof(t->edst), "%s", eref);
	}
	if (mirror_key(remote, t->key, sizeof(t->key)) < 0)
		return amp_error_git(err, AMP_EIO, "cannot name the mirror of %s", remote);
	mirror_ref(t->key, ref, t->mirror, sizeof(t->mirror));
	mirror_ref(t->key, eref, t->emirror, sizeof(t->emirror));
	snprintf(t->marks, sizeof(t->marks), AMP_SYNC_MARKS "%s/%s", t->key,
		 ref + strlen("refs/amp/"));
	snprintf(t->emarks, sizeof(t->emarks), AMP_SYNC_MARKS "%s/%s", t->key,
		 eref + strlen("refs/amp/"));
	return AMP_OK;
}

/* amp_sync_push to the targets; to this clone's inbox (`inbox`), noting
 * in *ip what went. */
static int push_to(amp_store *st, const char *remote, const struct targets *t, int inbox,
		   int errors, json_t *paths, struct inbox_push *ip, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);

	if (!inbox)
		return amp_sync_push(st, remote, t->dst, t->edst, 0, errors, paths, NULL, err);
	memset(ip, 0, sizeof(*ip));
	ip->have = git_reference_name_to_id(&ip->tip, repo, amp_store_messages_ref(st)) == 0;
	ip->ehave = errors &&
		    git_reference_name_to_id(&ip->etip, repo, amp_store_errors_ref(st)) == 0;
	git_error_clear();
	return amp_sync_push(st, remote, t->dst, t->edst, 1, errors, paths, &ip->left, err);
}

/*
 * After a push to the inbox that the fetch after it finds not joined (its
 * records still missing): 1 when the hub's join has yet to take it (its
 * marker says it was left to the join under way; or, from a hub before
 * that marker, the hook said so or the inbox held it already, and the
 * markers say neither joined nor refused); else AMP_EIO (err filled): the
 * join refused it (the hub's reason), or took it and left out what the
 * fetch still lacks.
 */
static int inbox_pending(git_repository *repo, const char *remote, const char *ref,
			 const struct targets *t, const struct inbox_push *ip, amp_error *err)
{
	char why[AMP_MSG_MAX];
	int m = ip->have ? amp_sync_mark_read(repo, t->marks, &ip->tip, why, sizeof(why))
			 : AMP_SYNC_MARK_JOINED;
	int e = AMP_SYNC_MARK_JOINED;

	if (m != AMP_SYNC_MARK_REFUSED && ip->ehave)
		e = amp_sync_mark_read(repo, t->emarks, &ip->etip, why, sizeof(why));
	if (m == AMP_SYNC_MARK_REFUSED || e == AMP_SYNC_MARK_REFUSED)
		return amp_error_set(err, AMP_EIO, "",
				     "%s's join refused the push to its inbox: %s; nothing lost: the local history stays on %s",
				     remote, why, ref);
	if (m == AMP_SYNC_MARK_LEFT || e == AMP_SYNC_MARK_LEFT ||
	    (ip->left && (m == AMP_SYNC_MARK_NONE || e == AMP_SYNC_MARK_NONE)))
		return 1;
	return amp_error_set(err, AMP_EIO, "",
			     "%s took the push to its inbox but did not join it into %s (its reason above); nothing lost: the local history stays on %s",
			     remote, ref, ref);
}

/*
 * Inbox: the hub joins what it is given, so what the remote lacks (as far
 * as the last fetch knows) goes first, and one fetch then brings the join
 * back with everyone else's records.  *start_remote (*have_start_remote)
 * is the mirror's tip before; *delivered 1 when the push went through.
 * Records the hub's hook refused are noted in `aside` (hub_refused) for
 * the join to set aside.
 */
static int push_first(amp_store *st, const char *remote, const struct targets *t,
		      json_t *paths, json_t *aside, json_t *seen, unsigned *rounds,
		      git_oid *start_remote, int *have_start_remote, int *delivered,
		      struct inbox_push *ip, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	const char *ref = amp_store_messages_ref(st), *eref = amp_store_errors_ref(st);
	int epush, mpush = ahead_of_mirror(repo, ref, t->mirror, start_remote, have_start_remote);
	git_oid ignored;
	int ignored_have, rc;

	epush = ahead_of_mirror(repo, eref, t->emirror, &ignored, &ignored_have);
	if (!mpush && !epush)
		return AMP_OK;
	rc = push_to(st, remote, t, 1, epush, paths, ip, err);
	/* Refused records: set aside by the join below. */
	if (rc == PUSH_REFUSED && hub_refused(repo, ref, remote, paths, aside, seen, rounds) < 0)
		rc = AMP_EIO;
	if (rc < 0)
		return rc;
	/* A refused ref update (a busy hub's git gc holding its refs) is
	 * pushed again after the fetch, as a race is. */
	if (rc == PUSHED)
		*delivered = 1;
	return AMP_OK;
}

/* After a push of the same refs: the mirror says what the remote has, as a
 * remote-tracking ref does after a push. */
static void note_pushed(git_repository *repo, const struct targets *t, const struct joined *j,
			const struct joined *ej)
{
	git_reference *pushed_ref = NULL;

	if (git_reference_create(&pushed_ref, repo, t->mirror, &j->tip, 1, "amp sync: pushed") == 0)
		git_reference_free(pushed_ref);
	if (ej->push &&
	    git_reference_create(&pushed_ref, repo, t->emirror, &ej->tip, 1, "amp sync: pushed") == 0)
		git_reference_free(pushed_ref);
	git_error_clear();
}

/* The records res->fetched and res->pushed: what the local tip `before`
 * (NULL: none) lacked of the joined tip j->tip, and what the remote lacked
 * before the push (the mirror's tip then, `start_remote`, when the push
 * went to the inbox; else j->remote). */
static int count_moved(git_repository *repo, git_tree *before, const struct joined *j,
		       int delivered, const git_oid *start_remote, int have_start_remote,
		       amp_sync_result *res, amp_error *err)
{
	git_tree *after = NULL, *remote_tree = NULL;
	int status;

	if ((status = tree_of(repo, &j->tip, &after, err)) < 0 ||
	    (status = count_new(repo, before, after, &res->fetched, err)) < 0)
		goto cleanup;
	if (res->did_push) {
		/* pushed: what the remote lacked before the push */
		if (delivered ? have_start_remote &&
				(status = tree_of(repo, start_remote, &remote_tree, err)) < 0
			      : j->have_remote &&
				(status = tree_of(repo, &j->remote, &remote_tree, err)) < 0)
			goto cleanup;
		status = count_new(repo, remote_tree, after, &res->pushed, err);
	}
cleanup:
	git_tree_free(remote_tree);
	git_tree_free(after);
	return status;
}

int amp_sync(amp_store *st, amp_schema_set *set, const char *remote, amp_sync_result *res,
	     amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	const char *ref = amp_store_messages_ref(st), *eref = amp_store_errors_ref(st);
	struct targets t;
	git_tree *before = NULL;
	struct joined j, ej;
	struct conflict c;
	struct timespec now;
	long long retries;
	git_oid start, start_remote;
	char id[80] = "";
	amp_sync_checked checked;
	struct amp_sync_ssh ssh = { 0, NULL };
	int status, have_start, rc, delivered = 0, have_start_remote = 0;
	unsigned long replayed = 0, superseded = 0;
	unsigned rng, rounds = 0;
	struct inbox_push ip = { 0, 0, 0, { { 0 } }, { { 0 } } };
	json_t *refused = NULL, *paths = NULL, *aside = NULL, *seen = NULL;

	memset(res, 0, sizeof(*res));
	memset(&c, 0, sizeof(c));
	snprintf(res->remote, sizeof(res->remote), "%s", remote);
	if ((status = sync_retries(st, &retries, err)) < 0 ||
	    (status = sync_push_mode(st, &res->inbox, err)) < 0 ||
	    (res->inbox && (status = sync_id(st, id, sizeof(id), err)) < 0) ||
	    (status = sync_targets(st, remote, res->inbox, id, &t, err)) < 0)
		return status;
	/* made after the early returns above, which own nothing */
	if (!(refused = json_array()) || !(paths = json_object()) || !(aside = json_object()) ||
	    !(seen = json_object())) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	/* One ssh connection for this sync's git runs, and the next's. */
	if ((status = amp_sync_ssh_begin(st, remote, &ssh, err)) < 0)
		goto cleanup;
	clock_gettime(CLOCK_REALTIME, &now);
	rng = (unsigned)getpid() ^ (unsigned)now.tv_nsec;
	if ((have_start = amp_sync_read_ref(repo, ref, &start, err)) < 0) {
		status = AMP_EIO;
		goto cleanup;
	}
	if (have_start && (status = tree_of(repo, &start, &before, err)) < 0)
		goto cleanup;
	if ((status = amp_sync_checked_init(st, t.mirror, have_start ? &start : NULL, &checked,
					    err)) < 0)
		goto cleanup;
	if (res->inbox && have_start) {
		if ((status = push_first(st, remote, &t, paths, aside, seen, &rounds, &start_remote,
					 &have_start_remote, &delivered, &ip, err)) < 0)
			goto cleanup;
		res->did_push = delivered;
	}
	for (;;) {
		status = amp_sync_fetch(st, remote, t.key, res->inbox ? id : NULL, err);
		/* The server reset the connection (a git daemon with more
		 * clones at once than its listen queue): again, as a race. */
		if (status == FETCH_RESET &&
		    (status = try_again(-1, remote, ref, &rng, retries, res, err)) == AMP_OK)
			continue;
		if (status < 0)
			goto cleanup;
		status = amp_sync_join(st, set, ref, t.mirror, 1, refused, aside, &j, &c, err);
		json_object_clear(aside);
		if (status == AMP_ERULE)
			amp_sync_log_conflict(st, set, remote, &c, err);
		if (status < 0)
			goto cleanup;
		/* A hub without amp's hook takes anything: what it brought
		 * is checked once (verify.h); the escalations go with this
		 * sync's push, as below. */
		if (j.have_remote && amp_sync_check_new(st, set, remote, &checked, &j.remote) &&
		    !delivered)
			continue;
		/* Set aside: told once, and the escalations go with this
		 * push (the next join finds the remote behind). */
		if (json_array_size(refused)) {
			amp_sync_tell_refused(st, set, remote, refused);
			json_array_clear(refused);
			replayed += j.replayed;
			superseded += j.superseded;
			continue;
		}
		if (git_oid_is_zero(&j.tip)) {
			status = amp_error_set(err, AMP_EIO, "",
					       "no AMP store here nor on %s: run 'amp init'", remote);
			goto cleanup;
		}
		/* The errors ref is a log: joined by a union of its files,
		 * never a reason to refuse a sync. */
		status = amp_sync_join(st, set, eref, t.emirror, 0, NULL, NULL, &ej, NULL, err);
		if (status < 0)
			goto cleanup;
		res->replayed = j.replayed + replayed;
		res->superseded = j.superseded + superseded;
		if (!j.push && !ej.push)
			break;
		/* Inbox: the push that delivered was joined by the hub, or
		 * left to the join under way there: fetched again (as often
		 * as amp.syncRetries says) until that join took it, else said
		 * to be pending. */
		if (delivered) {
			if ((status = inbox_pending(repo, remote, ref, &t, &ip, err)) < 0)
				goto cleanup;
			if (res->refetched >= (unsigned)retries) {
				res->pending = 1;
				break;
			}
			backoff(&rng, res->refetched++, 100000, 1);
			continue;
		}
		rc = push_to(st, remote, &t, res->inbox, ej.push, paths, &ip, err);
		/* The hub's hook refused records (its own settings): set
		 * aside by the next join, the rest pushed again. */
		if (rc == PUSH_REFUSED &&
		    (rc = hub_refused(repo, ref, remote, paths, aside, seen, &rounds)) == AMP_OK)
			continue;
		if (rc < 0) {
			status = rc;
			goto cleanup;
		}
		if (rc == PUSHED && res->inbox) {
			res->did_push = 1;
			delivered = 1;
			if (j.have_remote)
				git_oid_cpy(&start_remote, &j.remote);
			have_start_remote = j.have_remote;
			continue; /* fetch what the hub made of it */
		}
		if (rc == PUSHED) {
			res->did_push = 1;
			note_pushed(repo, &t, &j, &ej);
			break;
		}
		if ((status = try_again(rc, remote, ref, &rng, retries, res, err)) < 0)
			goto cleanup;
	}
	res->errors_synced = 1;
	git_oid_tostr(res->tip, sizeof(res->tip), &j.tip);
	status = count_moved(repo, before, &j, delivered, &start_remote, have_start_remote, res,
			     err);
cleanup:
	amp_sync_ssh_end(&ssh);
	json_decref(refused);
	json_decref(paths);
	json_decref(aside);
	json_decref(seen);
	git_tree_free(before);
	return status;
}
