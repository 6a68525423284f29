#include "notify.h"
#include "base/gitobj.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/tempfile.h"
#include "store/store.h"
#include "record/record.h"
#include "base/util.h"
#include "json/json.h"
#include "watch.h"

#define STATE_VERSION 1

extern char **environ;

struct notify {
	amp_store *st;
	const amp_notify_opts *o;
	amp_notify_report_fn report;
	void *ctx;
	amp_notify_stats *stats;
	amp_errlist *errors;
	json_t *state;
};

/* ---- state ---------------------------------------------------------------- */

static void state_file(amp_store *st, const char *name, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/%s", amp_store_state_dir(st), name);
}

/* Written to a temporary file and renamed, as watch.json is (no fsync:
 * tempfile.h). */
static int save_state(struct notify *n)
{
	char path[4200];
	amp_tempfile t;
	FILE *f;

	state_file(n->st, "notify.json", path, sizeof(path));
	if (amp_tempfile_open(&t, path, 0) < 0 || !(f = amp_tempfile_stream(&t)) ||
	    json_dumpf(n->state, f, JSON_COMPACT) < 0 || amp_tempfile_commit(&t) < 0) {
		amp_tempfile_rollback(&t);
		return amp_errlist_add(n->errors, AMP_EIO, "", "cannot write %s: %s", path,
				       strerror(errno));
	}
	return AMP_OK;
}

/* The saved state, or NULL with the reason in why ("" when there is no
 * file: notifications were never enabled here). */
static json_t *load_state(struct notify *n, char *why, size_t whysz)
{
	char path[4200];
	json_error_t jerr;
	json_t *s, *p, *v;
	const char *ref;
	char *buf;
	size_t i, len;

	why[0] = '\0';
	state_file(n->st, "notify.json", path, sizeof(path));
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return NULL;
	if (amp_cache_read(path, amp_cache_bound(n->st), &buf, &len) < 0) {
		snprintf(why, whysz, "%s is not a regular file of at most %zu bytes", path,
			 amp_cache_bound(n->st));
		return NULL;
	}
	s = amp_json_loadb(buf, len, 0, &jerr, NULL);
	free(buf);
	if (!s) {
		snprintf(why, whysz, "%s is unreadable (%s)", path, jerr.text);
		return NULL;
	}
	ref = amp_json_str(s, "ref");
	p = json_object_get(s, "pending");
	if (json_integer_value(json_object_get(s, "version")) != STATE_VERSION ||
	    !amp_json_str(s, "tip") || !json_is_array(p)) {
		snprintf(why, whysz, "%s is not a notify state of this amp", path);
		goto bad;
	}
	if (!ref || strcmp(ref, amp_store_messages_ref(n->st))) {
		snprintf(why, whysz, "%s is about another ref (%s)", path, ref ? ref : "none");
		goto bad;
	}
	json_array_foreach(p, i, v) {
		if (!amp_json_str(v, "blob") || !amp_json_str(v, "msg_id") ||
		    !amp_json_str(v, "kind") ||
		    !json_is_integer(json_object_get(v, "attempts")) ||
		    !json_is_integer(json_object_get(v, "next_ms"))) {
			snprintf(why, whysz, "%s has a malformed pending entry (#%zu)", path, i);
			goto bad;
		}
	}
	return s;
bad:
	json_decref(s);
	return NULL;
}

static const char *str_or_empty(const json_t *o, const char *key)
{
	const char *s = amp_json_str(o, key);

	return s ? s : "";
}

/* The event of pending entry `it`. */
static void event_of(const json_t *it, const char *action, amp_notify_event *e)
{
	memset(e, 0, sizeof(*e));
	e->action = action;
	e->kind = str_or_empty(it, "kind");
	e->msg_id = str_or_empty(it, "msg_id");
	e->task_id = str_or_empty(it, "task_id");
	e->type = str_or_empty(it, "type");
	e->escalation_type = str_or_empty(it, "escalation_type");
	e->severity = str_or_empty(it, "severity");
	e->attempt = (int)json_integer_value(json_object_get(it, "attempts"));
}

