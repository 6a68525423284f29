/*
 * sync.c - fetch, join and push the SSOT through a git remote (sync.h).
 *
 * Transport is the user's own `git` program, run with an argv (never a
 * shell): ssh agents, credential helpers, insteadOf and proxies work as
 * they do for the user's other repositories.  Everything else (the join,
 * the compare-and-swap of the local ref) is libgit2, in process.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "record/record.h"
#include "base/clock.h"
#include "enforce/enforce.h"
#include "base/proc.h"
#include "read/read.h"
#include "protocol/protocol.h"
#include "write/write.h"
#include "store/store.h"
#include "sync.h"
#include "base/util.h"
#include "verify.h"

/* ---- running git ---------------------------------------------------------- */

/*
 * Runs `git --git-dir=<repo> <args...>` (args NULL-terminated) as amp_run
 * does (proc.h): stdout into *out when out is not NULL, else to stderr;
 * stderr to errfd (-1: amp's own).
 */
static int run_git(amp_store *st, const char *const *args, char **out, int errfd,
		   int *code, amp_error *err)
{
	const char *argv[32];
	char gitdir[4096 + 16];
	size_t n = 0;

	snprintf(gitdir, sizeof(gitdir), "--git-dir=%s",
		 git_repository_path(amp_store_repo(st)));
	argv[n++] = "git";
	argv[n++] = gitdir;
	while (*args && n < sizeof(argv) / sizeof(argv[0]) - 1)
		argv[n++] = *args++;
	argv[n] = NULL;
	return amp_run_errfd(argv, NULL, 0, out, NULL, errfd, code, err);
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

/* Markers are named "<seq>.ctl.superseded-<blob>.json", <blob> being the
 * set-aside record's blob id: one name per record content. */
#define MARKER_PREFIX "superseded-"

static int is_marker_name(const char *name)
{
	amp_entry_kind kind;
	const char *id;
	size_t id_len;

	return amp_store_entry_parse(name, NULL, &kind, &id, &id_len) == 0 &&
	       kind == AMP_ENTRY_CTL && id_len > strlen(MARKER_PREFIX) &&
	       !strncmp(id, MARKER_PREFIX, strlen(MARKER_PREFIX));
}

/* The identity of the record a marker sets aside: "s:<blob>". */
static void set_aside_key(const char *marker, char *buf, size_t bufsz)
{
	amp_entry_kind kind;
	const char *id;
	size_t id_len;

	amp_store_entry_parse(marker, NULL, &kind, &id, &id_len);
	snprintf(buf, bufsz, "s:%.*s", (int)(id_len - strlen(MARKER_PREFIX)),
		 id + strlen(MARKER_PREFIX));
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
		/* The record after a marker is set aside: its identity is the
		 * marker's, never its kind and id (the record in force has
		 * those). */
		if (i > 0 && is_marker_name(git_tree_entry_name(git_tree_entry_byindex(t, i - 1))))
			set_aside_key(git_tree_entry_name(git_tree_entry_byindex(t, i - 1)), key,
				      sizeof(key));
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

		if (amp_store_task_dir(task, dir, sizeof(dir)) < 0)
			continue;
		if ((status = index_dir(repo, a, dir, &ia, err)) == AMP_OK &&
		    (status = index_dir(repo, b, dir, &ib, err)) == AMP_OK)
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

/* A record the two sides hold with different content. */
struct conflict {
	char local[AMP_PATH_MAX * 2];  /* its path in the local commit */
	char remote[AMP_PATH_MAX * 2]; /* the remote's record of that id */
	git_oid blob;                  /* the local content */
	git_oid commit;                /* the local commit that added it */
	char id[AMP_PATH_MAX];         /* its msg_id, for a message */
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
 * What a replay needs beyond the trees.  Records of a task the remote
 * wrote since the two histories parted ("contested") are checked again in
 * their new place, after the remote's; a record a rule refuses there is
 * set aside: committed after a "superseded" marker (control.h), kept but
 * in force nowhere.  A task only one side wrote keeps its order, but rules
 * reach across tasks (a dependency cycle, a context_ref to a record of
 * another task that was set aside), so a clone's join checks every record
 * too (`all`): a record the hub's hook would refuse is set aside here,
 * and the rest is delivered, instead of a push the hub refuses at every
 * sync (issue 30).
 */
struct replay_ctx {
	amp_store *st;
	amp_schema_set *set;
	json_t *contested;     /* task id -> index into logs + 1, or 0: not read yet */
	amp_task_log *logs;    /* of the contested tasks, as built so far */
	size_t nlogs;
	char now[AMP_TIME_BUFSZ];
	struct updates u;      /* of the commit being replayed */
	char trailers[4096];   /* Amp-Superseded: lines of that commit */
	unsigned long superseded; /* records set aside, in all */
	char agent[AMP_AGENT_MAX + 1]; /* the Amp-Agent of the commit being
					* replayed: who wrote its records */
	json_t *renamed;       /* local id -> the id the join gave it */
	json_t *refused;       /* records a rule set aside: {task, kind, id,
				* reason, blob}, for amp_sync to log and
				* escalate (NULL: nobody asks) */
	json_t *aside;         /* blob id -> reason: records the hub's hook
				* refused, set aside wherever they land
				* (NULL: none) */
	git_tree *local_tree;  /* the local tip's */
};

static void replay_ctx_free(struct replay_ctx *r)
{
	size_t i;

	for (i = 0; i < r->nlogs; i++)
		amp_task_log_free(&r->logs[i]);
	free(r->logs);
	json_decref(r->contested);
	json_decref(r->renamed);
	updates_clear(&r->u);
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

/* The review_request a verdict names in its context_ref, or NULL. */
static const char *request_of(const json_t *verdict)
{
	const json_t *refs = json_object_get(verdict, "context_ref"), *v;
	size_t i;

	json_array_foreach(refs, i, v)
		if (json_is_string(v) && !strncmp(json_string_value(v), "review_request-", 15))
			return json_string_value(v);
	return NULL;
}

/* The record in force that record e (refused on log) lost its place to,
 * when there is one: the message whose first ACK stands, the first
 * verdict on the same review_request. */
static const char *winner(const amp_task_log *log, const amp_entry *e)
{
	const char *type = amp_json_str(e->doc, "type"), *req, *other;
	size_t i;

	if (e->kind == AMP_ENTRY_ACK)
		return amp_task_log_find(log, AMP_ENTRY_ACK, e->id) ? e->id : NULL;
	if (e->kind != AMP_ENTRY_MSG || !type || strcmp(type, "review_verdict") ||
	    !(req = request_of(e->doc)))
		return NULL;
	for (i = 0; i < log->count; i++) {
		const json_t *d = log->entries[i].doc;

		if (log->entries[i].kind == AMP_ENTRY_MSG && amp_json_str(d, "type") &&
		    !strcmp(amp_json_str(d, "type"), "review_verdict") &&
		    (other = request_of(d)) && !strcmp(other, req))
			return log->entries[i].id;
	}
	return NULL;
}

/* Adds record `name` (blob) of task dir `dir` to the commit being built. */
static int add_update(struct replay_ctx *r, const char *dir, const char *name,
		      const git_oid *blob, amp_error *err)
{
	char path[AMP_PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (updates_add(&r->u, path, blob) < 0)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	return AMP_OK;
}

/*
 * Sets record `doc` (blob, of `kind` and `id`) aside in contested `log`:
 * a marker at the task's next seq, naming it, then the record.
 */
static int set_aside(struct replay_ctx *r, amp_task_log *log, const char *dir,
		     amp_entry_kind kind, const char *id, json_t *doc, const git_oid *blob,
		     const char *by, const char *reason, amp_error *err)
{
	git_repository *repo = amp_store_repo(r->st);
	char record[AMP_PATH_MAX], marker_id[64], marker[AMP_PATH_MAX], *text = NULL;
	json_t *m = NULL;
	git_oid mblob;
	int status = AMP_OK, seq = log->next_seq;
	size_t len;

	snprintf(marker_id, sizeof(marker_id), MARKER_PREFIX "%s", git_oid_tostr_s(blob));
	if (amp_store_entry_name(seq, AMP_ENTRY_CTL, marker_id, marker, sizeof(marker)) < 0 ||
	    amp_store_entry_name(seq + 1, kind, id, record, sizeof(record)) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "%s: no room for a record name", id);
		goto cleanup;
	}
	m = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "protocol_version", AMP_PROTOCOL,
		      "type", "superseded", "task_id", log->task_id, "from", "system",
		      "timestamp", r->now, "record", record, "reason", reason);
	if (m && by)
		json_object_set_new(m, "by", json_string(by));
	if (!m || !(text = amp_message_dump(m))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	len = strlen(text);
	if (git_blob_create_from_buffer(&mblob, repo, text, len) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot write a superseded marker");
		goto cleanup;
	}
	if ((status = add_update(r, dir, marker, &mblob, err)) < 0 ||
	    (status = add_update(r, dir, record, blob, err)) < 0)
		goto cleanup;
	if (amp_task_log_append(log, seq, AMP_ENTRY_CTL, marker_id, m, 0) < 0 ||
	    amp_task_log_append(log, seq + 1, kind, id, json_incref(doc), 1) < 0) {
		m = NULL;
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	m = NULL;
	r->superseded++;
	len = strlen(r->trailers);
	snprintf(r->trailers + len, sizeof(r->trailers) - len, "Amp-Superseded: %s %s%s%s\n",
		 kind == AMP_ENTRY_MSG ? "message" : kind == AMP_ENTRY_ACK ? "ack" : "control",
		 id, by ? " by " : "", by ? by : "");
cleanup:
	free(text);
	json_decref(m);
	return status;
}

/*
 * set_aside, and the record noted in r->refused (when someone asks) for
 * amp_sync to log and escalate.
 */
static int set_aside_told(struct replay_ctx *r, amp_task_log *log, const char *dir,
			  amp_entry_kind kind, const char *id, json_t *doc, const git_oid *blob,
			  const char *by, const char *reason, amp_error *err)
{
	int status = set_aside(r, log, dir, kind, id, doc, blob, by, reason, err);

	if (status == AMP_OK && r->refused &&
	    json_array_append_new(r->refused,
				  json_pack("{s:s,s:s,s:s,s:s,s:s}", "task", log->task_id, "kind",
					    kind == AMP_ENTRY_MSG ? "message" :
					    kind == AMP_ENTRY_ACK ? "ack" : "control",
					    "id", id, "reason", reason,
					    "blob", git_oid_tostr_s(blob))) < 0)
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
	return status;
}

/*
 * Decides the place of one local record of a contested task on the joined
 * history `log`: appended as it is (AMP_OK, *aside 0), or set aside when a
 * rule refuses it there, or it escalates a cause already escalated (*aside
 * 1).  AMP_ESCHEMA when it is not a well-formed record in that place
 * (left to the caller), AMP_EIO.
 */
static int place_record(struct replay_ctx *r, amp_task_log *log, git_tree *base, const char *dir,
			amp_entry_kind kind, const char *id, const git_oid *blob,
			const char *name, int *aside, amp_error *err)
{
	git_repository *repo = amp_store_repo(r->st);
	git_blob *b = NULL;
	json_t *doc = NULL;
	amp_errlist errs = { 0 };
	amp_error perr;
	const amp_entry *first;
	char cause[1024];
	const char *type, *by = NULL, *hub;
	int status = AMP_OK, seq = log->next_seq;

	*aside = 0;
	if (git_blob_lookup(&b, repo, blob) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read %s/%s", dir, name);
		goto cleanup;
	}
	if (amp_bounds_parse_record(git_blob_rawcontent(b), (size_t)git_blob_rawsize(b), &doc,
				    &perr) < 0 || !json_is_object(doc)) {
		status = AMP_ESCHEMA; /* unreadable: the hub's hook judges it */
		goto cleanup;
	}
	/* The hub's hook refused it (its own settings, amp.approvalRequired
	 * or amp.protectedBranches there): set aside wherever it lands. */
	if (r->aside && (hub = amp_json_str(r->aside, git_oid_tostr_s(blob)))) {
		*aside = 1;
		status = set_aside_told(r, log, dir, kind, id, doc, blob, NULL, hub, err);
		goto cleanup;
	}
	type = amp_json_str(json_object_get(doc, "payload"), "escalation_type");
	/* AMP/1.0 "once per cause": two clones' watchers saw the same cause. */
	if (kind == AMP_ENTRY_MSG && type && amp_json_str(doc, "from") &&
	    !strcmp(amp_json_str(doc, "from"), "system") &&
	    (first = amp_task_has_escalation(log, type, "system",
					     amp_escalation_cause(doc, cause, sizeof(cause))))) {
		char reason[1200];

		snprintf(reason, sizeof(reason), "%s escalated %s first (once per cause)",
			 first->id, cause);
		*aside = 1;
		status = set_aside(r, log, dir, kind, id, doc, blob, first->id, reason, err);
		goto cleanup;
	}
	if (amp_task_log_append(log, seq, kind, id, json_incref(doc), 0) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	status = amp_hook_check_record(r->st, r->set, base, log, log->count - 1, r->agent,
				       &errs);
	if (status != AMP_ERULE)
		goto cleanup;
	/* Refused in its new place: take it back out and set it aside. */
	log->count--;
	free(log->entries[log->count].id);
	json_decref(log->entries[log->count].doc);
	log->next_seq = seq;
	by = winner(log, &(amp_entry){ seq, kind, (char *)id, doc });
	*aside = 1;
	status = set_aside_told(r, log, dir, kind, id, doc, blob, by,
				errs.count ? errs.items[0].message : "refused in its place", err);
cleanup:
	amp_errlist_free(&errs);
	json_decref(doc);
	git_blob_free(b);
	return status;
}

/* Reads blob `id` as a JSON object into *doc (NULL when it is not one). */
static int read_doc(git_repository *repo, const git_oid *id, json_t **doc, amp_error *err)
{
	git_blob *b = NULL;
	amp_error perr;

	*doc = NULL;
	if (git_blob_lookup(&b, repo, id) < 0)
		return amp_error_git(err, AMP_EIO, "cannot read blob %s", git_oid_tostr_s(id));
	if (amp_bounds_parse_record(git_blob_rawcontent(b), (size_t)git_blob_rawsize(b), doc,
				    &perr) < 0 || !json_is_object(*doc)) {
		json_decref(*doc);
		*doc = NULL;
	}
	git_blob_free(b);
	return AMP_OK;
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
	if ((status = read_doc(amp_store_repo(r->st), blob, &doc, err)) < 0 || !doc)
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
	if (index_dir(amp_store_repo(r->st), r->local_tree, dir, &lix, &ignored) == 0)
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
	    ((status = read_doc(amp_store_repo(r->st), blob, &doc, err)) < 0 || !doc))
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

	record_key(mname, mkey, sizeof(mkey), NULL, &mk, &id, &id_len);
	snprintf(idm, sizeof(idm), "%.*s", (int)id_len, id);
	if (json_object_get(ix->ids, mkey))
		return AMP_OK; /* the same record, set aside there too */
	if (amp_store_entry_parse(rname, NULL, &rk, &id, &id_len) < 0)
		return AMP_OK;
	snprintf(idr, sizeof(idr), "%.*s", (int)id_len, id);
	snprintf(path, sizeof(path), "%s/%s", dir, mname);
	if (git_tree_entry_bypath(&me, ct, path) < 0) {
		git_error_clear();
		goto cleanup;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, rname);
	if (git_tree_entry_bypath(&re, ct, path) < 0) {
		git_error_clear();
		goto cleanup;
	}
	if ((status = read_doc(repo, git_tree_entry_id(me), &marker, err)) < 0 ||
	    (status = read_doc(repo, git_tree_entry_id(re), &record, err)) < 0)
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
	if ((status = add_update(r, dir, newm, &mblob, err)) < 0 ||
	    (status = add_update(r, dir, newr, git_tree_entry_id(re), err)) < 0)
		goto cleanup;
	ix->next_seq = seq + 2;
	git_oid_tostr(hex, sizeof(hex), &mblob);
	json_object_set_new(ix->ids, mkey, json_string(hex));
	set_aside_key(mname, rkey, sizeof(rkey));
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
		if (updates_add(&r->u, path, &blob) < 0) {
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
	char path[AMP_PATH_MAX * 2];
	size_t i, n;
	int status = AMP_OK;

	if (git_tree_entry_bypath(&de, ct, dir) < 0 || git_tree_entry_type(de) != GIT_OBJECT_TREE ||
	    git_tree_lookup(&t, repo, git_tree_entry_id(de)) < 0) {
		git_error_clear(); /* no directory: nothing added */
		goto cleanup;
	}
	n = git_tree_entrycount(t);
	for (i = 0; i < n; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(t, i);
		const char *name = git_tree_entry_name(e);

		if (amp_utf8_valid(name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, name);
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
	git_tree_entry_free(pe);
	git_tree_entry_free(de);
	git_tree_free(t);
	return status;
}

/*
 * Adds to r->u the records commit tree `ct` adds to its parent's `pt`
 * (NULL: a root commit), each under the next free seq of its task in
 * `base`, the tree being built; skips the records `base` already holds with
 * the same content.  Records of contested tasks are placed by
 * place_record.  AMP_ERULE with *c filled for a record `base` holds with
 * other content that is not set aside.
 */
static int replay_records(struct replay_ctx *r, git_tree *pt, git_tree *ct, git_tree *base,
			  struct conflict *c, amp_error *err)
{
	git_repository *repo = amp_store_repo(r->st);
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
		amp_task_log *log;
		size_t i, n = 0;

		if (!json_is_object(files)) {
			status = amp_error_set(err, AMP_EIO, "",
					       "the directory of task %s cannot be read", task);
			goto cleanup;
		}
		if (amp_store_task_dir(task, dir, sizeof(dir)) < 0)
			continue;
		if ((status = refuse_bad_names(repo, pt, ct, dir, err)) < 0)
			goto cleanup;
		json_decref(ix.ids);
		ix.ids = NULL;
		if ((status = index_dir(repo, base, dir, &ix, err)) < 0)
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
		for (i = 0; i < n; i++) {
			git_tree_entry *e = NULL;
			amp_entry_kind kind;
			const char *id, *have;
			size_t id_len;
			char idbuf[AMP_PATH_MAX];
			git_oid blob;
			int aside = 0;

			/* A record set aside by an earlier join that was not
			 * pushed: it moves with its marker. */
			if (is_marker_name(names[i]) && i + 1 < n) {
				status = replay_pair(r, log, &ix, dir, ct, names[i], names[i + 1], err);
				if (status < 0)
					goto cleanup;
				i++;
				continue;
			}
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			if (git_tree_entry_bypath(&e, ct, path) < 0) {
				git_error_clear(); /* removed, by hand: nothing to add */
				continue;
			}
			git_oid_cpy(&blob, git_tree_entry_id(e));
			git_tree_entry_free(e);
			record_key(names[i], key, sizeof(key), NULL, &kind, &id, &id_len);
			if (id) {
				snprintf(idbuf, sizeof(idbuf), "%.*s", (int)id_len, id);
				if ((status = follow_renames(r, kind, idbuf, sizeof(idbuf), &blob,
							     err)) < 0)
					goto cleanup;
				snprintf(key, sizeof(key), "%c:%.400s", (char)kind, idbuf);
			}
			git_oid_tostr(hex, sizeof(hex), &blob);
			have = json_string_value(json_object_get(ix.ids, key));
			if (have && !strcmp(have, hex))
				continue; /* already there, byte for byte */
			/* The remote set this very record aside already (a
			 * hub's join of an inbox, or another clone's): kept
			 * there, nothing to add. */
			{
				char mkey[AMP_PATH_MAX];

				snprintf(mkey, sizeof(mkey), "c:" MARKER_PREFIX "%s", hex);
				if (json_object_get(ix.ids, mkey))
					continue;
			}
			/* One id, two records: the local one is renamed. */
			if (have && id && (kind == AMP_ENTRY_MSG || kind == AMP_ENTRY_CTL)) {
				status = rename_record(r, &ix, dir, kind, idbuf, sizeof(idbuf), &blob, err);
				if (status == AMP_EIO)
					goto cleanup;
				if (status == AMP_OK) {
					snprintf(key, sizeof(key), "%c:%.400s", (char)kind, idbuf);
					git_oid_tostr(hex, sizeof(hex), &blob);
					have = json_string_value(json_object_get(ix.ids, key));
					if (have)
						continue; /* there already, renamed so */
				}
				status = AMP_OK;
			}
			/* A record of a contested task takes its place after
			 * the remote's, if a rule lets it; else it is set
			 * aside. */
			if (log && id) {
				status = place_record(r, log, base, dir, kind, idbuf, &blob, names[i],
						      &aside, err);
				if (status == AMP_EIO)
					goto cleanup;
				ix.next_seq = log->next_seq;
				if (aside) {
					json_object_set_new(ix.ids, key, json_string(hex));
					continue;
				}
				if (status == AMP_OK && !have) {
					/* placed: it is the log's last entry */
					if (amp_store_entry_name(log->entries[log->count - 1].seq, kind,
								 idbuf, name, sizeof(name)) < 0)
						continue;
					json_object_set_new(ix.ids, key, json_string(hex));
					if ((status = add_update(r, dir, name, &blob, err)) < 0)
						goto cleanup;
					continue;
				}
				if (status == AMP_OK) {
					/* placed, but its identity is taken: undo */
					log->count--;
					free(log->entries[log->count].id);
					json_decref(log->entries[log->count].doc);
					ix.next_seq = --log->next_seq;
				} else if (!have) {
					/* not well-formed there: it goes as it is,
					 * for the hub's hook to judge */
					log->next_seq = ix.next_seq + 1;
				}
				status = AMP_OK;
			}
			if (have) {
				snprintf(c->local, sizeof(c->local), "%s", path);
				find_name(repo, base, dir, key, c->remote, sizeof(c->remote));
				git_oid_cpy(&c->blob, &blob);
				snprintf(c->id, sizeof(c->id), "%s", id && kind == AMP_ENTRY_MSG ? idbuf : "");
				status = amp_error_set(err, AMP_ERULE, "",
						       "conflict: %s (local) and %s (remote) are the same record with different content",
						       c->local, c->remote);
				goto cleanup;
			}
			if (!id)
				snprintf(name, sizeof(name), "%s", names[i]);
			else if (amp_store_entry_name(ix.next_seq++, kind, idbuf, name,
						      sizeof(name)) < 0)
				continue; /* cannot happen: it fitted before */
			json_object_set_new(ix.ids, key, json_string(hex));
			if ((status = add_update(r, dir, name, &blob, err)) < 0)
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
	    git_commit_lookup(&w->tip, w->repo, onto) < 0 ||
	    git_commit_tree(&w->tree, w->tip) < 0 || git_revwalk_new(&w->walk, w->repo) < 0 ||
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
	if (git_commit_lookup(&w->lc, w->repo, &w->oid) < 0 || git_commit_tree(&w->ct, w->lc) < 0 ||
	    (git_commit_parentcount(w->lc) > 0 &&
	     (git_commit_parent(&w->parent, w->lc, 0) < 0 ||
	      git_commit_tree(&w->pt, w->parent) < 0)))
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
	    git_tree_lookup(&nt, w->repo, &tree_oid) < 0) {
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
	if (git_commit_lookup(&next, w->repo, &next_oid) < 0) {
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
static int replay(amp_store *st, amp_schema_set *set, const git_oid *local,
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
	r.st = st;
	r.set = set;
	r.refused = refused;
	r.aside = aside;
	*replayed = *superseded = 0;
	if ((status = walker_start(&w, st, local, base, onto, err)) < 0 ||
	    (status = amp_clock_now_ms(&now_ms, err)) < 0)
		goto cleanup;
	amp_time_format(now_ms, r.now);
	if (!(r.contested = json_object())) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	/* The tasks the remote wrote since the histories parted. */
	if ((base && (git_commit_lookup(&bc, w.repo, base) < 0 || git_commit_tree(&bt, bc) < 0)) ||
	    amp_store_diff_tasks(w.repo, bt, w.tree, r.contested, -1) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot compare the remote's tip with the base");
		goto cleanup;
	}
	json_object_foreach(r.contested, task, v)
		json_object_set_new(r.contested, task, json_integer(0));
	if (git_commit_lookup(&lc, w.repo, local) < 0 || git_commit_tree(&r.local_tree, lc) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read the local tip");
		goto cleanup;
	}
	while ((status = walker_next(&w, err)) == 1) {
		const char *msg = git_commit_message(w.lc);
		size_t len, size;

		r.trailers[0] = '\0';
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
		*replayed += r.u.count;
		updates_clear(&r.u);
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
static int replay_union(amp_store *st, const git_oid *local, const git_oid *base,
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
			if (updates_add(&u, path, &d->new_file.id) < 0) {
				status = amp_error_set(err, AMP_EIO, "", "out of memory");
				goto cleanup;
			}
		}
		if (u.count && (status = walker_commit(&w, NULL, &u, err)) < 0)
			goto cleanup;
		updates_clear(&u);
	}
	if (status == 0) {
		git_oid_cpy(out, git_commit_id(w.tip));
		status = AMP_OK;
	}
cleanup:
	updates_clear(&u);
	free(u.items);
	git_diff_free(diff);
	walker_free(&w);
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
	unsigned long replayed;
	unsigned long superseded;
};

#define AMP_SYNC_JOIN_TRIES 100

/*
 * Joins local `ref` with its mirror.  Diverged histories are joined by
 * replaying the local records onto the mirror's tip (`records`: the
 * messages ref, replay) or the local files (the errors ref, replay_union);
 * so is a history the mirror is behind when `aside` names records the
 * hub's hook refused, to set them aside.  A local writer moving the ref
 * meanwhile makes the join start over.
 */
static int join(amp_store *st, amp_schema_set *set, const char *ref, const char *mirror,
		int records, json_t *refused, json_t *aside, struct joined *j,
		struct conflict *c, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	git_oid local, base, next;
	int have_local, rc, tries;
	char why[300];

	snprintf(why, sizeof(why), "amp sync: joined with %s", mirror);
	for (tries = 0; tries < AMP_SYNC_JOIN_TRIES; tries++) {
		memset(j, 0, sizeof(*j));
		if (refused)
			json_array_clear(refused);
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
		if (rc == 0 && git_oid_equal(&base, &j->remote) &&
		    !(records && aside && json_object_size(aside))) {
			git_oid_cpy(&j->tip, &local); /* the remote is behind */
			j->push = 1;
			return AMP_OK;
		}
		if (!have_local || (rc == 0 && git_oid_equal(&base, &local))) {
			git_oid_cpy(&next, &j->remote); /* fast-forward */
		} else if (!records) {
			int status = replay_union(st, &local, rc == 0 ? &base : NULL, &j->remote,
						  &next, err);
			if (status < 0)
				return status;
			j->push = !git_oid_equal(&next, &j->remote);
		} else {
			int status = replay(st, set, &local, rc == 0 ? &base : NULL, &j->remote, refused,
					    aside, &next, &j->replayed, &j->superseded, c, err);
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

static int absorb_locked(amp_store *st, amp_schema_set *set, const char *ref,
			 const git_oid *from, int records, json_t *refused, struct conflict *cp,
			 const char *why, amp_sync_absorbed *out, amp_error *err);
static void tell_refused(amp_store *st, amp_schema_set *set, const char *source,
			 const char *who, const json_t *refused);

int amp_sync_absorb(amp_store *st, amp_schema_set *set, const char *ref, const git_oid *from,
		    const char *inbox, amp_sync_absorbed *out, amp_error *err)
{
	int records = !strcmp(ref, amp_store_messages_ref(st)), lock, status;
	struct conflict c;
	char why[300], who[400];
	json_t *refused = json_array();

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	if (!refused)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	snprintf(why, sizeof(why), "amp hook: joined %.40s", git_oid_tostr_s(from));
	/* Joins on a hub take turns, as amp's writers do: one replay each,
	 * instead of every push's join racing every other's. */
	if ((lock = amp_store_lock(st, ref, err)) < 0) {
		json_decref(refused);
		return AMP_EIO;
	}
	status = absorb_locked(st, set, ref, from, records, refused, &c, why, out, err);
	amp_store_unlock(lock);
	/* What the join set aside is told once, as a clone's join tells it
	 * (the escalation is the hub's own write, after the join's). */
	if (status == AMP_OK && json_array_size(refused)) {
		snprintf(who, sizeof(who), "the hub's join of %.300s", inbox);
		tell_refused(st, set, inbox, who, refused);
	}
	json_decref(refused);
	return status;
}

static int absorb_locked(amp_store *st, amp_schema_set *set, const char *ref,
			 const git_oid *from, int records, json_t *refused, struct conflict *cp,
			 const char *why, amp_sync_absorbed *out, amp_error *err)
{
	git_repository *repo = amp_store_repo(st);
	git_oid tip, base, next;
	int tries, rc, status;

	for (tries = 0; tries < AMP_SYNC_JOIN_TRIES; tries++) {
		json_array_clear(refused);
		if ((rc = read_ref(repo, ref, &tip, err)) < 0)
			return AMP_EIO;
		if (!rc) {
			/* The hub's first history: the inbox's as it is (the
			 * hook checked it whole). */
			if ((rc = cas_ref(repo, ref, NULL, from, why, err)) < 0)
				return rc;
			if (rc == 0) {
				git_oid_cpy(&out->tip, from);
				return AMP_OK;
			}
			continue;
		}
		if (git_oid_equal(&tip, from) || git_graph_descendant_of(repo, &tip, from) == 1) {
			git_oid_cpy(&out->tip, &tip);
			return AMP_OK; /* it holds all of it already */
		}
		rc = git_merge_base(&base, repo, &tip, from);
		if (rc < 0 && rc != GIT_ENOTFOUND)
			return amp_error_git(err, AMP_EIO, "cannot compare %s with %s", ref,
					     git_oid_tostr_s(from));
		git_error_clear();
		/* Every record is checked again in its place: nothing of the
		 * inbox was checked against the rules here. */
		status = records ? replay(st, set, from, rc == 0 ? &base : NULL, &tip, refused, NULL,
					  &next, &out->replayed, &out->superseded, cp, err)
				 : replay_union(st, from, rc == 0 ? &base : NULL, &tip, &next, err);
		if (status < 0)
			return status;
		if ((rc = cas_ref(repo, ref, &tip, &next, why, err)) < 0)
			return rc;
		if (rc == 0) {
			git_oid_cpy(&out->tip, &next);
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
	/* No auto maintenance: a sync is a hot path, and the clone's git gc
	 * is the user's (or a cron's) to run. */
	const char *args[] = { "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
			       "--no-auto-maintenance", "--prune", remote, refspec, NULL };

	snprintf(refspec, sizeof(refspec), "+refs/amp/*:%s%s/*", AMP_SYNC_NAMESPACE, key);
	if ((status = run_git(st, args, NULL, -1, &code, err)) < 0)
		return status;
	if (code != 0)
		return amp_error_set(err, AMP_EIO, "",
				     "git fetch from %s failed (exit %d, git's reason above); nothing changed locally",
				     remote, code);
	return AMP_OK;
}

enum { PUSHED, PUSH_RACED, PUSH_REFUSED };

/* The most of git push's stderr read for the hook's refusals. */
#define AMP_SYNC_PUSH_ERR_MAX (1024 * 1024)

/*
 * The records the hub's amp hook refused in an update of `dst`, read from
 * git push's stderr: each line "remote: amp hook: refused <dst>: commit
 * <hex>: <record path>: <reason>" (amp hook pre-receive's refusal) into
 * `paths` as {path: reason}.  A line that names no record file (a refusal
 * of the commit, a signature) is not one.
 */
static void hook_refusals(char *text, const char *dst, json_t *paths)
{
	char prefix[700], *line, *save = NULL;

	snprintf(prefix, sizeof(prefix), "amp hook: refused %s: commit ", dst);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = strstr(line, prefix), *file, *end, *why;
		size_t len = strlen(line);

		/* git pads the remote's lines (sideband.c): cut the blanks. */
		while (len && (line[len - 1] == ' ' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (!p)
			continue;
		file = p + strlen(prefix);
		while (isxdigit((unsigned char)*file))
			file++;
		if (file == p + strlen(prefix) || strncmp(file, ": tasks/", 8))
			continue;
		file += 2;
		if (!(end = strstr(file, ": ")) || end - file < 6 || strncmp(end - 5, ".json", 5))
			continue;
		*end = '\0';
		why = end + 2;
		if (!json_object_get(paths, file))
			json_object_set_new(paths, file, json_string(why));
	}
}

/*
 * Pushes the messages ref (and the errors ref when `errors`) to `dst` and
 * `edst` on the remote: non-forced to the same names (amp.syncPush ref),
 * or forced to the clone's own inbox (amp.syncPush inbox: nobody else
 * writes there).  Returns PUSHED, PUSH_RACED (someone pushed first: fetch
 * and join again), PUSH_REFUSED (the hub's amp hook refused records,
 * named in `refused` as {path: reason}; err filled), or a negative status
 * (err filled; git's reason went to stderr).
 */
static int push(amp_store *st, const char *remote, const char *dst, const char *edst,
		int force, int errors, json_t *refused, amp_error *err)
{
	const char *ref = amp_store_messages_ref(st), *eref = amp_store_errors_ref(st);
	char spec[1300], espec[1300], shown[1300], *out = NULL, *line, *save = NULL;
	char *said = NULL;
	int code, status, found = 0;
	size_t got = 0;
	FILE *f = tmpfile();
	const char *args[] = { "-c", "advice.pushUpdateRejected=false", "push", "--porcelain",
			       remote, spec, errors ? espec : NULL, NULL };

	snprintf(spec, sizeof(spec), "%s%s:%s", force ? "+" : "", ref, dst);
	snprintf(espec, sizeof(espec), "%s%s:%s", force ? "+" : "", eref, edst);
	/* --porcelain names the refs without the "+" */
	snprintf(shown, sizeof(shown), "%s:%s", ref, dst);
	json_object_clear(refused);
	/* git's stderr is kept to read the hook's refusals, then shown. */
	status = run_git(st, args, &out, f ? fileno(f) : -1, &code, err);
	if (f && fseek(f, 0, SEEK_SET) == 0 && (said = malloc(AMP_SYNC_PUSH_ERR_MAX + 1))) {
		got = fread(said, 1, AMP_SYNC_PUSH_ERR_MAX, f);
		said[got] = '\0';
		fwrite(said, 1, got, stderr);
	}
	if (f)
		fclose(f);
	if (status < 0)
		goto cleanup;
	status = PUSHED;
	/* --porcelain: "<flag>\t<from>:<to>\t<summary>" per ref; "!" is a
	 * refusal, "[rejected]" the remote's ref moved first, "[remote
	 * rejected]" a hook or the server said no. */
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *summary;

		if (!line[0] || line[1] != '\t' || strncmp(line + 2, shown, strlen(shown)) ||
		    line[2 + strlen(shown)] != '\t')
			continue;
		found = 1;
		summary = line + 3 + strlen(shown);
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
		/* The hub's amp hook names the records it refused. */
		if (status == AMP_EIO && !strncmp(summary, "[remote rejected]", 17) && said) {
			hook_refusals(said, dst, refused);
			if (json_object_size(refused))
				status = PUSH_REFUSED;
		}
		break;
	}
	if (!found)
		status = amp_error_set(err, AMP_EIO, "",
				       "git push to %s failed (exit %d, git's reason above); nothing lost: the local history stays on %s",
				       remote, code, ref);
cleanup:
	free(said);
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

/*
 * Logs the conflict on the errors ref (the local record's bytes and why)
 * and, for a message, escalates it to the admin in the local SSOT, once:
 * two versions of one message cannot both stand (AMP/1.0 conflict:
 * "cannot be reconciled").
 */
/*
 * Tells the admin about a local record (blob) a sync could not join as it
 * was: `reason` logged on the errors ref with the record's bytes, and a
 * `conflict` escalation (warning, from system) with `description` written
 * into task `task`, once per `affected` msg_id (NULL: none).  Best effort:
 * what the join did is what the user sees first.
 */
static void tell_admin(amp_store *st, amp_schema_set *set, const char *remote,
		       const git_oid *blob_id, const char *task, const char *affected,
		       const char *reason, const char *description)
{
	git_blob *blob = NULL;
	amp_errlist reasons = { NULL, 0, 0 }, errs = { NULL, 0, 0 };
	amp_error ignored;
	amp_escalation e = { 0 };
	amp_send_result res;
	json_t *list = NULL;
	int64_t now_ms;

	if (git_blob_lookup(&blob, amp_store_repo(st), blob_id) < 0) {
		git_error_clear();
		return;
	}
	amp_errlist_add(&reasons, AMP_ERULE, "", "%s", reason);
	amp_store_log_rejection(st, "sync", remote, git_blob_rawcontent(blob),
				(size_t)git_blob_rawsize(blob), 0, AMP_ERULE, &reasons, &ignored);
	if (task && amp_clock_now_ms(&now_ms, &ignored) == 0 &&
	    (list = affected ? json_pack("[s]", affected) : json_array())) {
		e.task_id = task;
		e.from = "system";
		e.escalation_type = "conflict";
		e.severity = "warning";
		e.triggered_by = "system";
		e.description = description;
		e.affected_msgs = list;
		e.auto_suspended = -1;
		e.now_ms = now_ms;
		e.once = 1;
		amp_send_escalation(st, set, &e, NULL, &res, &errs);
	}
	json_decref(list);
	amp_errlist_free(&errs);
	amp_errlist_free(&reasons);
	git_blob_free(blob);
}

static void log_conflict(amp_store *st, amp_schema_set *set, const char *remote,
			 const struct conflict *c, const amp_error *why)
{
	char task[64], reason[AMP_MSG_MAX + 64], description[2048];
	int named = c->id[0] && amp_msg_id_task(c->id, task, sizeof(task)) == 0;

	snprintf(reason, sizeof(reason), "%s (local commit %s)", why->message,
		 git_oid_tostr_s(&c->commit));
	snprintf(description, sizeof(description),
		 "amp sync with %.200s: %.100s is in this SSOT (%.300s) and on %.200s (%.300s) with different content; the sync is refused until one version is withdrawn",
		 remote, c->id, c->local, remote, c->remote);
	tell_admin(st, set, remote, &c->blob, named ? task : NULL, c->id, reason, description);
}

/*
 * The records the join set aside because a rule refused them in their new
 * place (issue 30): each logged and escalated once, so that a person
 * learns that what was written is kept but in force nowhere.
 */
static void tell_refused(amp_store *st, amp_schema_set *set, const char *source,
			 const char *who, const json_t *refused)
{
	char description[2048];
	const json_t *v;
	git_oid blob;
	size_t i;

	json_array_foreach(refused, i, v) {
		const char *kind = amp_json_str(v, "kind"), *id = amp_json_str(v, "id");
		json_t *doc = NULL;
		amp_error ignored;
		int told;

		if (git_oid_fromstr(&blob, amp_json_str(v, "blob")) < 0)
			continue;
		/* One of these very escalations set aside (a hub that refuses
		 * them) is logged, not escalated again: that would be a new
		 * record for the hub to refuse, round after round. */
		read_doc(amp_store_repo(st), &blob, &doc, &ignored);
		told = doc && !strcmp(amp_or_none(amp_json_str(doc, "from")), "system") &&
		       !strcmp(amp_or_none(amp_json_str(json_object_get(doc, "payload"),
							"escalation_type")), "conflict");
		json_decref(doc);
		snprintf(description, sizeof(description),
			 "%.400s set aside %s %.200s: %.1200s. It is kept, in force nowhere (amp status); write it again if it is still wanted",
			 who, kind, id, amp_json_str(v, "reason"));
		tell_admin(st, set, source, &blob, told ? NULL : amp_json_str(v, "task"),
			   strcmp(kind, "control") ? id : NULL, amp_json_str(v, "reason"),
			   description);
	}
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

	if (++*rounds > AMP_SYNC_ASIDE_ROUNDS || read_ref(repo, ref, &tip, &ignored) <= 0 ||
	    tree_of(repo, &tip, &tree, &ignored) < 0)
		return AMP_EIO;
	json_object_foreach(paths, path, why) {
		const char *hex;

		name = strrchr(path, '/');
		if (is_marker_name(name ? name + 1 : path) ||
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

int amp_sync(amp_store *st, amp_schema_set *set, const char *remote, amp_sync_result *res,
	     amp_error *err)
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
	char id[80], dst[600], edst[600], who[400];
	git_oid start_remote;
	amp_sync_checked checked;
	int status, have_start, rc, inbox, delivered = 0, have_start_remote = 0;
	unsigned long replayed = 0, superseded = 0;
	unsigned rounds = 0;
	json_t *refused = NULL, *paths = NULL, *aside = NULL, *seen = NULL;

	memset(res, 0, sizeof(*res));
	memset(&c, 0, sizeof(c));
	snprintf(res->remote, sizeof(res->remote), "%s", remote);
	if ((status = sync_retries(st, &retries, err)) < 0 ||
	    (status = sync_push_mode(st, &inbox, err)) < 0 ||
	    (inbox && (status = sync_id(st, id, sizeof(id), err)) < 0))
		return status;
	if (inbox) {
		snprintf(dst, sizeof(dst), AMP_SYNC_INBOX "%s/%s", id, ref + strlen("refs/amp/"));
		snprintf(edst, sizeof(edst), AMP_SYNC_INBOX "%s/%s", id, eref + strlen("refs/amp/"));
	} else {
		snprintf(dst, sizeof(dst), "%s", ref);
		snprintf(edst, sizeof(edst), "%s", eref);
	}
	if (mirror_key(remote, key, sizeof(key)) < 0)
		return amp_error_git(err, AMP_EIO, "cannot name the mirror of %s", remote);
	mirror_ref(key, ref, mirror, sizeof(mirror));
	mirror_ref(key, eref, emirror, sizeof(emirror));
	/* made after the early returns above, which own nothing */
	if (!(refused = json_array()) || !(paths = json_object()) || !(aside = json_object()) ||
	    !(seen = json_object())) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	rng = (unsigned)getpid() ^ (unsigned)now.tv_nsec;
	if ((have_start = read_ref(repo, ref, &start, err)) < 0) {
		status = AMP_EIO;
		goto cleanup;
	}
	if (have_start && (status = tree_of(repo, &start, &before, err)) < 0)
		goto cleanup;
	if ((status = amp_sync_checked_init(st, mirror, have_start ? &start : NULL, &checked,
					    err)) < 0)
		goto cleanup;
	/* Inbox: the hub joins what it is given, so what the remote lacks
	 * (as far as the last fetch knows) goes first, and one fetch then
	 * brings the join back with everyone else's records. */
	if (inbox && have_start) {
		int epush = 0, mpush = ahead_of_mirror(repo, ref, mirror, &start_remote,
						       &have_start_remote);
		git_oid ignored;
		int ignored_have;

		epush = ahead_of_mirror(repo, eref, emirror, &ignored, &ignored_have);
		if (mpush || epush) {
			rc = push(st, remote, dst, edst, 1, epush, paths, err);
			/* Refused records: set aside by the join below. */
			if (rc == PUSH_REFUSED &&
			    hub_refused(repo, ref, remote, paths, aside, seen, &rounds) < 0)
				rc = AMP_EIO;
			if (rc < 0) {
				status = rc;
				goto cleanup;
			}
			/* A refused ref update (a busy hub's git gc holding its
			 * refs) is pushed again after the fetch, as a race is. */
			if (rc == PUSHED)
				res->did_push = delivered = 1;
		}
	}
	for (;;) {
		if ((status = fetch(st, remote, key, err)) < 0)
			goto cleanup;
		status = join(st, set, ref, mirror, 1, refused, aside, &j, &c, err);
		json_object_clear(aside);
		if (status == AMP_ERULE)
			log_conflict(st, set, remote, &c, err);
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
			snprintf(who, sizeof(who), "amp sync with %.300s", remote);
			tell_refused(st, set, remote, who, refused);
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
		if ((status = join(st, set, eref, emirror, 0, NULL, NULL, &ej, NULL, err)) < 0)
			goto cleanup;
		res->replayed = j.replayed + replayed;
		res->superseded = j.superseded + superseded;
		if (!j.push && !ej.push)
			break;
		/* Inbox: the push that delivered was joined by the hub; what
		 * the fetch after it still lacks, the hub did not take. */
		if (delivered) {
			status = amp_error_set(err, AMP_EIO, "",
					       "%s took the push to its inbox but did not join it into %s (its reason above); nothing lost: the local history stays on %s",
					       remote, ref, ref);
			goto cleanup;
		}
		rc = push(st, remote, dst, edst, inbox, ej.push, paths, err);
		/* The hub's hook refused records (its own settings): set
		 * aside by the next join, the rest pushed again. */
		if (rc == PUSH_REFUSED &&
		    (rc = hub_refused(repo, ref, remote, paths, aside, seen, &rounds)) == AMP_OK)
			continue;
		if (rc < 0) {
			status = rc;
			goto cleanup;
		}
		if (rc == PUSHED && inbox) {
			res->did_push = 1;
			delivered = 1;
			if (j.have_remote)
				git_oid_cpy(&start_remote, &j.remote);
			have_start_remote = j.have_remote;
			continue; /* fetch what the hub made of it */
		}
		if (rc == PUSHED) {
			res->did_push = 1;
			/* The mirror says what the remote has, as a
			 * remote-tracking ref does after a push. */
			if (git_reference_create(&pushed_ref, repo, mirror, &j.tip, 1,
						 "amp sync: pushed") == 0)
				git_reference_free(pushed_ref);
			if (ej.push &&
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
	res->errors_synced = 1;
	git_oid_tostr(res->tip, sizeof(res->tip), &j.tip);
	if ((status = tree_of(repo, &j.tip, &after, err)) < 0 ||
	    (status = count_new(repo, before, after, &res->fetched, err)) < 0)
		goto cleanup;
	if (res->did_push) {
		/* pushed: what the remote lacked before the push */
		if (delivered ? have_start_remote &&
				(status = tree_of(repo, &start_remote, &remote_tree, err)) < 0
			      : j.have_remote &&
				(status = tree_of(repo, &j.remote, &remote_tree, err)) < 0)
			goto cleanup;
		if ((status = count_new(repo, remote_tree, after, &res->pushed, err)) < 0)
			goto cleanup;
	}
	status = AMP_OK;
cleanup:
	json_decref(refused);
	json_decref(paths);
	json_decref(aside);
	json_decref(seen);
	git_tree_free(remote_tree);
	git_tree_free(after);
	git_tree_free(before);
	return status;
}