static void report(struct notify *n, const amp_notify_event *e)
{
	if (n->report)
		n->report(e, n->ctx);
}

/* ---- finding what is new ------------------------------------------------- */

struct found {
	int64_t order;   /* the commit that brought it, oldest first */
	char task[64];
	char name[300];
};

static int found_cmp(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	int c;

	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	if ((c = strcmp(x->task, y->task)))
		return c;
	return strcmp(x->name, y->name); /* "<seq>.": the task's order */
}

/* The pending entry of record `path` (its blob `blob`) when it is an
 * escalation or a message to the role, not tried yet; NULL when it is
 * neither, or not a readable message (watch escalates it).  What it says
 * of the record (kind, msg_id, task_id, type, escalation_type, severity)
 * is derived, and derived again by another build (rederive). */
static json_t *entry_of(struct notify *n, git_blob *blob, const char *path)
{
	json_t *doc = NULL, *payload, *it = NULL;
	amp_error err;
	const char *type, *to, *kind;
	char hex[GIT_OID_HEXSZ + 1];

	if (amp_json_parse(git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob), &doc,
			   &err) < 0 || !json_is_object(doc))
		goto cleanup;
	type = amp_json_str(doc, "type");
	to = amp_json_str(doc, "to");
	if (type && !strcmp(type, "escalation"))
		kind = "escalation";
	else if (n->o->role[0] && to && !strcmp(to, n->o->role))
		kind = "message";
	else
		goto cleanup;
	payload = json_object_get(doc, "payload");
	it = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:I,s:n}",
		       "kind", kind, "msg_id", str_or_empty(doc, "msg_id"),
		       "task_id", str_or_empty(doc, "task_id"), "type", type ? type : "",
		       "escalation_type", strcmp(kind, "escalation") ? "" :
					  str_or_empty(payload, "escalation_type"),
		       "severity", strcmp(kind, "escalation") ? "" : str_or_empty(payload, "severity"),
		       "path", path, "blob", git_oid_tostr(hex, sizeof(hex), git_blob_id(blob)),
		       "attempts", 0, "next_ms", (json_int_t)0, "last_error");
cleanup:
	json_decref(doc);
	return it;
}

/* Queues record `name` of `task` (in tree `tip`) when it is an escalation,
 * or a message to the role. */
static void consider(struct notify *n, git_tree *tip, const char *task, const char *name)
{
	git_repository *repo = amp_store_repo(n->st);
	git_tree_entry *te = NULL;
	git_blob *blob = NULL;
	json_t *it;
	char path[512];
	const char *dot = strchr(name, '.');

	/* Messages only: "<seq>.msg.<msg_id>.json" (ACKs and control records
	 * are addressed to nobody). */
	if (!dot || strncmp(dot, ".msg.", 5))
		return;
	if (amp_store_record_lookup(tip, task, name, &te, path, sizeof(path)) < 0 ||
	    git_tree_entry_type(te) != GIT_OBJECT_BLOB ||
	    git_blob_lookup(&blob, repo, git_tree_entry_id(te)) < 0)
		goto cleanup;
	if ((it = entry_of(n, blob, path))) {
		json_array_append_new(json_object_get(n->state, "pending"), it);
		n->stats->queued++;
	}
cleanup:
	git_error_clear();
	git_blob_free(blob);
	git_tree_entry_free(te);
}

/*
 * A state saved by another build (cache.h): "tip" and what each pending
 * entry has been through (attempts, next_ms, last_error) are history, not
 * derived, and stay, so that nothing is notified twice or skipped; what
 * an entry says of its record is derived from the record again.  An entry
 * whose record cannot be read, or that this build would not have queued,
 * stays as it is: it was new, and is notified at least once.
 */
static void rederive(struct notify *n)
{
	json_t *pending = json_object_get(n->state, "pending"), *old, *it;
	git_blob *blob;
	git_oid id;
	size_t i;

	json_array_foreach(pending, i, old) {
		blob = NULL;
		if (git_oid_fromstr(&id, amp_json_str(old, "blob")) == 0 &&
		    git_blob_lookup(&blob, amp_store_repo(n->st), &id) == 0 &&
		    (it = entry_of(n, blob, amp_json_str(old, "path") ? amp_json_str(old, "path") : ""))) {
			json_object_set(it, "attempts", json_object_get(old, "attempts"));
			json_object_set(it, "next_ms", json_object_get(old, "next_ms"));
			json_object_set(it, "last_error", json_object_get(old, "last_error"));
			json_array_set_new(pending, i, it);
		}
		git_error_clear();
		git_blob_free(blob);
	}
	json_object_set_new(n->state, "build", json_string(amp_build_id()));
}

/*
 * Queues what reached the SSOT between commits `from` and `to` (what
 * differs between their trees), in the order of the commits that brought
 * it, oldest first; a record whose commit the walk could not read comes
 * last.
 */
static int collect(struct notify *n, const git_oid *from, const git_oid *to)
{
	git_repository *repo = amp_store_repo(n->st);
	git_commit *fc = NULL, *tc = NULL;
	git_tree *ftree = NULL, *ttree = NULL;
	json_t *fresh = json_object(), *files, *v;
	amp_record_times *order = amp_record_times_new();
	struct found *list = NULL;
	size_t count = 0, alloc = 0, i;
	const char *task, *name;
	int status = AMP_OK;

	if (amp_git_commit_lookup(&fc, repo, from) < 0 || amp_git_commit_tree(&ftree, fc) < 0 ||
	    amp_git_commit_lookup(&tc, repo, to) < 0 || amp_git_commit_tree(&ttree, tc) < 0 ||
	    amp_watch_diff_records(repo, ftree, ttree, fresh) < 0 ||
	    amp_watch_walk_records(repo, from, to, order, 0) < 0) {
		amp_error err;

		amp_error_git(&err, AMP_EIO, "cannot read %s", amp_store_messages_ref(n->st));
		status = amp_errlist_add(n->errors, AMP_EIO, "", "%s", err.message);
		goto cleanup;
	}
	/* A task whose directory cannot be read (null) has nothing to read:
	 * amp watch reports it. */
	json_object_foreach(fresh, task, files) {
		json_object_foreach(files, name, v) {
			int64_t at = amp_record_times_get(order, task, name);

			if (count == alloc) {
				struct found *bigger;

				alloc = alloc ? alloc * 2 : 64;
				if (!(bigger = realloc(list, alloc * sizeof(*list)))) {
					status = amp_errlist_add(n->errors, AMP_EIO, "", "out of memory");
					goto cleanup;
				}
				list = bigger;
			}
			list[count].order = at >= 0 ? at : AMP_WATCH_WALK_LAST;
			snprintf(list[count].task, sizeof(list[count].task), "%s", task);
			snprintf(list[count].name, sizeof(list[count].name), "%s", name);
			count++;
		}
	}
	if (count)
		qsort(list, count, sizeof(*list), found_cmp);
	for (i = 0; i < count; i++)
		consider(n, ttree, list[i].task, list[i].name);
cleanup:
	free(list);
	amp_record_times_free(order);
	json_decref(fresh);
	git_tree_free(ttree);
	git_tree_free(ftree);
	git_commit_free(tc);
	git_commit_free(fc);
	return status;
}

/* Keeps at most max_pending: the oldest go, each reported. */
static void trim(struct notify *n)
{
	json_t *pending = json_object_get(n->state, "pending");
	char why[128];

	snprintf(why, sizeof(why), "queue full (%zu pending, git config amp.notifyMaxPending)",
		 n->o->max_pending);
	while (json_array_size(pending) > n->o->max_pending) {
		amp_notify_event e;

		event_of(json_array_get(pending, 0), "notify_dropped", &e);
		e.error = why;
		report(n, &e);
		n->stats->dropped++;
		json_array_remove(pending, 0);
	}
}

/* ---- running the command ------------------------------------------------- */

static const char *const env_keys[] = {
	"AMP_NOTIFY_KIND", "AMP_MSG_ID", "AMP_TASK_ID", "AMP_TYPE", "AMP_FROM", "AMP_TO",
	"AMP_ESCALATION_TYPE", "AMP_SEVERITY", "AMP_NOTIFY_ATTEMPT", NULL,
};

static int is_env_key(const char *entry)
{
	size_t i, len;

	for (i = 0; env_keys[i]; i++) {
		len = strlen(env_keys[i]);
		if (!strncmp(entry, env_keys[i], len) && entry[len] == '=')
			return 1;
	}
	return 0;
}

static void free_env(char **env)
{
	size_t i;

	for (i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

/* Adds "key=value" to env (room is there) when value is a string without
 * NUL. */
static void env_add(char **env, size_t *n, const char *key, const char *value)
{
	size_t len;

	if (!value || !*value)
		return;
	len = strlen(key) + strlen(value) + 2;
	if ((env[*n] = malloc(len)))
		snprintf(env[(*n)++], len, "%s=%s", key, value);
}

/* The environment of the command: ours, without any inherited AMP_NOTIFY_*
 * and message variables, plus the record's.  NULL when out of memory. */
static char **make_env(const json_t *it, const json_t *doc, int attempt)
{
	size_t count = 0, n = 0, i;
	char **env, num[32];

	while (environ[count])
		count++;
	if (!(env = calloc(count + 16, sizeof(*env))))
		return NULL;
	for (i = 0; i < count; i++) {
		if (is_env_key(environ[i]))
			continue;
		if (!(env[n] = strdup(environ[i])))
			goto oom;
		n++;
	}
	snprintf(num, sizeof(num), "%d", attempt);
	env_add(env, &n, "AMP_NOTIFY_KIND", amp_json_str(it, "kind"));
	env_add(env, &n, "AMP_MSG_ID", amp_json_str(doc, "msg_id"));
	env_add(env, &n, "AMP_TASK_ID", amp_json_str(doc, "task_id"));
	env_add(env, &n, "AMP_TYPE", amp_json_str(doc, "type"));
	env_add(env, &n, "AMP_FROM", amp_json_str(doc, "from"));
	env_add(env, &n, "AMP_TO", amp_json_str(doc, "to"));
	if (!strcmp(str_or_empty(it, "kind"), "escalation")) {
		const json_t *p = json_object_get(doc, "payload");

		env_add(env, &n, "AMP_ESCALATION_TYPE", amp_json_str(p, "escalation_type"));
		env_add(env, &n, "AMP_SEVERITY", amp_json_str(p, "severity"));
	}
	env_add(env, &n, "AMP_NOTIFY_ATTEMPT", num);
	return env;
oom:
	free_env(env);
	return NULL;
}

static void nap(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Waits for pid until deadline (monotonic ms; -1: forever).  1 when it
 * exited (status in *wstatus), 0 at the deadline, 2 when cancelled. */
static int wait_until(pid_t pid, int64_t deadline, const volatile sig_atomic_t *cancel,
		      int *wstatus)
{
	int64_t step = 1;
	pid_t r;

	for (;;) {
		r = waitpid(pid, wstatus, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			return 1;
		if (cancel && *cancel)
			return 2;
		if (deadline >= 0 && amp_monotonic_ms() >= deadline)
			return 0;
		nap(step);
		if (step < 50)
			step *= 2;
	}
}

enum { RUN_OK, RUN_FAILED, RUN_CANCELLED };

/*
 * Runs /bin/sh -c cmd with `input` on stdin and `env`, for at most
 * timeout_sec; the reason of a failure into why.
 */
static int run(const amp_notify_opts *o, const char *tmpdir, const char *input, size_t len,
	       char **env, char *why, size_t whysz)
{
	char tmp[4300];
	int fd, wstatus = 0, done;
	size_t off = 0;
	pid_t pid;

	/* A file, not a pipe: a command that does not read its stdin cannot
	 * block amp on a full pipe. */
	snprintf(tmp, sizeof(tmp), "%s/notify-stdin.XXXXXX", tmpdir);
	if ((fd = mkstemp(tmp)) < 0) {
		snprintf(why, whysz, "cannot be started: %.300s: %s", tmp, strerror(errno));
		return RUN_FAILED;
	}
	unlink(tmp);
	while (off < len) {
		ssize_t w = write(fd, input + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			snprintf(why, whysz, "cannot be started: %s", strerror(errno));
			close(fd);
			return RUN_FAILED;
		}
		off += (size_t)w;
	}
	lseek(fd, 0, SEEK_SET);
	fflush(NULL);
	if ((pid = fork()) < 0) {
		snprintf(why, whysz, "cannot be started: %s", strerror(errno));
		close(fd);
		return RUN_FAILED;
	}
	if (pid == 0) {
		char *argv[] = { "sh", "-c", (char *)o->cmd, NULL };

		/* Its own process group, so a timeout kills what it started
		 * too; its stdout goes to stderr, as git's hooks' does. */
		setpgid(0, 0);
		if (dup2(fd, 0) < 0 || dup2(2, 1) < 0)
			_exit(126);
		close(fd);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execve("/bin/sh", argv, env);
		_exit(127);
	}
	setpgid(pid, pid);
	close(fd);
	done = wait_until(pid, amp_monotonic_ms() + (int64_t)o->timeout_sec * 1000, o->cancel, &wstatus);
	if (done != 1) {
		kill(-pid, SIGTERM);
		if (wait_until(pid, amp_monotonic_ms() + 1000, NULL, &wstatus) != 1) {
			kill(-pid, SIGKILL);
			wait_until(pid, -1, NULL, &wstatus);
		}
		if (done == 2)
			return RUN_CANCELLED;
		snprintf(why, whysz, "timed out after %d s (killed)", o->timeout_sec);
		return RUN_FAILED;
	}
	if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
		return RUN_OK;
	if (WIFEXITED(wstatus))
		snprintf(why, whysz, "exited %d", WEXITSTATUS(wstatus));
	else if (WIFSIGNALED(wstatus))
		snprintf(why, whysz, "was killed by signal %d", WTERMSIG(wstatus));
	else
		snprintf(why, whysz, "failed");
	return RUN_FAILED;
}

/* One try of pending entry `it`; returns RUN_*. */
static int attempt(struct notify *n, json_t *it)
{
	git_repository *repo = amp_store_repo(n->st);
	git_blob *blob = NULL;
	git_oid id;
	json_t *doc = NULL;
	char **env = NULL, why[1200];
	amp_notify_event e;
	amp_error err;
	int tries = (int)json_integer_value(json_object_get(it, "attempts")) + 1, rc;

	why[0] = '\0';
	if (git_oid_fromstr(&id, amp_json_str(it, "blob")) < 0 ||
	    git_blob_lookup(&blob, repo, &id) < 0) {
		git_error_clear();
		snprintf(why, sizeof(why), "cannot run: the record %.300s is no longer in the repository",
			 str_or_empty(it, "path"));
		rc = RUN_FAILED;
	} else if (amp_json_parse(git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob),
				  &doc, &err) < 0 || !(env = make_env(it, doc, tries))) {
		snprintf(why, sizeof(why), "cannot run: %s", doc ? "out of memory" : err.message);
		rc = RUN_FAILED;
	} else {
		rc = run(n->o, amp_store_state_dir(n->st), git_blob_rawcontent(blob),
			 (size_t)git_blob_rawsize(blob), env, why, sizeof(why));
	}
	if (rc == RUN_FAILED) {
		int64_t delay = AMP_NOTIFY_BACKOFF_MAX_MS;

		if (tries <= 22 && (1000LL << (tries - 1)) < delay)
			delay = 1000LL << (tries - 1);
		json_object_set_new(it, "attempts", json_integer(tries));
		json_object_set_new(it, "next_ms", json_integer(n->o->now_ms + delay));
		json_object_set_new(it, "last_error", json_string(why));
		event_of(it, "notify_failed", &e);
		e.attempt = tries;
		e.error = why;
		e.retry_in_ms = delay;
		report(n, &e);
		n->stats->failed++;
	} else if (rc == RUN_OK) {
		event_of(it, "notified", &e);
		e.attempt = tries;
		report(n, &e);
		n->stats->notified++;
	}
	free_env(env);
	json_decref(doc);
	git_blob_free(blob);
	return rc;
}

/* ---- the pass -------------------------------------------------------------- */

int amp_notify_opts_load(amp_store *st, amp_notify_opts *o, amp_error *err)
{
	char buf[64];
	long long v;

	memset(o, 0, sizeof(*o));
	o->timeout_sec = AMP_NOTIFY_TIMEOUT_SEC;
	o->max_pending = AMP_NOTIFY_MAX_PENDING;
	if (amp_store_config(st, "amp.notify", o->cmd, sizeof(o->cmd)) &&
	    strlen(o->cmd) + 1 >= sizeof(o->cmd))
		return amp_error_set(err, AMP_EUSAGE, "", "git config amp.notify: longer than %zu bytes",
				     sizeof(o->cmd) - 2);
	if (amp_store_config(st, "amp.notifyRole", o->role, sizeof(o->role)) &&
	    strlen(o->role) + 1 >= sizeof(o->role))
		return amp_error_set(err, AMP_EUSAGE, "", "git config amp.notifyRole: '%s...' is not a role",
				     o->role);
	if (amp_store_config(st, "amp.notifyTimeout", buf, sizeof(buf))) {
		if (amp_parse_int("git config amp.notifyTimeout", buf, 1, AMP_NOTIFY_TIMEOUT_SEC_MAX,
				  &v, err) < 0)
			return err->status = AMP_EUSAGE;
		o->timeout_sec = (int)v;
	}
	if (amp_store_config(st, "amp.notifyMaxPending", buf, sizeof(buf))) {
		if (amp_parse_int("git config amp.notifyMaxPending", buf, 1,
				  AMP_NOTIFY_MAX_PENDING_MAX, &v, err) < 0)
			return err->status = AMP_EUSAGE;
		o->max_pending = (size_t)v;
	}
	return amp_clock_now_ms(&o->now_ms, err);
}

/* Starts notifying after `tip`: the history before it is not replayed. */
static int start(struct notify *n, const git_oid *tip, const char *why, json_t *keep)
{
	char hex[GIT_OID_HEXSZ + 1];
	amp_notify_event e;
	/* keep (the pending of the old state) outlives that state. */
	json_t *pending = keep ? json_incref(keep) : json_array();

	git_oid_tostr(hex, sizeof(hex), tip);
	json_decref(n->state);
	n->state = json_pack("{s:i,s:s,s:s,s:s,s:o}", "version", STATE_VERSION,
			     "build", amp_build_id(), "ref", amp_store_messages_ref(n->st),
			     "tip", hex, "pending", pending);
	if (!n->state)
		return amp_errlist_add(n->errors, AMP_EIO, "", "out of memory");
	memset(&e, 0, sizeof(e));
	e.action = "notify_start";
	e.tip = hex;
	e.error = why;
	report(n, &e);
	return save_state(n);
}

int amp_notify_pass(amp_store *st, const amp_notify_opts *o,
		    amp_notify_report_fn report_fn, void *ctx,
		    amp_notify_stats *stats, amp_errlist *errors)
{
	struct notify n = { st, o, report_fn, ctx, stats, errors, NULL };
	char path[4200], why[4400], hex[GIT_OID_HEXSZ + 1];
	json_t *pending;
	git_oid tip, last;
	size_t i;
	int lock = -1, status = AMP_OK, failed = 0, rc;

	memset(stats, 0, sizeof(*stats));
	if (!o->cmd[0])
		return AMP_OK;
	state_file(st, "notify.lock", path, sizeof(path));
	if ((mkdir(amp_store_state_dir(st), 0777) < 0 && errno != EEXIST) ||
	    (lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) < 0)
		return amp_errlist_add(errors, AMP_EIO, "", "cannot open %s: %s", path,
				       strerror(errno));
	if (flock(lock, LOCK_EX | LOCK_NB) < 0) {
		stats->busy = 1;
		goto cleanup;
	}
	if ((rc = git_reference_name_to_id(&tip, amp_store_repo(st), amp_store_messages_ref(st))) < 0) {
		amp_error err;

		if (rc == GIT_ENOTFOUND)
			amp_error_set(&err, AMP_EIO, "", "no AMP store in this repository (%s is missing): run 'amp init'",
				      amp_store_messages_ref(st));
		else
			amp_error_git(&err, AMP_EIO, "cannot read %s", amp_store_messages_ref(st));
		status = amp_errlist_add(errors, AMP_EIO, "", "%s", err.message);
		goto cleanup;
	}
	/* A pass with no state to go on starts before what its enforcement
	 * wrote (o->first_tip), then collects from there like any other. */
	if (!(n.state = load_state(&n, why, sizeof(why)))) {
		if (!why[0])
			snprintf(why, sizeof(why), "first run on this store");
		status = start(&n, o->has_first_tip ? &o->first_tip : &tip, why, NULL);
	} else {
		git_commit *c = NULL;
		const char *build = amp_json_str(n.state, "build");

		if (!build || strcmp(build, amp_build_id())) {
			rederive(&n);
			if ((status = save_state(&n)) < 0)
				goto cleanup;
		}
		if (git_oid_fromstr(&last, amp_json_str(n.state, "tip")) < 0 ||
		    amp_git_commit_lookup(&c, amp_store_repo(st), &last) < 0) {
			git_error_clear();
			snprintf(why, sizeof(why),
				 "the last notified commit %.40s is no longer in the repository (history rewritten)",
				 amp_json_str(n.state, "tip"));
			status = start(&n, o->has_first_tip ? &o->first_tip : &tip, why,
				       json_object_get(n.state, "pending"));
		}
		git_commit_free(c);
	}
	if (status < 0)
		goto cleanup;
	if (git_oid_fromstr(&last, amp_json_str(n.state, "tip")) == 0 && !git_oid_equal(&last, &tip)) {
		if ((status = collect(&n, &last, &tip)) == AMP_OK) {
			trim(&n);
			json_object_set_new(n.state, "tip",
					    json_string(git_oid_tostr(hex, sizeof(hex), &tip)));
			status = save_state(&n);
		}
		if (status < 0)
			goto cleanup;
	}
	pending = json_object_get(n.state, "pending");
	for (i = 0; i < json_array_size(pending);) {
		json_t *it = json_array_get(pending, i);

		if (failed || (o->cancel && *o->cancel) ||
		    json_integer_value(json_object_get(it, "next_ms")) > o->now_ms) {
			i++;
			continue;
		}
		rc = attempt(&n, it);
		if (rc == RUN_CANCELLED)
			break;
		if (rc == RUN_OK)
			json_array_remove(pending, i);
		else
			failed = 1, i++;
		if ((status = save_state(&n)) < 0)
			goto cleanup;
	}
	stats->pending = json_array_size(pending);
cleanup:
	json_decref(n.state);
	if (lock >= 0)
		close(lock);
	return status;
}
