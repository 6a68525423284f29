#include "store.h"
#include "pack.h"
#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>
#include <git2/sys/repository.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "packwrite.h"
#include "reccache.h"
#include "base/sha1.h"
#include "sign.h"
#include "record/record.h"
#include "base/gitpath.h"
#include "base/util.h"

struct amp_store {
	git_repository *repo;
	char ref[256];
	char errors_ref[256];
	char common_dir[PATH_MAX];
	char state_dir[PATH_MAX + 8];
	char objects_dir[PATH_MAX + 8]; /* <common dir>/objects */
	int64_t retry_timeout_ms;
	int64_t stale_lock_ms;
	unsigned long retries;
	unsigned int rng;
	amp_policy policy;
	amp_signing signing;
	char agent[AMP_AGENT_MAX + 1]; /* the named instance writing; "" none */
	struct mem_recorder *batch; /* during a batch: where objects go */
	struct doc_cache *docs;     /* during a batch: records parsed */
	unsigned long records_parsed; /* records read from git, ... */
	unsigned long records_cached; /* ... and from a record cache */
	int fsync;                  /* git config amp.fsync */
	int log_all_refs;           /* core.logAllRefUpdates=always */
	git_config *cfg;            /* a snapshot, taken at cfg_ms */
	int64_t cfg_ms;
	amp_errlist skipped;        /* amp_store_task_in_place: not tasks */
};

const amp_policy amp_policy_default = {
	AMP_POLICY_LOCK_THRESHOLD, (int64_t)AMP_POLICY_HEARTBEAT_SEC * 1000,
	(int64_t)AMP_POLICY_CLOCK_SKEW_SEC * 1000, AMP_RISK_HIGH,
};

unsigned amp_risk_bit(const char *risk_level)
{
	if (!risk_level)
		return 0;
	return !strcmp(risk_level, "low") ? AMP_RISK_LOW :
	       !strcmp(risk_level, "medium") ? AMP_RISK_MEDIUM :
	       !strcmp(risk_level, "high") ? AMP_RISK_HIGH : 0;
}

/* ---- opening ------------------------------------------------------------ */

/* 1 when snprintf's result `n` fitted a buffer of `size` bytes: a name
 * that would not fit is an error, never a truncated name. */
static int fits(int n, size_t size)
{
	return n >= 0 && (size_t)n < size;
}

/*
 * One snapshot of the configuration serves the reads of the next second:
 * libgit2 stats every config file (the repository's, ~/.gitconfig,
 * /etc/gitconfig) each time a snapshot is taken, and a send reads a dozen
 * keys (85 stat calls of ~590).  A long-running amp (watch, inbox
 * --follow, dashboard) sees a change within the second.
 */
#define AMP_CONFIG_REUSE_MS 1000

int amp_store_config(amp_store *st, const char *key, char *buf, size_t bufsz)
{
	git_buf value = { 0 };
	int64_t now = amp_monotonic_ms();
	int found = 0;

	buf[0] = '\0';
	if (st->cfg && now - st->cfg_ms >= AMP_CONFIG_REUSE_MS) {
		git_config_free(st->cfg);
		st->cfg = NULL;
	}
	if (!st->cfg) {
		if (git_repository_config_snapshot(&st->cfg, st->repo) < 0) {
			st->cfg = NULL;
			goto cleanup;
		}
		st->cfg_ms = now;
	}
	if (git_config_get_string_buf(&value, st->cfg, key) == 0) {
		snprintf(buf, bufsz, "%s", value.ptr);
		found = 1;
	}
cleanup:
	git_buf_dispose(&value);
	git_error_clear();
	return found;
}

int amp_store_config_bool(amp_store *st, const char *key, int fallback,
			  int *out, amp_error *err)
{
	char buf[64];
	int value;

	*out = fallback;
	if (!amp_store_config(st, key, buf, sizeof(buf)))
		return AMP_OK;
	/* git's own spellings: true/yes/on/1, false/no/off/0. */
	if (git_config_parse_bool(&value, buf) < 0) {
		git_error_clear();
		return amp_error_set(err, AMP_EUSAGE, "",
				     "git config %s: '%s' is not a boolean (true or false)",
				     key, buf);
	}
	*out = value;
	return AMP_OK;
}

static int config_ref(amp_store *st, const char *key, const char *fallback,
		      char *out, size_t outsz, amp_error *err)
{
	if (!amp_store_config(st, key, out, outsz))
		snprintf(out, outsz, "%s", fallback);
	else if (strlen(out) + 1 >= outsz) /* maybe cut: never use a cut name */
		return amp_error_set(err, AMP_EUSAGE, "",
				     "git config %s: longer than %zu characters", key, outsz - 2);
	/* AMP keeps its history apart from the user's refs, always. */
	if (strncmp(out, "refs/amp/", 9) != 0 || !git_reference_is_valid_name(out))
		return amp_error_set(err, AMP_EUSAGE, "",
				     "git config %s: '%s' is not a ref under refs/amp/",
				     key, out);
	return AMP_OK;
}

/* An integer setting within [min, max]; *out keeps its value when unset. */
static int config_int(amp_store *st, const char *key, long long min, long long max,
		      long long *out, amp_error *err)
{
	char buf[64], what[64];

	if (!amp_store_config(st, key, buf, sizeof(buf)))
		return AMP_OK;
	snprintf(what, sizeof(what), "git config %s", key);
	return amp_parse_int(what, buf, min, max, out, err);
}

/* amp.approvalRequired: risk levels separated by spaces or commas, or
 * "none". */
static int config_risks(amp_store *st, unsigned *out, amp_error *err)
{
	char buf[256], *word, *save = NULL;
	unsigned bits = 0, bit;

	if (!amp_store_config(st, "amp.approvalRequired", buf, sizeof(buf)))
		return AMP_OK;
	for (word = strtok_r(buf, " ,\t", &save); word; word = strtok_r(NULL, " ,\t", &save)) {
		if (!strcmp(word, "none"))
			continue;
		if (!(bit = amp_risk_bit(word)))
			return amp_error_set(err, AMP_EUSAGE, "",
					     "git config amp.approvalRequired: '%s' is not a risk level (low, medium, high or none)",
					     word);
		bits |= bit;
	}
	*out = bits;
	return AMP_OK;
}

static int load_policy(amp_store *st, amp_error *err)
{
	amp_policy *p = &st->policy;
	long long threshold = AMP_POLICY_LOCK_THRESHOLD;
	long long heartbeat = AMP_POLICY_HEARTBEAT_SEC;
	long long skew = AMP_POLICY_CLOCK_SKEW_SEC;
	int status;

	*p = amp_policy_default;
	if ((status = config_int(st, "amp.lockThreshold", 1, AMP_POLICY_LOCK_THRESHOLD_MAX,
				 &threshold, err)) < 0 ||
	    (status = config_int(st, "amp.heartbeatTimeout", 1, AMP_POLICY_HEARTBEAT_SEC_MAX,
				 &heartbeat, err)) < 0 ||
	    (status = config_int(st, "amp.maxClockSkew", 1, AMP_POLICY_CLOCK_SKEW_SEC_MAX,
				 &skew, err)) < 0 ||
	    (status = config_risks(st, &p->approval_levels, err)) < 0)
		return status;
	p->lock_threshold = (int)threshold;
	p->heartbeat_ms = (int64_t)heartbeat * 1000;
	p->max_clock_skew_ms = (int64_t)skew * 1000;
	return AMP_OK;
}

/* A setting in seconds (a decimal number within [min, max]), as ms. */
static int config_ms(amp_store *st, const char *key, double min, double max,
		     int64_t *ms, amp_error *err)
{
	char buf[64], what[64];
	double secs;
	int status;

	if (!amp_store_config(st, key, buf, sizeof(buf)))
		return AMP_OK;
	snprintf(what, sizeof(what), "git config %s", key);
	if ((status = amp_parse_real(what, buf, min, max, &secs, err)) < 0)
		return status;
	*ms = (int64_t)(secs * 1000);
	return AMP_OK;
}

/* A path setting: "~/" is the home directory; a relative path is the
 * repository's (its work tree, or the git directory of a bare one), so
 * that every command of a clone reads the same file wherever it runs. */
static int config_path(amp_store *st, const char *key, char *buf, size_t bufsz,
		       amp_error *err)
{
	char raw[PATH_MAX];
	const char *home = getenv("HOME");
	const char *base = git_repository_workdir(st->repo);
	int n;

	buf[0] = '\0';
	if (!amp_store_config(st, key, raw, sizeof(raw)) || !raw[0])
		return AMP_OK;
	if (!strncmp(raw, "~/", 2) && home)
		n = snprintf(buf, bufsz, "%s/%s", home, raw + 2);
	else if (raw[0] == '/')
		n = snprintf(buf, bufsz, "%s", raw);
	else {
		/* workdir and path end in "/" */
		n = snprintf(buf, bufsz, "%s%s", base ? base : git_repository_path(st->repo), raw);
	}
	if (n < 0 || (size_t)n >= bufsz)
		return amp_error_set(err, AMP_EUSAGE, "", "git config %s: the path is too long", key);
	return AMP_OK;
}

/* amp.signingKey, amp.allowedSigners, amp.requireSigned (sign.h). */
static int load_signing(amp_store *st, amp_error *err)
{
	amp_signing *s = &st->signing;
	int status;

	if ((status = config_path(st, "amp.signingKey", s->key, sizeof(s->key), err)) < 0 ||
	    (status = config_path(st, "amp.allowedSigners", s->allowed, sizeof(s->allowed),
				  err)) < 0 ||
	    (status = amp_store_config_bool(st, "amp.requireSigned", 0, &s->require, err)) < 0)
		return status;
	if (s->require && !s->allowed[0])
		return amp_error_set(err, AMP_EUSAGE, "",
				     "git config amp.requireSigned needs git config amp.allowedSigners (who may speak as which role)");
	/* Strict mode trusts no caller's clock. */
	if (s->require && getenv("AMP_NOW"))
		return amp_error_set(err, AMP_EUSAGE, "",
				     "AMP_NOW is refused with git config amp.requireSigned: it exists for tests, and strict mode takes the time from the clock");
	return AMP_OK;
}

const amp_signing *amp_store_signing(const amp_store *st) { return &st->signing; }

/*
 * git config amp.fsync (default true): libgit2 fsyncs every object file,
 * pack and ref it writes, and their directories, so that a record amp
 * reported written survives a power cut, not only a killed process.
 * false trades that away for speed.  The setting is process-wide in
 * libgit2; amp opens one store per process.
 */
static int load_fsync(amp_store *st, amp_error *err)
{
	int on, status;

	if ((status = amp_store_config_bool(st, "amp.fsync", 1, &on, err)) < 0)
		return status;
	if (git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, on) < 0)
		return amp_error_git(err, AMP_EIO, "cannot set git config amp.fsync");
	st->fsync = on;
	return AMP_OK;
}

/* core.logAllRefUpdates=always: git and libgit2 start a reflog for every
 * ref they move, so amp's refs are moved by libgit2 (move_ref). */
static void load_log_all_refs(amp_store *st)
{
	char value[32];

	st->log_all_refs = amp_store_config(st, "core.logAllRefUpdates", value, sizeof(value)) &&
			   !strcasecmp(value, "always");
}

/*
 * Bounds on what libgit2 keeps in memory, for the commands that walk the
 * whole history (watch --full, fsck, log): its cache of parsed trees and
 * commits (256 MiB by default) and the pack windows it maps (8 GiB by
 * default on 64-bit; the pages of a mapped pack that were read count as
 * resident).  Past the bounds libgit2 drops the least recently used, which
 * costs a re-read: at 10k messages 82-96 MB instead of 210-218 MB, for
 * 20-40% more CPU in those walks.  The walk itself still keeps a node per
 * commit, which grows with the history.  Halved again (16 -> 8 MiB, 64 ->
 * 32 MiB) when `amp status` stopped holding every summary: at 100k
 * messages its first listing peaks at 78 MB instead of 96-107 MB in the
 * same 3.8-4.0 s, and at 10k `watch --full` at 63 MB instead of 75 MB in
 * 2.0 s either way.  Halved again (32 -> 16 MiB mapped, windows 8 -> 4
 * MiB) once the tip's trees were whole in imported packs: at 100k the
 * first listing peaks at 56 MB instead of 65 MB and watch --full at 117
 * MB instead of 128 MB, in the same time (at 8 MiB and 2 MiB windows,
 * 54 MB, but watch --full took 50% longer).  Down again (cache 8 -> 2
 * MiB, mapped 16 -> 4 MiB, windows 4 -> 1 MiB) once records were no
 * longer stored as deltas (pack.c attributes): reading one then maps the
 * pack where it lies, so a listing of every task kept the whole 16 MiB of
 * windows resident; at 100k messages the first listing peaks at 55 MB
 * instead of 75 MB and watch --full at 96 MB instead of 132 MB, in the
 * same time.
 */
#define AMP_GIT_CACHE_BYTES   (2 * 1024 * 1024)
#define AMP_GIT_MAPPED_BYTES  (4 * 1024 * 1024)
/* Windows much smaller than the mapped bound, so that the bound is met by
 * dropping a few windows, not by unmapping a whole pack at each lookup
 * (libgit2's default window on 64-bit is 1 GiB). */
#define AMP_GIT_WINDOW_BYTES  (1024 * 1024)

/* libgit2 caches no tree over 4 KiB by default, yet a shard tree (100
 * tasks) and a year tree (one entry per shard) are larger: every task read
 * then read and hashed them again (25,000 tasks: 1 s of `amp status`). */
#define AMP_GIT_TREE_CACHE_LIMIT (1024 * 1024)

static int bound_memory(amp_error *err)
{
	if (git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, (ssize_t)AMP_GIT_CACHE_BYTES) < 0 ||
	    git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_TREE,
			     (size_t)AMP_GIT_TREE_CACHE_LIMIT) < 0 ||
	    git_libgit2_opts(GIT_OPT_SET_MWINDOW_MAPPED_LIMIT, (size_t)AMP_GIT_MAPPED_BYTES) < 0 ||
	    git_libgit2_opts(GIT_OPT_SET_MWINDOW_SIZE, (size_t)AMP_GIT_WINDOW_BYTES) < 0)
		return amp_error_git(err, AMP_EIO, "cannot bound libgit2's memory");
	return AMP_OK;
}

/*
 * Objects that moved while this process looked for them.  A roll-up
 * (pack.c) or git repack puts a new pack in place and only then deletes
 * the packs it copied; a reader that read the pack directory before the
 * new pack was there, and opens an old pack's index after it went, finds
 * the object nowhere, and libgit2 reads the directory again once per
 * lookup only: 2 of ~2,000 sends by 8 concurrent writers failed so
 * ("cannot read refs/amp/messages: object not found", make bench).  A
 * miss caused so means the new pack was in place already, so this
 * backend, asked after every other one, reads the pack directory afresh
 * and looks again, AMP_STORE_MOVED_TRIES times (each miss, another pack
 * that replaced the one it found).  Its own view of objects/pack is made
 * at its first use; the packs themselves are libgit2's, shared by path.
 */
#define AMP_STORE_MOVED_TRIES 3

struct moved_reader {
	git_odb_backend parent;
	git_odb_backend *pack; /* NULL until the first miss */
	char objects_dir[];
};

/* The pack backend of m, its directory read again: 0, or -1. */
static int moved_refresh(struct moved_reader *m)
{
	if (!m->pack)
		return git_odb_backend_pack(&m->pack, m->objects_dir) < 0 ? (m->pack = NULL, -1) : 0;
	return m->pack->refresh(m->pack) < 0 ? -1 : 0;
}

/* The object `id` (its header only when data is NULL), looked for again
 * after the pack directory is read afresh, AMP_STORE_MOVED_TRIES times. */
static int moved_lookup(struct moved_reader *m, void **data, size_t *len, git_object_t *type,
			const git_oid *id)
{
	int rc = GIT_ENOTFOUND, i;

	for (i = 0; i < AMP_STORE_MOVED_TRIES && rc == GIT_ENOTFOUND; i++)
		rc = moved_refresh(m) < 0 ? GIT_ENOTFOUND :
		     data ? m->pack->read(data, len, type, m->pack, id) :
		     m->pack->read_header(len, type, m->pack, id);
	return rc;
}

static int moved_read(void **data, size_t *len, git_object_t *type, git_odb_backend *b,
		      const git_oid *id)
{
	return moved_lookup((struct moved_reader *)b, data, len, type, id);
}

static int moved_read_header(size_t *len, git_object_t *type, git_odb_backend *b,
			     const git_oid *id)
{
	return moved_lookup((struct moved_reader *)b, NULL, len, type, id);
}

static void moved_free(git_odb_backend *b)
{
	struct moved_reader *m = (struct moved_reader *)b;

	if (m->pack)
		m->pack->free(m->pack);
	free(m);
}

/* Adds a moved_reader for st's objects to its repository's odb, after
 * every other backend (an alternate of the lowest priority: an object an
 * alternate holds is found before it is looked for again here). */
static int add_moved_reader(amp_store *st, amp_error *err)
{
	size_t n = strlen(st->objects_dir) + 1;
	struct moved_reader *m = calloc(1, sizeof(*m) + n);
	git_odb *odb = NULL;

	if (!m)
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	memcpy(m->objects_dir, st->objects_dir, n);
	m->parent.version = GIT_ODB_BACKEND_VERSION;
	m->parent.read = moved_read;
	m->parent.read_header = moved_read_header;
	m->parent.free = moved_free;
	if (git_repository_odb(&odb, st->repo) < 0 || git_odb_add_alternate(odb, &m->parent, 0) < 0) {
		free(m);
		git_odb_free(odb);
		return amp_error_git(err, AMP_EIO, "cannot open the object database");
	}
	git_odb_free(odb);
	return AMP_OK;
}

int amp_store_open(amp_store **out, const char *path, amp_error *err)
{
	amp_store *st = NULL;
	const char *env = getenv("AMP_REPO");
	const char *where = path ? path : (env && *env ? env : ".");
	size_t n;
	int status = AMP_OK;

	git_libgit2_init();
	if ((status = bound_memory(err)) < 0)
		return status;
	/* libgit2 hashes every object it reads again to compare it with its
	 * name; git does not (only `git fsck` does, and `amp fsck`, which
	 * turns it back on).  A send into a task of 1,000 records spent 14%
	 * of its instructions there.  zlib's own checksum still catches a
	 * damaged loose object. */
	if (git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0) < 0)
		return amp_error_git(err, AMP_EIO, "cannot set libgit2's options");
	if (!(st = calloc(1, sizeof(*st)))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	if (git_repository_open_ext(&st->repo, where, 0, NULL) < 0) {
		status = amp_error_git(err, AMP_EIO,
				       "not a git repository: %s", where);
		goto cleanup;
	}
	if (!fits(snprintf(st->common_dir, sizeof(st->common_dir), "%s",
			   git_repository_commondir(st->repo)), sizeof(st->common_dir))) {
		status = amp_error_set(err, AMP_EIO, "", "path of the git directory too long: %s",
				       git_repository_commondir(st->repo));
		goto cleanup;
	}
	n = strlen(st->common_dir);
	if (n && st->common_dir[n - 1] == '/')
		st->common_dir[n - 1] = '\0';
	/* state_dir and objects_dir have room for common_dir and more. */
	snprintf(st->state_dir, sizeof(st->state_dir), "%s/amp",
		 st->common_dir);
	snprintf(st->objects_dir, sizeof(st->objects_dir), "%s/objects",
		 st->common_dir);
	if ((status = add_moved_reader(st, err)) < 0)
		goto cleanup;
	if ((status = config_ref(st, "amp.ref", AMP_STORE_DEFAULT_REF, st->ref,
				 sizeof(st->ref), err)) < 0 ||
	    (status = config_ref(st, "amp.errorsRef",
				 AMP_STORE_DEFAULT_ERRORS_REF, st->errors_ref,
				 sizeof(st->errors_ref), err)) < 0)
		goto cleanup;
	if (strcmp(st->ref, st->errors_ref) == 0) {
		status = amp_error_set(err, AMP_EUSAGE, "",
				       "git config amp.ref and amp.errorsRef must differ");
		goto cleanup;
	}
	st->retry_timeout_ms = 30000;
	st->stale_lock_ms = 2000;
	if ((status = config_ms(st, "amp.retryTimeout", 0, 3600,
				&st->retry_timeout_ms, err)) < 0 ||
	    (status = config_ms(st, "amp.staleLockTimeout", 1, 3600,
				&st->stale_lock_ms, err)) < 0 ||
	    (status = load_policy(st, err)) < 0 ||
	    (status = load_signing(st, err)) < 0 ||
	    (status = load_fsync(st, err)) < 0)
		goto cleanup;
	load_log_all_refs(st);
	st->rng = (unsigned int)getpid() ^ (unsigned int)time(NULL);
	*out = st;
	st = NULL;
cleanup:
	amp_store_free(st);
	return status;
}

static void share_records(amp_store *st, size_t slots);

void amp_store_free(amp_store *st)
{
	if (!st)
		return;
	share_records(st, 0);
	amp_errlist_free(&st->skipped);
	git_config_free(st->cfg);
	git_repository_free(st->repo);
	free(st);
	git_libgit2_shutdown();
}

git_repository *amp_store_repo(amp_store *st) { return st->repo; }
const char *amp_store_messages_ref(const amp_store *st) { return st->ref; }
const char *amp_store_errors_ref(const amp_store *st) { return st->errors_ref; }
const char *amp_store_state_dir(const amp_store *st) { return st->state_dir; }
const char *amp_store_objects_dir(const amp_store *st) { return st->objects_dir; }
int amp_store_fsync(const amp_store *st) { return st->fsync; }
void amp_store_record_counts(const amp_store *st, unsigned long *parsed, unsigned long *cached)
{
	*parsed = st->records_parsed;
	*cached = st->records_cached;
}
const char *amp_agent_problem(const char *name, size_t len)
{
	const char *git;
	size_t i, dots = 0;

	if (len < 1 || len > AMP_AGENT_MAX)
		return "(1 to 64 of A-Z a-z 0-9 . _ -)";
	for (i = 0; i < len; i++) {
		if (!name[i] ||
		    !strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", name[i]))
			return "(1 to 64 of A-Z a-z 0-9 . _ -)";
		dots += name[i] == '.';
	}
	/* The name is a directory of the SSOT (registry.h) and the author
	 * name of the commits it writes. */
	if ((git = amp_gitpath_component_problem(name, len)))
		return git;
	if (dots == len)
		return "only dots, which git drops from an author name";
	return NULL;
}

int amp_agent_valid(const char *name, size_t len)
{
	return !amp_agent_problem(name, len);
}

int amp_store_set_agent(amp_store *st, const char *name, amp_error *err)
{
	const char *why;

	if (name && *name && (why = amp_agent_problem(name, strlen(name))))
		return amp_error_set(err, AMP_EUSAGE, "", "'%s' is not an agent name%s%s", name,
				     why[0] == '(' ? " " : ": ", why);
	snprintf(st->agent, sizeof(st->agent), "%s", name ? name : "");
	return AMP_OK;
}

const char *amp_store_agent(const amp_store *st)
{
	return st->agent[0] ? st->agent : NULL;
}

const amp_policy *amp_store_policy(const amp_store *st) { return &st->policy; }
unsigned long amp_store_retries(const amp_store *st) { return st->retries; }

/* ---- names -------------------------------------------------------------- */


static int is_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return n > 0;
}

int amp_store_task_dir(const char *task_id, char *buf, size_t bufsz)
{
	size_t len = strlen(task_id);
	int shard_len, n;

	if (!amp_task_id_valid(task_id, len))
		return -1;
	shard_len = (int)(len - 7 - 2);
	n = snprintf(buf, bufsz, "tasks/%.4s/%.*s/%s", task_id + 2, shard_len,
		     task_id + 7, task_id);
	return fits(n, bufsz) ? 0 : -1;
}

int amp_msg_id_task(const char *msg_id, char *buf, size_t bufsz)
{
	const char *task;
	size_t len;

	if (amp_msg_id_parse(msg_id, &task, &len, NULL) < 0 || len + 1 > bufsz)
		return -1;
	memcpy(buf, task, len);
	buf[len] = '\0';
	return 0;
}

/* ---- reading ------------------------------------------------------------ */

int amp_store_tip(amp_store *st, const char *ref, git_commit **commit,
		  git_tree **tree, amp_error *err)
{
	git_oid oid;
	git_commit *c = NULL;
	int rc;

	rc = git_reference_name_to_id(&oid, st->repo, ref);
	if (rc == GIT_ENOTFOUND)
		return amp_error_set(err, AMP_EIO, "",
				     "no AMP store in this repository (%s is missing): run 'amp init'",
				     ref);
	if (rc < 0)
		return amp_error_git(err, AMP_EIO, "cannot read %s", ref);
	if (git_commit_lookup(&c, st->repo, &oid) < 0)
		return amp_error_git(err, AMP_EIO, "cannot read the commit at %s", ref);
	if (tree && git_commit_tree(tree, c) < 0) {
		git_commit_free(c);
		return amp_error_git(err, AMP_EIO, "cannot read the tree at %s", ref);
	}
	if (commit)
		*commit = c;
	else
		git_commit_free(c);
	return AMP_OK;
}

/*
 * libgit2 maps a pack's index whole for as long as the repository is open,
 * and every page a lookup touched stays resident: at 100k messages the
 * index is 39 MB (1.4M objects), and a walk of the whole history looks up
 * objects all over it, 33 MB of `amp watch --full`'s 71 MB peak.  The
 * mapping is read-only (libgit2 maps it shared), so its pages are clean
 * and MADV_DONTNEED only unmaps them from this process: the next lookup
 * maps them again from the page cache.
 */
int amp_store_trim_indexes(void)
{
	FILE *maps = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 128];
	int dropped = 0, whole = 1;

	if (!maps)
		return 0;
	while (fgets(line, sizeof(line), maps)) {
		size_t len = strlen(line);
		unsigned long lo, hi;
		char perms[5];
		int path_at = 0, fresh = whole;

		/* A line longer than the buffer comes in pieces: only a
		 * piece that starts a line is one. */
		whole = len && line[len - 1] == '\n';
		if (!fresh)
			continue;
		if (whole)
			line[--len] = '\0';
		if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &lo, &hi, perms, &path_at) != 3 ||
		    !path_at || hi <= lo || strncmp(perms, "r--", 3))
			continue;
		if (len - (size_t)path_at > 4 && !strcmp(line + len - 4, ".idx") &&
		    madvise((void *)lo, hi - lo, MADV_DONTNEED) == 0) {
			dropped++;
		}
	}
	fclose(maps);
	return dropped;
}

/* This process's resident set in bytes, from /proc/self/statm (opened
 * once per process: a walk asks tens of thousands of times; /proc/self
 * names the process that opened it, hence again after a fork); 0 when it
 * cannot be read. */
static size_t resident_bytes(void)
{
	static int fd = -1;
	static pid_t opener;
	char buf[128];
	unsigned long size, resident;
	ssize_t n;

	if (opener != getpid()) {
		if (fd >= 0)
			close(fd);
		opener = getpid();
		fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0 || (n = pread(fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%lu %lu", &size, &resident) != 2)
		return 0;
	return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

int amp_store_should_trim(size_t resident, size_t after_trim)
{
	size_t limit = after_trim + AMP_STORE_RESIDENT_SLACK;

	if (limit > AMP_STORE_RESIDENT_CEILING &&
	    after_trim + AMP_STORE_TRIM_MIN_GAIN <= AMP_STORE_RESIDENT_CEILING)
		limit = AMP_STORE_RESIDENT_CEILING;
	return resident > AMP_STORE_RESIDENT_SOFT && resident > limit;
}

void amp_store_walk_step(void)
{
	static unsigned steps;
	static size_t after_trim;
	size_t resident;

	if (++steps % AMP_STORE_TRIM_EVERY)
		return;
	resident = resident_bytes();
	if (amp_store_should_trim(resident, after_trim)) {
		amp_store_trim_indexes();
		after_trim = resident_bytes();
	}
}

void amp_first_parents_start(amp_first_parents *w, git_repository *repo, const git_oid *tip)
{
	w->repo = repo;
	git_oid_cpy(&w->next, tip);
	w->done = 0;
}

int amp_first_parents_next(amp_first_parents *w, git_commit **out)
{
	int rc;

	*out = NULL;
	if (w->done)
		return GIT_ITEROVER;
	amp_store_walk_step();
	if ((rc = git_commit_lookup(out, w->repo, &w->next)) < 0) {
		w->done = 1;
		return rc;
	}
	if (git_commit_parentcount(*out))
		git_oid_cpy(&w->next, git_commit_parent_id(*out, 0));
	else
		w->done = 1;
	return 0;
}

int amp_store_entry_parse(const char *name, int *seq, amp_entry_kind *kind,
			  const char **id, size_t *id_len)
{
	size_t len = strlen(name);

	if (len < 6 + 5 + 1 + 5 || !is_digits(name, 6) || name[6] != '.' ||
	    name[10] != '.' || strcmp(name + len - 5, ".json") != 0)
		return -1;
	if (!strncmp(name + 7, "msg", 3))
		*kind = AMP_ENTRY_MSG;
	else if (!strncmp(name + 7, "ack", 3))
		*kind = AMP_ENTRY_ACK;
	else if (!strncmp(name + 7, "ctl", 3))
		*kind = AMP_ENTRY_CTL;
	else
		return -1;
	if (seq)
		*seq = atoi(name);
	*id = name + 11;
	*id_len = len - 11 - 5;
	return 0;
}

/* amp_store_entry_parse, the id copied into *id (owned); 0 on success. */
static int parse_entry_name(const char *name, int *seq, amp_entry_kind *kind,
			    char **id)
{
	const char *at;
	size_t n;

	if (amp_store_entry_parse(name, seq, kind, &at, &n) < 0)
		return -1;
	*id = strndup(at, n);
	return *id ? 0 : -1;
}

int amp_store_entry_name(int seq, amp_entry_kind kind, const char *id,
			 char *buf, size_t bufsz)
{
	int n = snprintf(buf, bufsz, "%06d.%s.%s.json", seq,
			 kind == AMP_ENTRY_MSG ? "msg" : kind == AMP_ENTRY_ACK ? "ack" : "ctl", id);

	return fits(n, bufsz) ? 0 : -1;
}

/* Appends an unreadable record to log->bad, taking over `id`. */
static int add_bad(amp_task_log *log, int seq, amp_entry_kind kind, char *id,
		   const char *name, const char *reason)
{
	amp_bad_record *bigger, *b;

	if (!(bigger = realloc(log->bad, (log->nbad + 1) * sizeof(*bigger))))
		return -1;
	log->bad = bigger;
	b = &log->bad[log->nbad];
	b->seq = seq;
	b->kind = kind;
	b->id = id;
	b->name = strdup(name);
	b->reason = strdup(reason);
	if (!b->name || !b->reason) {
		free(b->name);
		free(b->reason);
		return -1;
	}
	log->nbad++;
	return 0;
}

/* 1 (reason in err) when the object is larger than a record may be. */
static int oversized_record(amp_store *st, const git_oid *id, amp_error *err)
{
	git_odb *odb = NULL;
	git_object_t type;
	size_t size = 0;
	int big = 0;

	if (git_repository_odb(&odb, st->repo) == 0 &&
	    git_odb_read_header(&size, &type, odb, id) == 0 &&
	    size > AMP_LIMIT_MESSAGE_BYTES) {
		amp_error_set(err, AMP_ESCHEMA, "",
			      "%zu bytes, more than the %d-byte message size limit",
			      size, AMP_LIMIT_MESSAGE_BYTES);
		big = 1;
	}
	/* An unreadable header is the blob reader's to report. */
	git_error_clear();
	git_odb_free(odb);
	return big;
}

int amp_entry_is_marker(const amp_entry *e, const char **record)
{
	const char *type = json_string_value(json_object_get(e->doc, "type"));
	const char *from = json_string_value(json_object_get(e->doc, "from"));

	*record = json_string_value(json_object_get(e->doc, "record"));
	return e->kind == AMP_ENTRY_CTL && type && !strcmp(type, "superseded") && from &&
	       !strcmp(from, "system") && *record;
}

/* 1 when entry e is the record file `name`. */
static int entry_is_named(const amp_entry *e, const char *name)
{
	char buf[AMP_PATH_MAX];

	return amp_store_entry_name(e->seq, e->kind, e->id, buf, sizeof(buf)) == 0 &&
	       !strcmp(buf, name);
}

/* Moves each record a marker names, when it is the record right after the
 * marker (the next sequence number), from log->entries to log->superseded.
 * -1 when out of memory. */
static int set_aside_superseded(amp_task_log *log)
{
	size_t i, kept = 0;
	int aside_seq = -1;

	for (i = 0; i < log->count; i++) {
		amp_entry *e = &log->entries[i];
		const char *record;

		if (e->seq == aside_seq && kept > 0 &&
		    amp_entry_is_marker(&log->entries[kept - 1], &record) &&
		    entry_is_named(e, record)) {
			amp_entry *more = realloc(log->superseded,
						  (log->nsuperseded + 1) * sizeof(*more));

			if (!more)
				return -1;
			log->superseded = more;
			log->superseded[log->nsuperseded++] = *e;
			continue;
		}
		if (amp_entry_is_marker(e, &record))
			aside_seq = e->seq + 1;
		log->entries[kept++] = *e;
	}
	log->count = kept;
	return 0;
}

/*
 * The index behind amp_task_log_find: open addressing from (kind, id) to
 * the first entry holding them.  Rules look records up by id for each
 * record they check (the ACK of a message, the request a verdict answers),
 * so a scan per lookup made a task of n records cost n^2 compares per
 * pass, and amp watch --full, which checks each record against the records
 * before it, n^3: 2 s for a task of 1,000 records.  Entries are only ever
 * appended (amp_task_log_append), so the index grows with them; an entries
 * array it was not built for is indexed from scratch.
 */
struct amp_log_index {
	const amp_entry *entries; /* the array indexed */
	size_t indexed;           /* entries[0..indexed) are in the table */
	size_t cap;               /* slots, a power of two; 0: none yet */
	size_t *slots;            /* entry index + 1; 0: empty */
};

static size_t index_hash(amp_entry_kind kind, const char *id)
{
	size_t h = 2166136261u ^ (unsigned char)kind;

	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 16777619u;
	return h;
}

/* The slot of (kind, id): the one holding it, else the empty one where it
 * would go. */
static size_t *index_slot(struct amp_log_index *x, amp_entry_kind kind, const char *id)
{
	size_t i = index_hash(kind, id) & (x->cap - 1);

	while (x->slots[i]) {
		const amp_entry *e = &x->entries[x->slots[i] - 1];

		if (e->kind == kind && !strcmp(e->id, id))
			break;
		i = (i + 1) & (x->cap - 1);
	}
	return &x->slots[i];
}

/* Brings x up to log's first `count` entries; -1 when out of memory. */
static int index_update(struct amp_log_index *x, const amp_task_log *log)
{
	size_t i, *slot;

	if (x->entries != log->entries) {
		free(x->slots);
		memset(x, 0, sizeof(*x));
		x->entries = log->entries;
	}
	if (x->indexed >= log->count)
		return 0;
	if (log->count * 2 > x->cap) {
		size_t cap = 64;

		while (cap < log->count * 2)
			cap *= 2;
		free(x->slots);
		if (!(x->slots = calloc(cap, sizeof(*x->slots)))) {
			memset(x, 0, sizeof(*x));
			return -1;
		}
		x->cap = cap;
		x->indexed = 0;
		x->entries = log->entries;
	}
	for (i = x->indexed; i < log->count; i++) {
		slot = index_slot(x, log->entries[i].kind, log->entries[i].id);
		if (!*slot) /* the first one wins, as a scan finds it */
			*slot = i + 1;
	}
	x->indexed = log->count;
	return 0;
}

static void index_free(struct amp_log_index *x)
{
	if (x) {
		free(x->slots);
		free(x);
	}
}

int amp_task_log_append(amp_task_log *log, int seq, amp_entry_kind kind, const char *id,
			json_t *doc, int aside)
{
	amp_entry **list = aside ? &log->superseded : &log->entries;
	size_t *count = aside ? &log->nsuperseded : &log->count;
	amp_entry *more = realloc(*list, (*count + 1) * sizeof(*more));
	char *copy = strdup(id);

	if (!more || !copy) {
		if (more)
			*list = more;
		free(copy);
		json_decref(doc);
		return -1;
	}
	*list = more;
	more[*count].seq = seq;
	more[*count].kind = kind;
	more[*count].id = copy;
	more[*count].doc = doc;
	(*count)++;
	if (seq >= log->next_seq)
		log->next_seq = seq + 1;
	return 0;
}

const amp_entry *amp_task_log_marker(const amp_task_log *log, const amp_entry *s)
{
	const char *record;
	size_t i;

	for (i = 0; i < log->count; i++)
		if (log->entries[i].seq == s->seq - 1 && amp_entry_is_marker(&log->entries[i], &record) &&
		    entry_is_named(s, record))
			return &log->entries[i];
	return NULL;
}

/*
 * Records shared among reads: during a batch (amp import), the records
 * read by the rules, by blob id: a record's rules read its whole task, so
 * without it the k-th record of a task parses the k - 1 before it again.
 * Blobs are immutable, so an entry cannot go stale; the table is emptied
 * when it is half full, which bounds it.  The documents are shared with
 * the logs that read them (a reference each): the rules only read them.
 * A batch keeps at most half of BATCH_SHARED records parsed.
 */
#define BATCH_SHARED 16384

struct doc_cache {
	struct doc_slot {
		git_oid id;
		json_t *doc; /* NULL: empty */
	} *slot;
	size_t slots, used; /* slots: a power of two */
};

static void doc_cache_clear(struct doc_cache *dc)
{
	size_t i;

	for (i = 0; i < dc->slots && dc->used; i++)
		if (dc->slot[i].doc) {
			json_decref(dc->slot[i].doc);
			dc->slot[i].doc = NULL;
			dc->used--;
		}
}

static struct doc_slot *doc_cache_slot(struct doc_cache *dc, const git_oid *id)
{
	size_t h;

	memcpy(&h, id->id, sizeof(h));
	for (h &= dc->slots - 1; dc->slot[h].doc && !git_oid_equal(&dc->slot[h].id, id);
	     h = (h + 1) & (dc->slots - 1))
		;
	return &dc->slot[h];
}

/* The record `id` parsed before, with a new reference, or NULL. */
static json_t *doc_cache_get(amp_store *st, const git_oid *id)
{
	struct doc_slot *slot;

	if (!st->docs || !(slot = doc_cache_slot(st->docs, id))->doc)
		return NULL;
	return json_incref(slot->doc);
}

static void doc_cache_put(amp_store *st, const git_oid *id, json_t *doc)
{
	struct doc_slot *slot;

	if (!st->docs)
		return;
	if (st->docs->used >= st->docs->slots / 2)
		doc_cache_clear(st->docs);
	slot = doc_cache_slot(st->docs, id);
	if (slot->doc)
		return;
	git_oid_cpy(&slot->id, id);
	slot->doc = json_incref(doc);
	st->docs->used++;
}

/* Shares up to slots / 2 records from now on; 0 stops and frees them. */
static void share_records(amp_store *st, size_t slots)
{
	size_t n = 16;

	if (st->docs) {
		doc_cache_clear(st->docs);
		free(st->docs->slot);
		free(st->docs);
		st->docs = NULL;
	}
	if (!slots)
		return;
	while (n < slots)
		n *= 2;
	/* Without it the reads are only slower. */
	if (!(st->docs = calloc(1, sizeof(*st->docs))))
		return;
	if (!(st->docs->slot = calloc(n, sizeof(*st->docs->slot)))) {
		free(st->docs);
		st->docs = NULL;
		return;
	}
	st->docs->slots = n;
}

/* amp_store_read_task, or only the control records when `controls_only`
 * (the others are skipped by their names, never read). */
static int read_task(amp_store *st, git_tree *root, const char *task_id, int controls_only,
		     amp_task_log *log, amp_error *err)
{
	char dir[128];
	git_tree_entry *dir_entry = NULL;
	git_tree *tree = NULL;
	git_blob *blob = NULL;
	amp_reccache *cache = NULL;
	git_oid *cache_ids = NULL; /* the blob of each entry, for the cache */
	size_t i, n, parsed = 0;
	int rc, status = AMP_OK;

	memset(log, 0, sizeof(*log));
	amp_store_walk_step();
	log->next_seq = 1;
	if (amp_store_task_dir(task_id, dir, sizeof(dir)) < 0)
		return amp_error_set(err, AMP_EUSAGE, "",
				     "not a task id (T-YYYY-NNN): %s", task_id);
	snprintf(log->task_id, sizeof(log->task_id), "%s", task_id);
	log->policy = &st->policy;
	if (!root)
		return AMP_OK;
	rc = git_tree_entry_bypath(&dir_entry, root, dir);
	if (rc == GIT_ENOTFOUND) {
		git_error_clear();
		return AMP_OK;
	}
	if (rc < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read the task directory %s", dir);
		goto cleanup;
	}
	if (git_tree_lookup(&tree, st->repo, git_tree_entry_id(dir_entry)) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read the task directory %s, tree %s",
				       dir, git_oid_tostr_s(git_tree_entry_id(dir_entry)));
		goto cleanup;
	}
	n = git_tree_entrycount(tree);
	if (n && !(log->entries = calloc(n, sizeof(*log->entries)))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	/* A long task's records come from its record cache (reccache.h);
	 * a batch shares its own (doc_cache), and a read of the controls
	 * skips the rest. */
	if (!controls_only && !st->docs && n >= AMP_RECCACHE_MIN_RECORDS) {
		cache = amp_reccache_load(st->state_dir, task_id);
		/* without it the cache is not written, nothing else */
		cache_ids = malloc(n * sizeof(*cache_ids));
	}
	/* Tree entries are sorted by name, and names start with the sequence
	 * number, so this is commit order. */
	for (i = 0; i < n; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		amp_entry *rec = &log->entries[log->count];
		amp_error perr;

		if (parse_entry_name(git_tree_entry_name(e), &rec->seq,
				     &rec->kind, &rec->id) < 0)
			continue; /* not ours: ignore rather than fail */
		if (rec->seq >= log->next_seq)
			log->next_seq = rec->seq + 1;
		if (controls_only && rec->kind != AMP_ENTRY_CTL) {
			free(rec->id);
			memset(rec, 0, sizeof(*rec));
			continue;
		}
		if (!(rec->doc = doc_cache_get(st, git_tree_entry_id(e))) &&
		    (rec->doc = amp_reccache_get(cache, git_tree_entry_id(e))))
			st->records_cached++;
		if (rec->doc)
			goto have_doc;
		/* A record past the size bound is unreadable without being
		 * loaded: the header says its size.  A blob that is missing or
		 * corrupt spoils its record only: the task's other records
		 * stay usable (issue 7, defect 4). */
		if (oversized_record(st, git_tree_entry_id(e), &perr)) {
			/* perr says how big it is */
		} else if (git_blob_lookup(&blob, st->repo, git_tree_entry_id(e)) < 0) {
			amp_error_git(&perr, AMP_EIO, "cannot read blob %s",
				      git_oid_tostr_s(git_tree_entry_id(e)));
			git_error_clear();
		} else if (amp_bounds_parse_record(git_blob_rawcontent(blob),
						   (size_t)git_blob_rawsize(blob),
						   &rec->doc, &perr) == 0 &&
			   !json_is_object(rec->doc)) {
			amp_error_set(&perr, AMP_ESCHEMA, "", "not a JSON object");
		}
		if (!blob || !json_is_object(rec->doc)) {
			if (add_bad(log, rec->seq, rec->kind, rec->id, git_tree_entry_name(e),
				    perr.message) < 0) {
				free(rec->id);
				status = amp_error_set(err, AMP_EIO, "", "out of memory");
			}
			json_decref(rec->doc);
			memset(rec, 0, sizeof(*rec));
			if (status < 0)
				goto cleanup;
			git_blob_free(blob);
			blob = NULL;
			continue;
		}
		doc_cache_put(st, git_tree_entry_id(e), rec->doc);
		git_blob_free(blob);
		blob = NULL;
		st->records_parsed++;
		parsed++;
have_doc:
		if (cache_ids)
			git_oid_cpy(&cache_ids[log->count], git_tree_entry_id(e));
		log->count++;
	}
	/* Written again once AMP_RECCACHE_SLACK records came from git: a
	 * read parses at most that many.  Before the set-aside, which moves
	 * entries away from cache_ids. */
	if (status == AMP_OK && cache_ids && parsed >= (cache ? AMP_RECCACHE_SLACK : 1))
		amp_reccache_save(st->state_dir, task_id, cache, cache_ids, log->entries,
				  log->count);
	if (status == AMP_OK && set_aside_superseded(log) < 0)
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
	/* After the set-aside, which moves entries: the index is built for
	 * the array as lookups find it.  Without one, lookups scan. */
	if (status == AMP_OK)
		log->index = calloc(1, sizeof(*log->index));
cleanup:
	amp_reccache_free(cache);
	free(cache_ids);
	git_blob_free(blob);
	git_tree_free(tree);
	git_tree_entry_free(dir_entry);
	if (status < 0)
		amp_task_log_free(log);
	return status;
}

int amp_store_read_task(amp_store *st, git_tree *root, const char *task_id,
			amp_task_log *log, amp_error *err)
{
	return read_task(st, root, task_id, 0, log, err);
}

int amp_store_read_task_controls(amp_store *st, git_tree *root, const char *task_id,
				 amp_task_log *log, amp_error *err)
{
	return read_task(st, root, task_id, 1, log, err);
}

void amp_task_log_free(amp_task_log *log)
{
	size_t i;

	for (i = 0; i < log->count; i++) {
		free(log->entries[i].id);
		json_decref(log->entries[i].doc);
	}
	for (i = 0; i < log->nbad; i++) {
		free(log->bad[i].id);
		free(log->bad[i].name);
		free(log->bad[i].reason);
	}
	for (i = 0; i < log->nsuperseded; i++) {
		free(log->superseded[i].id);
		json_decref(log->superseded[i].doc);
	}
	free(log->entries);
	free(log->bad);
	free(log->superseded);
	index_free(log->index);
	log->index = NULL;
	log->entries = log->superseded = NULL;
	log->bad = NULL;
	log->count = log->nbad = log->nsuperseded = 0;
}

int amp_task_log_id_taken(const amp_task_log *log, const char *msg_id)
{
	size_t i;

	if (amp_task_log_find(log, AMP_ENTRY_MSG, msg_id))
		return 1;
	for (i = 0; i < log->nbad; i++)
		if (log->bad[i].kind == AMP_ENTRY_MSG && !strcmp(log->bad[i].id, msg_id))
			return 1;
	for (i = 0; i < log->nsuperseded; i++)
		if (log->superseded[i].kind == AMP_ENTRY_MSG && !strcmp(log->superseded[i].id, msg_id))
			return 1;
	return 0;
}

const amp_entry *amp_task_log_find(const amp_task_log *log,
				   amp_entry_kind kind, const char *msg_id)
{
	size_t i, *slot;

	/* An empty view has nothing indexed (and no table yet). */
	if (log->index && index_update(log->index, log) == 0 && log->index->cap) {
		slot = index_slot(log->index, kind, msg_id);
		/* a prefix view sees only its own entries */
		return *slot && *slot - 1 < log->count ? &log->entries[*slot - 1] : NULL;
	}
	for (i = 0; i < log->count; i++)
		if (log->entries[i].kind == kind &&
		    strcmp(log->entries[i].id, msg_id) == 0)
			return &log->entries[i];
	return NULL;
}

void amp_strv_free(char **v, size_t count)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < count; i++)
		free(v[i]);
	free(v);
}

/* A task directory found by the listing: its name and its tree. */
struct listed {
	char *id;
	git_oid tree;
};

static int cmp_listed_ref(const void *a, const void *b)
{
	return strcmp((*(const struct listed *const *)a)->id,
		      (*(const struct listed *const *)b)->id);
}

int amp_store_task_in_place(amp_store *st, const char *shard, const git_tree_entry *e)
{
	const char *name = git_tree_entry_name(e);
	char dir[128], path[AMP_PATH_MAX], why[256];

	if (git_tree_entry_type(e) == GIT_OBJECT_TREE && amp_store_task_dir(name, dir, sizeof(dir)) == 0 &&
	    !strncmp(dir, "tasks/", 6) && !strncmp(dir + 6, shard, strlen(shard)) &&
	    dir[6 + strlen(shard)] == '/' && !strcmp(dir + 7 + strlen(shard), name))
		return 1;
	snprintf(path, sizeof(path), "tasks/%s/%s", shard, name);
	if (git_tree_entry_type(e) != GIT_OBJECT_TREE)
		amp_store_note_skipped(st, path, "not a task's directory but a file: skipped");
	else if (!amp_task_id_valid(name, strlen(name)))
		amp_store_note_skipped(st, path, "not a task's directory (tasks/<YYYY>/<S>/<task_id>): skipped");
	else if (amp_store_task_dir(name, dir, sizeof(dir)) == 0 &&
		 snprintf(why, sizeof(why), "task %s out of its place (%s): skipped", name, dir) > 0)
		amp_store_note_skipped(st, path, why);
	return 0;
}

void amp_store_note_skipped(amp_store *st, const char *path, const char *why)
{
	size_t i;

	for (i = 0; i < st->skipped.count; i++)
		if (!strcmp(st->skipped.items[i].path, path))
			return;
	amp_errlist_add(&st->skipped, AMP_EIO, path, "%s", why);
}

void amp_store_skipped_clear(amp_store *st)
{
	amp_errlist_free(&st->skipped);
	memset(&st->skipped, 0, sizeof(st->skipped));
}

const amp_errlist *amp_store_skipped(const amp_store *st)
{
	return &st->skipped;
}

/* Walks `depth` levels of subtrees below `tree` (at tasks/`prefix`),
 * collecting the tasks found at the last level. */
static int collect_level(amp_store *st, git_tree *tree, const char *prefix, int depth,
			 struct listed **v, size_t *count, size_t *alloc)
{
	size_t i, n = git_tree_entrycount(tree);
	char path[AMP_PATH_MAX];
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		const git_tree_entry *e = git_tree_entry_byindex(tree, i);
		git_tree *sub = NULL;

		if (depth == 0 && !amp_store_task_in_place(st, prefix, e))
			continue;
		if (git_tree_entry_type(e) != GIT_OBJECT_TREE)
			continue;
		if (depth == 0) {
			if (*count == *alloc) {
				struct listed *bigger;

				*alloc = *alloc ? *alloc * 2 : 64;
				if (!(bigger = realloc(*v, *alloc * sizeof(**v))))
					return -1;
				*v = bigger;
			}
			if (!((*v)[*count].id = strdup(git_tree_entry_name(e))))
				return -1;
			git_oid_cpy(&(*v)[(*count)++].tree, git_tree_entry_id(e));
			continue;
		}
		if (git_tree_lookup(&sub, st->repo, git_tree_entry_id(e)) < 0)
			return -1;
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "/" : "", git_tree_entry_name(e));
		rc = collect_level(st, sub, path, depth - 1, v, count, alloc);
		git_tree_free(sub);
	}
	return rc;
}

int amp_store_list_task_trees(amp_store *st, git_tree *root, char ***ids,
			      git_oid **trees, size_t *count, amp_error *err)
{
	git_tree_entry *tasks = NULL;
	git_tree *tree = NULL;
	struct listed *v = NULL, **order = NULL;
	size_t n = 0, alloc = 0, i;
	int rc, status = AMP_OK;

	*ids = NULL;
	if (trees)
		*trees = NULL;
	*count = 0;
	rc = git_tree_entry_bypath(&tasks, root, "tasks");
	if (rc == GIT_ENOTFOUND) {
		git_error_clear();
		return AMP_OK;
	}
	if (rc < 0 || git_tree_lookup(&tree, st->repo, git_tree_entry_id(tasks)) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read tasks/");
		goto cleanup;
	}
	/* tasks/<year>/<shard>/<task_id> */
	if (collect_level(st, tree, "", 2, &v, &n, &alloc) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot list tasks");
		goto cleanup;
	}
	/* Sorted by reference: qsort moves pointers, not 28-byte entries. */
	if (!(order = malloc((n ? n : 1) * sizeof(*order))) ||
	    !(*ids = malloc((n ? n : 1) * sizeof(**ids))) ||
	    (trees && !(*trees = malloc((n ? n : 1) * sizeof(**trees))))) {
		free(*ids);
		*ids = NULL;
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	for (i = 0; i < n; i++)
		order[i] = &v[i];
	qsort(order, n, sizeof(*order), cmp_listed_ref);
	for (i = 0; i < n; i++) {
		(*ids)[i] = order[i]->id;
		if (trees)
			git_oid_cpy(&(*trees)[i], &order[i]->tree);
	}
	*count = n;
	n = 0; /* the names are the caller's now */
cleanup:
	for (i = 0; i < n; i++)
		free(v[i].id);
	free(v);
	free(order);
	git_tree_free(tree);
	git_tree_entry_free(tasks);
	return status;
}

int amp_store_list_tasks(amp_store *st, git_tree *root, char ***ids,
			 size_t *count, amp_error *err)
{
	return amp_store_list_task_trees(st, root, ids, NULL, count, err);
}

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
	/* One commit adds to one directory: one path of trees to rewrite. */
	if (w->nfiles && (dir_len(path) != dir_len(w->files[0].path) ||
			  strncmp(path, w->files[0].path, dir_len(path))))
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

static void write_reset(amp_store_write *w)
{
	size_t i;

	for (i = 0; i < w->nfiles; i++)
		free(w->files[i].data);
	memset(w, 0, sizeof(*w));
}

/*
 * Returns in *out the tree `base` (NULL = empty) with every file of `w`
 * added under `dir` (the files' common directory, relative to base),
 * rewriting only the trees along that one path.  Append-only: a name that
 * already holds a different object is refused.
 */
static void batch_hint(amp_store *st, const git_oid *tree, const git_tree *replaced);

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

static int put_entry(char **buf, size_t *len, size_t *alloc, unsigned mode,
		     const char *name, const git_oid *id)
{
	size_t name_len = strlen(name), need = *len + 8 + name_len + 1 + GIT_OID_RAWSZ;
	char *grown;
	int n;

	if (need > *alloc) {
		if (!(grown = realloc(*buf, need * 2)))
			return -1;
		*buf = grown;
		*alloc = need * 2;
	}
	n = snprintf(*buf + *len, 8, "%o ", mode);
	if (n < 0 || n >= 8)
		return -1;
	*len += (size_t)n;
	memcpy(*buf + *len, name, name_len + 1);
	*len += name_len + 1;
	memcpy(*buf + *len, id->id, GIT_OID_RAWSZ);
	*len += GIT_OID_RAWSZ;
	return 0;
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
	size_t order[AMP_WRITE_MAX_FILES], nnew = 0, i, j, k, count, len = 0, alloc = 0;
	const git_tree_entry *e;
	git_odb *odb = NULL;
	char *buf = NULL;
	int rc, status = AMP_OK;

	count = base ? git_tree_entrycount(base) : 0;
	for (i = 1; i < count; i++)
		if (git_tree_entry_cmp(git_tree_entry_byindex(base, i - 1),
				       git_tree_entry_byindex(base, i)) >= 0)
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
		    (!e && j < nnew && !git_oid_equal(&blobs[order[j]], &blobs[i]))) {
			status = amp_error_set(err, AMP_ERULE, "",
					       "append-only store: %s already exists",
					       w->files[i].path);
			goto cleanup;
		}
		if (e || j < nnew)
			continue; /* there already, or twice in w: once */
		names[i] = file;
		/* Insertion in git's order: a commit adds one to three files. */
		for (k = nnew; k > 0 && entry_order(names[order[k - 1]], 0, file, 0) > 0; k--)
			order[k] = order[k - 1];
		order[k] = i;
		nnew++;
	}
	for (i = 0, j = 0; i < count || j < nnew;) {
		e = i < count ? git_tree_entry_byindex(base, i) : NULL;
		if (j < nnew && (!e || entry_order(names[order[j]], 0, git_tree_entry_name(e),
						   git_tree_entry_type(e) == GIT_OBJECT_TREE) < 0)) {
			rc = put_entry(&buf, &len, &alloc, GIT_FILEMODE_BLOB, names[order[j]],
				       &blobs[order[j]]);
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
		batch_hint(st, out, base);
cleanup:
	git_odb_free(odb);
	free(buf);
	return status;
}

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
		    git_tree_lookup(&sub, repo, git_tree_entry_id(existing)) < 0) {
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
		batch_hint(st, out, base);
cleanup:
	git_tree_free(sub);
	git_treebuilder_free(tb);
	return status;
}

static int write_commit(amp_store *st, git_commit *parent, git_tree *base,
			const amp_store_write *w, git_oid *out, amp_error *err)
{
	git_oid blobs[AMP_WRITE_MAX_FILES], tree_oid, next;
	git_tree *tree = NULL, *next_tree = NULL;
	git_signature *author = NULL, *committer = NULL;
	char email[64], message[2048], dir[AMP_PATH_MAX];
	int64_t now_ms;
	size_t i;
	int status;

	if ((status = amp_clock_now_ms(&now_ms, err)) < 0 ||
	    (status = amp_clock_check_commit(w->time_ms ? w->time_ms : now_ms, err)) < 0)
		return status;
	if (base && git_tree_lookup(&tree, st->repo, git_tree_id(base)) < 0) {
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
	if (w->nfiles) {
		/* Fits: files[].path has the same size. */
		snprintf(dir, sizeof(dir), "%.*s", (int)dir_len(w->files[0].path),
			 w->files[0].path);
		if ((status = tree_insert(st, tree, dir, w, blobs, &tree_oid, err)) < 0)
			goto cleanup;
		if (git_tree_lookup(&next_tree, st->repo, &tree_oid) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot read a new tree");
			goto cleanup;
		}
		git_tree_free(tree);
		tree = next_tree;
		next_tree = NULL;
	}
	snprintf(email, sizeof(email), "%s@amp.invalid",
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
	git_signature_free(author);
	git_signature_free(committer);
	git_tree_free(next_tree);
	git_tree_free(tree);
	return status;
}

static int ensure_dir(const char *path)
{
	return mkdir(path, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

/*
 * A killed writer can leave <ref>.lock behind, and libgit2 then refuses
 * every later update.  We hold an flock on a file of our own while moving
 * the ref, so no live amp writer can own a lock we see then; a lock older
 * than amp.staleLockTimeout (default 2 s, while a real update holds it for
 * microseconds) is also not a live git's, and we remove it.
 */
static void clear_stale_ref_lock(amp_store *st, const char *ref)
{
	char lock[PATH_MAX + 300];
	struct stat sb;
	struct timespec now;
	int64_t age_ms;

	if (!fits(snprintf(lock, sizeof(lock), "%s/%s.lock", st->common_dir, ref),
		  sizeof(lock)) || stat(lock, &sb) != 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	age_ms = ((int64_t)now.tv_sec - sb.st_mtim.tv_sec) * 1000 +
		 (now.tv_nsec - sb.st_mtim.tv_nsec) / 1000000;
	if (age_ms >= st->stale_lock_ms)
		unlink(lock);
}

/* Age after which a temporary file is nobody's (see sweep_tmp_files). */
#define AMP_TMP_FILE_AGE_SEC 3600

/* Whether `name` reads <one of prefixes (NULL-ended)>...<suffix>. */
static int tmp_name(const char *name, const char *const *prefixes, const char *suffix)
{
	size_t n = strlen(name), ns = strlen(suffix), np;

	for (; *prefixes; prefixes++) {
		np = strlen(*prefixes);
		if (n >= np + ns && !strncmp(name, *prefixes, np) && !strcmp(name + n - ns, suffix))
			return 1;
	}
	return 0;
}

/* Removes the regular files of directory `path` named <prefix>...<suffix>,
 * for any of prefixes (NULL-ended), and not modified for
 * AMP_TMP_FILE_AGE_SEC: one read of the directory. */
static void sweep_dir(const char *path, const char *const *prefixes, const char *suffix,
		      time_t now)
{
	struct dirent *d;
	struct stat sb;
	DIR *dir;

	if (!(dir = opendir(path)))
		return;
	while ((d = readdir(dir))) {
		if (tmp_name(d->d_name, prefixes, suffix) &&
		    fstatat(dirfd(dir), d->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(sb.st_mode) && now - sb.st_mtime >= AMP_TMP_FILE_AGE_SEC)
			unlinkat(dirfd(dir), d->d_name, 0);
	}
	closedir(dir);
}

/*
 * Sweeps the pack directory `path` (one read of it):
 *  - tmp_*: amp's tmp_amp_pack_XXXXXX (packwrite.c) and git's tmp_pack_*,
 *    tmp_idx_*, tmp_rev_* ... (git pack-objects, index-pack), not modified
 *    for AMP_TMP_FILE_AGE_SEC: what a writer, a roll-up or a git gc killed
 *    or failed (a full disk) while writing leaves.  git's own `git prune`
 *    (builtin/prune.c, remove_temporary_files) removes the same "tmp_"
 *    names once older than its --expire (gc.pruneExpire, two weeks): a
 *    live writer's file is written as it grows, so its mtime stays fresh.
 *  - pack-<name>.pack and .rev whose .idx is missing, with no .keep
 *    beside them, not modified for AMP_TMP_FILE_AGE_SEC:
 *    what a roll-up killed while removing a pack it copied leaves
 *    (remove_pack takes the index first), or a write or git killed between
 *    renaming a pack into place and its index (both rename the pack
 *    first).  A pack without its index is read by nobody -- git, libgit2
 *    and amp find objects through the index -- and its objects are in the
 *    rolled-up pack, or were never referenced; a live writer renames the
 *    index in the next milliseconds, so an hour-old one is nobody's.
 * The path buffers hold any entry name (NAME_MAX).
 */
static void sweep_pack_dir(const char *path, time_t now)
{
	char idx[NAME_MAX + 1], keep[NAME_MAX + 1];
	const char *name;
	struct dirent *d;
	struct stat sb;
	size_t n;
	DIR *dir;

	if (!(dir = opendir(path)))
		return;
	while ((d = readdir(dir))) {
		name = d->d_name;
		n = strlen(name);
		if (!strncmp(name, "tmp_", 4)) {
			if (fstatat(dirfd(dir), name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) &&
			    now - sb.st_mtime >= AMP_TMP_FILE_AGE_SEC)
				unlinkat(dirfd(dir), name, 0);
			continue;
		}
		if (strncmp(name, "pack-", 5) || n < 10 ||
		    (strcmp(name + n - 5, ".pack") && strcmp(name + n - 4, ".rev")))
			continue;
		n -= name[n - 4] == '.' ? 4 : 5;
		snprintf(idx, sizeof(idx), "%.*s.idx", (int)n, name);
		snprintf(keep, sizeof(keep), "%.*s.keep", (int)n, name);
		if (fstatat(dirfd(dir), idx, &sb, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT &&
		    fstatat(dirfd(dir), keep, &sb, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT &&
		    fstatat(dirfd(dir), name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) &&
		    now - sb.st_mtime >= AMP_TMP_FILE_AGE_SEC)
			unlinkat(dirfd(dir), name, 0);
	}
	closedir(dir);
}

/*
 * libgit2 writes each loose object (amp's before its writes became packs,
 * another libgit2 program's) to objects/tmp_object_git2_XXXXXX, and
 * renames it into place; a writer killed in between (kill -9, power loss)
 * leaves that file behind for good, as a watcher or a reader killed while
 * saving leaves <state dir>/watch.json.<pid>.tmp or inbox.json.<pid>.tmp
 * (amp status, status.cache.<pid>.tmp or status.shards.<pid>.tmp; a
 * reader, records/<task id>.<pid>.tmp: reccache.h); the pack directory's
 * leftovers are sweep_pack_dir's.  Files older than AMP_TMP_FILE_AGE_SEC
 * go: a live writer holds such a file for the milliseconds one object
 * takes, so an hour-old one is nobody's; and were a writer stopped for
 * longer than that, its rename would fail and its write with it, so
 * nothing is lost.  libgit2 makes these files in objects/ itself, never in
 * the fan-out directories, so a sweep reads four directories.
 */
void amp_store_sweep(amp_store *st)
{
	static const char *const objects[] = { "tmp_object_git2_", NULL };
	/* amp watch's, amp inbox's and amp status's saved states */
	static const char *const states[] = { "watch.json.", "inbox.json.", "status.cache.",
					      "status.shards.", NULL };
	static const char *const records[] = { "T-", NULL };
	char dir[PATH_MAX + 32];
	time_t now = time(NULL);

	sweep_dir(st->objects_dir, objects, "", now);
	snprintf(dir, sizeof(dir), "%s/pack", st->objects_dir);
	sweep_pack_dir(dir, now);
	sweep_dir(st->state_dir, states, ".tmp", now);
	/* what a reader killed while saving a record cache leaves */
	snprintf(dir, sizeof(dir), "%s/records", st->state_dir);
	sweep_dir(dir, records, ".tmp", now);
}

/* A successful write sweeps (amp_store_sweep) at most once an hour,
 * remembered by the mtime of <state dir>/objects-swept, so a write pays
 * one stat() for it, after it released the writers' lock (the writers
 * queued behind it never wait for a sweep). */
static void sweep_tmp_files(amp_store *st)
{
	char stamp[PATH_MAX + 32];
	struct stat sb;
	time_t now = time(NULL);
	int fd;

	snprintf(stamp, sizeof(stamp), "%s/objects-swept", st->state_dir);
	if (stat(stamp, &sb) == 0 && now - sb.st_mtime < AMP_TMP_FILE_AGE_SEC)
		return;
	/* The stamp first, so that a sweep that fails is not retried by every
	 * write. */
	if ((fd = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC, 0666)) < 0)
		return;
	futimens(fd, NULL);
	close(fd);
	amp_store_sweep(st);
}

/* Opens (creating it) the file whose flock amp's writers of `ref` hold
 * while they move it; returns the descriptor, or -1 with err filled. */
static int open_writer_lock(amp_store *st, const char *ref, amp_error *err)
{
	char path[PATH_MAX + 300], *p;
	int fd;

	if (ensure_dir(st->state_dir) < 0) {
		amp_error_set(err, AMP_EIO, "", "cannot create %s: %s",
			      st->state_dir, strerror(errno));
		return -1;
	}
	if (!fits(snprintf(path, sizeof(path), "%s/%s.flock", st->state_dir, ref),
		  sizeof(path))) {
		amp_error_set(err, AMP_EIO, "", "path too long: %s/%s.flock",
			      st->state_dir, ref);
		return -1;
	}
	for (p = path + strlen(st->state_dir) + 1; *p; p++)
		if (*p == '/')
			*p = '_';
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) < 0)
		amp_error_set(err, AMP_EIO, "", "cannot open %s: %s", path,
			      strerror(errno));
	return fd;
}


/* fsync() of the directory holding `path`, as libgit2 does after a rename
 * with fsync on: the rename itself is in the directory. */
static void fsync_parent(const char *path)
{
	char dir[PATH_MAX + 300];
	const char *slash = strrchr(path, '/');
	int fd;

	if (!slash || !fits(snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path),
			    sizeof(dir)) ||
	    (fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	fsync(fd);
	close(fd);
}

/*
 * move_ref for the case of every amp write: `ref` is a loose file holding
 * `tip`, and keeps no reflog.  It is moved as git moves a ref: <ref>.lock
 * created exclusively (so a git update-ref at the same moment fails, or
 * makes this one fail), the ref read under it and compared with `tip`, the
 * new id written to the lock and renamed over the ref.  libgit2 did the
 * same with ~20 more calls (config snapshots, stats of the ref, a reflog
 * look-up, a link() attempt): 860 us of the ~1.7 ms a send held the
 * writers' lock, 490 us this way (medians of 40 sends).  The lock's
 * block is allocated before the write (posix_fallocate): renamed over the
 * old ref with its block still to be allocated, ext4 allocates it in
 * rename() (auto_da_alloc), which took 250 us instead of 180.
 *
 * Returns 0 when moved, 1 when another writer is in the way (retry), 2
 * when the ref is not that case (missing or only in packed-refs, symbolic,
 * unreadable, with a reflog: libgit2 does it), or an error status.
 */
static int move_loose_ref(amp_store *st, const char *ref, const git_oid *tip,
			  const git_oid *next, amp_error *err)
{
	char path[PATH_MAX + 300], lock[PATH_MAX + 310], log[PATH_MAX + 310];
	char now[GIT_OID_HEXSZ + 2], line[GIT_OID_HEXSZ + 1];
	git_oid current;
	struct stat sb;
	ssize_t n;
	int fd = -1, lock_fd = -1, status = 2;

	if (!tip || !fits(snprintf(path, sizeof(path), "%s/%s", st->common_dir, ref), sizeof(path)) ||
	    !fits(snprintf(lock, sizeof(lock), "%s.lock", path), sizeof(lock)) ||
	    !fits(snprintf(log, sizeof(log), "%s/logs/%s", st->common_dir, ref), sizeof(log)) ||
	    lstat(log, &sb) == 0 || errno != ENOENT || st->log_all_refs)
		return 2;
	if ((lock_fd = open(lock, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)) < 0) {
		if (errno != EEXIST)
			return 2;
		clear_stale_ref_lock(st, ref);
		return 1;
	}
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (n = read(fd, now, sizeof(now))) != GIT_OID_HEXSZ + 1 || now[GIT_OID_HEXSZ] != '\n' ||
	    git_oid_fromstrn(&current, now, GIT_OID_HEXSZ) < 0)
		goto cleanup; /* 2: libgit2 reads whatever is there */
	if (!git_oid_equal(&current, tip)) {
		status = 1;
		goto cleanup;
	}
	git_oid_fmt(line, next);
	line[GIT_OID_HEXSZ] = '\n';
	(void)posix_fallocate(lock_fd, 0, sizeof(line));
	if ((n = write(lock_fd, line, sizeof(line))) != (ssize_t)sizeof(line) ||
	    (st->fsync && fsync(lock_fd) < 0)) {
		status = amp_error_set(err, AMP_EIO, "", "cannot write %s: %s", lock,
				       n < 0 || n == (ssize_t)sizeof(line) ? strerror(errno) : "short write");
		goto cleanup;
	}
	n = close(lock_fd);
	lock_fd = -1;
	if (n < 0 || rename(lock, path) < 0) {
		status = amp_error_set(err, AMP_EIO, "", "cannot update %s: %s", ref, strerror(errno));
		goto cleanup;
	}
	if (st->fsync)
		fsync_parent(path);
	status = 0;
cleanup:
	if (fd >= 0)
		close(fd);
	if (lock_fd >= 0)
		close(lock_fd);
	if (status != 0)
		unlink(lock);
	git_error_clear();
	return status;
}

/* Moves ref from `tip` (NULL: ref must not exist) to `next`; the caller
 * holds the writers' flock.  Returns 0 when moved, 1 when a writer outside
 * amp got in first (retry), or an error status. */
static int move_ref(amp_store *st, const char *ref, const git_oid *tip,
		    const git_oid *next, const char *subject, amp_error *err)
{
	git_reference *out = NULL;
	int rc, status;

	if ((status = move_loose_ref(st, ref, tip, next, err)) != 2)
		return status;

	/* force is what allows replacing an existing ref; `tip` makes it a
	 * compare-and-swap. */
	rc = git_reference_create_matching(&out, st->repo, ref, next,
					   tip != NULL, tip, subject);
	if (rc == 0) {
		status = 0;
	} else if (rc == GIT_EMODIFIED || rc == GIT_EEXISTS || rc == GIT_ELOCKED) {
		if (rc == GIT_ELOCKED)
			clear_stale_ref_lock(st, ref);
		git_error_clear();
		status = 1;
	} else {
		status = amp_error_git(err, AMP_EIO, "cannot update %s", ref);
	}
	git_reference_free(out);
	return status;
}

/* Full-jitter exponential backoff: a random sleep in [0, min(cap, base*2^n)). */
static void backoff(amp_store *st, unsigned attempt)
{
	unsigned long cap_us = 50000, span = 200;
	struct timespec ts;
	unsigned long us;

	while (attempt-- > 0 && span < cap_us)
		span *= 2;
	if (span > cap_us)
		span = cap_us;
	us = (unsigned long)rand_r(&st->rng) % span;
	ts.tv_sec = (time_t)(us / 1000000);
	ts.tv_nsec = (long)(us % 1000000) * 1000;
	nanosleep(&ts, NULL);
}

static int build_init(amp_store *st, git_tree *tip, void *ctx,
		      amp_store_write *w, amp_error *err);

static void wake_writer(int sig)
{
	(void)sig;
}

/*
 * Takes the writers' flock until `deadline`: 0 when taken, -1 when not.
 * The wait blocks in flock(), so the kernel hands the lock to a waiter the
 * moment it is released; polling left it idle between a release and the
 * next poll (8 writers on 2 cores: 0.96-1.1x one writer's throughput).  A
 * SIGALRM every AMP_LOCK_TICK_MS (setitimer; the handler does nothing and
 * the action has no SA_RESTART) interrupts the wait to look at the
 * deadline, so nobody blocks forever; the caller's timer and action are
 * put back.  Where the timer cannot be set, the wait polls.
 */
#define AMP_LOCK_TICK_MS 100

static int wait_writer_lock(amp_store *st, int fd, int64_t deadline)
{
	struct sigaction sa, old_sa;
	struct itimerval tick, old_tick;
	unsigned polls;
	int rc;

	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = wake_writer;
	sigemptyset(&sa.sa_mask);
	memset(&tick, 0, sizeof(tick));
	tick.it_value.tv_usec = tick.it_interval.tv_usec = AMP_LOCK_TICK_MS * 1000;
	if (sigaction(SIGALRM, &sa, &old_sa) == 0) {
		if (setitimer(ITIMER_REAL, &tick, &old_tick) == 0) {
			while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR &&
			       amp_monotonic_ms() <= deadline)
				;
			setitimer(ITIMER_REAL, &old_tick, NULL);
			sigaction(SIGALRM, &old_sa, NULL);
			return rc == 0 ? 0 : -1;
		}
		sigaction(SIGALRM, &old_sa, NULL);
	}
	for (polls = 0; flock(fd, LOCK_EX | LOCK_NB) != 0; polls++) {
		if (amp_monotonic_ms() > deadline)
			return -1;
		backoff(st, polls < 5 ? polls : 5);
	}
	return 0;
}

/* wait_writer_lock for a writer's attempt, with the error it ends in. */
static int take_writer_lock(amp_store *st, int fd, int64_t deadline, const char *ref,
			    unsigned attempt, amp_error *err)
{
	if (wait_writer_lock(st, fd, deadline) < 0)
		return amp_error_set(err, AMP_EIO, "",
				     "%s stayed busy for %.0f s (%u attempts); nothing was written",
				     ref, st->retry_timeout_ms / 1000.0, attempt);
	return AMP_OK;
}

int amp_store_lock(amp_store *st, const char *ref, amp_error *err)
{
	int fd = open_writer_lock(st, ref, err);

	if (fd < 0)
		return -1;
	if (wait_writer_lock(st, fd, amp_monotonic_ms() + st->retry_timeout_ms) < 0) {
		close(fd);
		amp_error_set(err, AMP_EIO, "", "%s stayed busy for %.0f s; nothing was written", ref,
			      st->retry_timeout_ms / 1000.0);
		return -1;
	}
	return fd;
}

void amp_store_unlock(int fd)
{
	if (fd >= 0) {
		flock(fd, LOCK_UN);
		close(fd);
	}
}

/* Strict mode: the key must be one the role may speak with, before
 * anything is written (amp init only adds AMP). */
static int may_write(amp_store *st, const char *ref, const amp_store_write *w,
		     amp_error *err)
{
	char principal[256] = "", *at;
	int status;

	if (!st->signing.require || strcmp(ref, st->ref))
		return AMP_OK;
	if ((status = amp_signing_may_write(&st->signing, w->author[0] ? w->author : "system",
					    st->agent, principal, sizeof(principal), err)) < 0)
		return status;
	/* The key names the instance ("alice@executor"): that is who writes. */
	if (!st->agent[0] && w->author[0] && strcmp(w->author, "system") &&
	    (at = strrchr(principal, '@')) && at > principal &&
	    (size_t)(at - principal) <= AMP_AGENT_MAX && amp_agent_valid(principal, (size_t)(at - principal)))
		snprintf(st->agent, sizeof(st->agent), "%.*s", (int)(at - principal), principal);
	return AMP_OK;
}

/* The odb put in front of the repository's for one write or one batch
 * (batch_odb_open, below with the batches). */
struct mem_recorder;
struct batch_odb {
	git_odb *disk;            /* the repository's odb */
	git_odb *odb;             /* the mempack, then a reader of disk */
	struct mem_recorder *mem; /* owned by odb */
};
static int batch_odb_open(amp_store *st, struct batch_odb *b, size_t shared, amp_error *err);
static void batch_odb_close(amp_store *st, struct batch_odb *b);
static int batch_flush(amp_store *st, struct batch_odb *b, amp_error *err);
static int write_one(amp_store *st, git_commit *parent, git_tree *base,
		     const amp_store_write *w, git_oid *out, amp_error *err);

/*
 * Reads the tip of ref and its tree before the writers' flock is taken:
 * the first read of the object database lists the pack directory and opens
 * each pack's index (a directory read and a few calls per pack), and the
 * commit's time needs the time zone file; done here, that is not done by
 * a writer the others queue behind (under the flock, the tip is read
 * again: what a writer before it added is one more pack to open).  Errors
 * are the build's to report.
 */
static void warm_up(amp_store *st, const char *ref)
{
	git_oid tip;
	git_commit *commit = NULL;
	git_tree *tree = NULL;

	tzset();
	if (git_reference_name_to_id(&tip, st->repo, ref) == 0 &&
	    git_commit_lookup(&commit, st->repo, &tip) == 0)
		git_commit_tree(&tree, commit);
	git_tree_free(tree);
	git_commit_free(commit);
	git_error_clear();
}

/*
 * amp's writers take turns: each takes the writers' flock (waited for in
 * flock(), never past the deadline: wait_writer_lock) before reading the
 * tip, and holds it through the build and the ref move, so no amp writer
 * ever builds on a tip that another amp writer is about to replace.  Measured
 * with 8 writers x 150 messages on 2 cores: 0 retries and 7.4 s, where
 * building optimistically and taking the flock only to move the ref cost
 * ~1 wasted build per message and 9.8-12.6 s.  The ref move stays a
 * compare-and-swap, so writers that ignore the flock (git fetch, git
 * update-ref, another tool) can never be overwritten: amp rebuilds on what
 * they wrote and tries again.
 */
int amp_store_update(amp_store *st, const char *ref, amp_store_build_fn build,
		     void *ctx, git_oid *out, amp_error *err)
{
	amp_store_write w;
	git_commit *parent = NULL;
	git_tree *tree = NULL;
	git_oid tip, next;
	int64_t deadline = amp_monotonic_ms() + st->retry_timeout_ms;
	unsigned attempt;
	int rc, status = AMP_OK, have_tip, fd, held = 0;

	memset(&w, 0, sizeof(w));
	if ((fd = open_writer_lock(st, ref, err)) < 0)
		return AMP_EIO;
	warm_up(st, ref);
	for (attempt = 0;; attempt++) {
		if ((status = take_writer_lock(st, fd, deadline, ref, attempt, err)) < 0)
			goto cleanup;
		held = 1;
		rc = git_reference_name_to_id(&tip, st->repo, ref);
		if (rc < 0 && rc != GIT_ENOTFOUND) {
			status = amp_error_git(err, AMP_EIO, "cannot read %s", ref);
			goto cleanup;
		}
		have_tip = rc == 0;
		git_error_clear();
		if (have_tip && (git_commit_lookup(&parent, st->repo, &tip) < 0 ||
				 git_commit_tree(&tree, parent) < 0)) {
			status = amp_error_git(err, AMP_EIO, "cannot read %s", ref);
			goto cleanup;
		}
		/* Only amp init may start a ref: a writer finding none is in a
		 * repository nobody prepared, or one whose ref was deleted. */
		if (!have_tip && build != build_init) {
			status = amp_error_set(err, AMP_EIO, "",
					       "no AMP store in this repository (%s is missing): run 'amp init'",
					       ref);
			goto cleanup;
		}
		status = build(st, tree, ctx, &w, err);
		if (status != AMP_OK)
			goto cleanup;
		if (build != build_init && (status = may_write(st, ref, &w, err)) < 0)
			goto cleanup;
		if ((status = write_one(st, parent, tree, &w, &next, err)) < 0)
			goto cleanup;
		rc = move_ref(st, ref, have_tip ? &tip : NULL, &next, w.subject,
			      err);
		if (rc < 0) {
			status = rc;
			goto cleanup;
		}
		if (rc == 0) {
			if (out)
				git_oid_cpy(out, &next);
			status = AMP_OK;
			goto cleanup;
		}
		st->retries++;
		if (amp_monotonic_ms() > deadline) {
			status = amp_error_set(err, AMP_EIO, "",
					       "%s stayed busy for %.0f s (%u attempts); nothing was written",
					       ref, st->retry_timeout_ms / 1000.0, attempt + 1);
			goto cleanup;
		}
		/* Beaten while holding the flock: a writer outside amp (git
		 * fetch) or a stale ref lock.  Let it finish, then go again. */
		flock(fd, LOCK_UN);
		held = 0;
		backoff(st, attempt);
		write_reset(&w);
		git_tree_free(tree);
		git_commit_free(parent);
		tree = NULL;
		parent = NULL;
	}
cleanup:
	if (held)
		flock(fd, LOCK_UN);
	close(fd);
	write_reset(&w);
	git_tree_free(tree);
	git_commit_free(parent);
	/* After the flock is released: the hourly sweep and the repack must
	 * not hold up the writers queued behind this one. */
	if (status == AMP_OK)
		sweep_tmp_files(st);
	if (status == AMP_OK && build != build_init)
		amp_pack_maybe(st);
	return status;
}

/* ---- batches ------------------------------------------------------------ */

/*
 * A batch, and a single write too (write_one), writes its objects to
 * memory (libgit2's mempack, in front of the repository's objects) and
 * from there to a pack: ~7 objects per commit as loose files would cost a
 * file each, where fast-import (the baseline of amp import) writes one
 * pack.  The repository's own odb is put back when the batch ends,
 * whatever happens.
 */

/*
 * The repository's objects, read-only, behind the mempack.  libgit2 asks
 * every backend whether an object exists before it writes one, and on a
 * "no" rescans the pack directory (git_odb_refresh): for a new object,
 * that is every write.  This backend answers "no" at once and has nothing
 * to rescan, so a write costs a hash and a copy; an object written again
 * that the disk had is one duplicate in a pack, which git gc drops.
 */
struct disk_reader {
	git_odb_backend parent;
	git_odb *disk; /* borrowed from the batch */
};

static int copy_out(git_odb_backend *b, git_odb_object *obj, void **data,
		    size_t *len, git_object_t *type)
{
	*len = git_odb_object_size(obj);
	*type = git_odb_object_type(obj);
	if (!(*data = git_odb_backend_data_alloc(b, *len + 1))) {
		git_odb_object_free(obj);
		return -1;
	}
	memcpy(*data, git_odb_object_data(obj), *len);
	git_odb_object_free(obj);
	return 0;
}

static int disk_read(void **data, size_t *len, git_object_t *type, git_odb_backend *b,
		     const git_oid *id)
{
	git_odb_object *obj;
	int rc = git_odb_read(&obj, ((struct disk_reader *)b)->disk, id);

	return rc < 0 ? rc : copy_out(b, obj, data, len, type);
}

static int disk_read_prefix(git_oid *out, void **data, size_t *len, git_object_t *type,
			    git_odb_backend *b, const git_oid *prefix, size_t n)
{
	git_odb_object *obj;
	int rc = git_odb_read_prefix(&obj, ((struct disk_reader *)b)->disk, prefix, n);

	if (rc < 0)
		return rc;
	git_oid_cpy(out, git_odb_object_id(obj));
	return copy_out(b, obj, data, len, type);
}

static int disk_read_header(size_t *len, git_object_t *type, git_odb_backend *b,
			    const git_oid *id)
{
	return git_odb_read_header(len, type, ((struct disk_reader *)b)->disk, id);
}

static int disk_exists(git_odb_backend *b, const git_oid *id)
{
	(void)b;
	(void)id;
	return 0;
}

static void disk_free(git_odb_backend *b)
{
	free(b);
}

/*
 * The mempack, behind a backend that remembers what was written: libgit2
 * 1.5's mempack cannot list its objects, and git_mempack_dump walks the
 * whole tree of every commit, a cost that grows with the SSOT.
 */
struct mem_recorder {
	git_odb_backend parent;
	git_odb_backend *mem; /* the mempack; owned */
	struct recorded {
		git_oid id;
		git_oid base;      /* for a tree: the tree it replaced (zero: none) */
		git_object_t type;
	} *rec;               /* what was written since the last flush */
	size_t n, alloc;
};

static int rec_read(void **data, size_t *len, git_object_t *type, git_odb_backend *b,
		    const git_oid *id)
{
	git_odb_backend *mem = ((struct mem_recorder *)b)->mem;

	return mem->read(data, len, type, mem, id);
}

static int rec_read_header(size_t *len, git_object_t *type, git_odb_backend *b,
			   const git_oid *id)
{
	git_odb_backend *mem = ((struct mem_recorder *)b)->mem;

	return mem->read_header(len, type, mem, id);
}

static int rec_exists(git_odb_backend *b, const git_oid *id)
{
	git_odb_backend *mem = ((struct mem_recorder *)b)->mem;

	return mem->exists(mem, id);
}

static int rec_write(git_odb_backend *b, const git_oid *id, const void *data, size_t len,
		     git_object_t type)
{
	struct mem_recorder *r = (struct mem_recorder *)b;

	if (r->n == r->alloc) {
		size_t alloc = r->alloc ? r->alloc * 2 : 1024;
		struct recorded *bigger = realloc(r->rec, alloc * sizeof(*bigger));

		if (!bigger)
			return -1;
		r->rec = bigger;
		r->alloc = alloc;
	}
	memset(&r->rec[r->n], 0, sizeof(r->rec[r->n]));
	git_oid_cpy(&r->rec[r->n].id, id);
	r->rec[r->n++].type = type;
	return r->mem->write(r->mem, id, data, len, type);
}

static void rec_free(git_odb_backend *b)
{
	struct mem_recorder *r = (struct mem_recorder *)b;

	r->mem->free(r->mem);
	free(r->rec);
	free(r);
}

/* tree_insert wrote `tree` in place of `replaced` (the same path on the
 * parent commit), remembered when the write was new (the last object
 * recorded): the pack stores `replaced` as a delta against `tree` when
 * both are in it (batch_flush). */
static void batch_hint(amp_store *st, const git_oid *tree, const git_tree *replaced)
{
	struct mem_recorder *r = st->batch;

	if (r->n && git_oid_equal(&r->rec[r->n - 1].id, tree))
		git_oid_cpy(&r->rec[r->n - 1].base, git_tree_id(replaced));
}

/* Puts the repository's own odb back. */
static void batch_odb_close(amp_store *st, struct batch_odb *b)
{
	st->batch = NULL;
	share_records(st, 0);
	if (b->disk)
		git_repository_set_odb(st->repo, b->disk);
	git_odb_free(b->disk);
	git_odb_free(b->odb);
	memset(b, 0, sizeof(*b));
}

/*
 * Puts in front of the repository's odb one of the mempack (behind the
 * recorder), which receives the new objects and is asked first, and of a
 * disk reader, which reads the repository's objects and answers "no" to
 * "does it exist?" at once (see struct disk_reader); with `shared`, reads
 * share up to that many records (share_records).  AMP_EIO with the
 * repository's odb in place.
 */
static int batch_odb_open(amp_store *st, struct batch_odb *b, size_t shared, amp_error *err)
{
	struct disk_reader *reader = NULL;

	memset(b, 0, sizeof(*b));
	if (!(b->mem = calloc(1, sizeof(*b->mem))) || git_mempack_new(&b->mem->mem) < 0) {
		free(b->mem);
		b->mem = NULL;
		return amp_error_git(err, AMP_EIO, "cannot open an object database in memory");
	}
	b->mem->parent.version = GIT_ODB_BACKEND_VERSION;
	b->mem->parent.read = rec_read;
	b->mem->parent.read_header = rec_read_header;
	b->mem->parent.exists = rec_exists;
	b->mem->parent.write = rec_write;
	b->mem->parent.free = rec_free;
	if (git_repository_odb(&b->disk, st->repo) < 0 || git_odb_new(&b->odb) < 0 ||
	    git_odb_add_backend(b->odb, &b->mem->parent, 2) < 0) {
		rec_free(&b->mem->parent);
		goto fail;
	}
	if (!(reader = calloc(1, sizeof(*reader))))
		goto fail;
	reader->parent.version = GIT_ODB_BACKEND_VERSION;
	reader->parent.read = disk_read;
	reader->parent.read_prefix = disk_read_prefix;
	reader->parent.read_header = disk_read_header;
	reader->parent.exists = disk_exists;
	reader->parent.free = disk_free;
	reader->disk = b->disk;
	if (git_odb_add_backend(b->odb, &reader->parent, 1) < 0) {
		free(reader);
		goto fail;
	}
	if (git_repository_set_odb(st->repo, b->odb) < 0)
		goto fail;
	st->batch = b->mem;
	if (shared)
		share_records(st, shared);
	return AMP_OK;
fail:
	git_odb_free(b->odb); /* and the recorder, once added to it */
	git_odb_free(b->disk);
	memset(b, 0, sizeof(*b));
	return amp_error_git(err, AMP_EIO, "cannot open an object database in memory");
}

/* A tree and the tree that replaced it at the same path (batch_hint's
 * link, turned around), sorted by the older's id. */
struct successor {
	git_oid older, newer;
};

static int cmp_successor(const void *a, const void *b)
{
	return git_oid_cmp(&((const struct successor *)a)->older,
			   &((const struct successor *)b)->older);
}

/* The tree that replaced `id` in this batch, or NULL. */
static const git_oid *successor_of(const struct successor *s, size_t n, const git_oid *id)
{
	struct successor key;
	const struct successor *hit;

	git_oid_cpy(&key.older, id);
	hit = bsearch(&key, s, n, sizeof(*s), cmp_successor);
	return hit ? &hit->newer : NULL;
}

/*
 * Writes the objects held in memory to one pack of the repository,
 * commits, then trees, then blobs (a reader of the tip's trees then finds
 * them together: the first listing of 12,500 tasks peaked at 74 MB instead
 * of 86 MB), with its index (packwrite.h); then the repository's odb looks
 * at the pack directory again.  An object the odb cannot then find is a
 * pack amp wrote wrong: the batch fails before the ref moves.
 *
 * Trees go newest first, each stored as a delta against the tree that
 * replaced it at the same path when that one is in the pack, as git's
 * pack-objects chooses: the tip's trees are whole and an older version
 * costs the deltas between it and the newest.  The other way round (each
 * tree a delta against the one it replaced), every read of the tip went
 * down a chain of up to AMP_PACKWRITE_DEPTH deltas, each a copy of the
 * whole tree: a send into a task of 1,000 records spent 46M of its 157M
 * instructions there, and amp status (all) 34M of 186M on the shard trees.
 */
static int batch_flush(amp_store *st, struct batch_odb *b, amp_error *err)
{
	static const git_object_t order[3] = { GIT_OBJECT_COMMIT, GIT_OBJECT_TREE,
					       GIT_OBJECT_BLOB };
	struct mem_recorder *r = b->mem;
	git_odb_backend *mem = r->mem;
	amp_packwrite *pw = NULL;
	struct successor *succ = NULL;
	void *data = NULL, *base = NULL;
	char dir[sizeof(st->objects_dir) + 8];
	size_t i, k, len, base_len = 0, nsucc = 0;
	git_object_t type;
	int status, pass;

	snprintf(dir, sizeof(dir), "%s/pack", st->objects_dir);
	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return amp_error_set(err, AMP_EIO, "", "cannot create %s: %s", dir,
				     strerror(errno));
	if ((status = amp_packwrite_new(&pw, r->n, err)) < 0)
		goto cleanup;
	if (r->n && !(succ = malloc(r->n * sizeof(*succ)))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	for (i = 0; i < r->n; i++)
		if (!git_oid_is_zero(&r->rec[i].base)) {
			git_oid_cpy(&succ[nsucc].older, &r->rec[i].base);
			git_oid_cpy(&succ[nsucc++].newer, &r->rec[i].id);
		}
	qsort(succ, nsucc, sizeof(*succ), cmp_successor);
	/* Grouped by type, as git orders a pack: commits, trees, blobs. */
	for (pass = 0; pass < 3; pass++)
		for (k = 0; k < r->n; k++) {
			/* trees newest first: a tree's base comes before it */
			const struct recorded *o = &r->rec[order[pass] == GIT_OBJECT_TREE ?
							   r->n - 1 - k : k];
			const git_oid *newer;
			int delta;

			if (o->type != order[pass])
				continue;
			newer = o->type == GIT_OBJECT_TREE ? successor_of(succ, nsucc, &o->id) : NULL;
			delta = newer && amp_packwrite_can_base(pw, newer);
			if (mem->read(&data, &len, &type, mem, &o->id) < 0 ||
			    (delta && mem->read(&base, &base_len, &type, mem, newer) < 0)) {
				status = amp_error_git(err, AMP_EIO, "cannot read a new object");
				goto cleanup;
			}
			if ((status = amp_packwrite_add(pw, &o->id, o->type, data, len,
							delta ? newer : NULL, base, base_len,
							err)) < 0)
				goto cleanup;
			git_odb_backend_data_free(mem, data);
			data = NULL;
			if (base)
				git_odb_backend_data_free(mem, base);
			base = NULL;
		}
	if ((status = amp_packwrite_store(pw, dir, st->fsync, err)) < 0)
		goto cleanup;
	if (git_odb_refresh(b->disk) < 0 ||
	    (r->n && !git_odb_exists(b->disk, &r->rec[r->n - 1].id))) {
		status = amp_error_git(err, AMP_EIO, "the pack amp wrote in %s cannot be read", dir);
		goto cleanup;
	}
	git_mempack_reset(mem);
	r->n = 0;
cleanup:
	if (data)
		git_odb_backend_data_free(mem, data);
	if (base)
		git_odb_backend_data_free(mem, base);
	free(succ);
	amp_packwrite_free(pw);
	return status;
}

/*
 * The commit of one write (amp send, ack, every command's) and its
 * objects, as one pack with its index, written before the ref moves.  As
 * loose files, the blob, the five trees of its path and the commit were
 * seven file creations and up to seven fan-out directories, each a few
 * hundred microseconds on ext4 (and a fsync each with amp.fsync): measured
 * side by side on 2 cores, a send took 13.7 ms loose and 10.4 ms packed,
 * 22.4 and 14.3 ms with amp.fsync.  The packs add up: amp's maintenance
 * rolls them up past AMP_AUTOPACK_PACKS (pack.h).
 */
static int write_one(amp_store *st, git_commit *parent, git_tree *base,
		     const amp_store_write *w, git_oid *out, amp_error *err)
{
	struct batch_odb b;
	int status;

	/* Never inside a batch (amp import's steps write to it, not through
	 * amp_store_update): this write's objects would reach the disk with
	 * the batch's pack, after this write's ref had moved. */
	if (st->batch)
		return amp_error_set(err, AMP_EIO, "", "a write inside an import's batch");
	if ((status = batch_odb_open(st, &b, 0, err)) < 0)
		return status;
	if ((status = write_commit(st, parent, base, w, out, err)) == AMP_OK)
		status = batch_flush(st, &b, err);
	batch_odb_close(st, &b);
	return status;
}

/* Runs every step on `parent` (the tip), committing in memory; *head is the
 * last commit (a new reference), *n how many were made. */
static int batch_build(amp_store *st, const char *ref, struct batch_odb *b,
		       git_commit *parent, amp_store_step_fn step, void *ctx,
		       git_commit **head, size_t *n, amp_error *err)
{
	amp_store_write w;
	git_commit *cur = NULL;
	git_tree *tree = NULL;
	git_oid next;
	size_t i;
	int status;

	memset(&w, 0, sizeof(w));
	*n = 0;
	if (git_commit_dup(&cur, parent) < 0 || git_commit_tree(&tree, cur) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read %s", ref);
		goto cleanup;
	}
	for (i = 0;; i++) {
		write_reset(&w);
		status = step(st, tree, ctx, i, &w, err);
		if (status == AMP_DONE)
			break;
		if (status == AMP_NOOP)
			continue;
		if (status != AMP_OK ||
		    (status = may_write(st, ref, &w, err)) < 0 ||
		    (status = write_commit(st, cur, tree, &w, &next, err)) < 0)
			goto cleanup;
		git_tree_free(tree);
		git_commit_free(cur);
		tree = NULL;
		if (git_commit_lookup(&cur, st->repo, &next) < 0 ||
		    git_commit_tree(&tree, cur) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot read a new commit");
			goto cleanup;
		}
		if (++*n % AMP_STORE_BATCH_PACK == 0 && (status = batch_flush(st, b, err)) < 0)
			goto cleanup;
	}
	status = *n ? batch_flush(st, b, err) : AMP_OK;
cleanup:
	write_reset(&w);
	git_tree_free(tree);
	if (status == AMP_OK)
		*head = cur;
	else
		git_commit_free(cur);
	return status;
}

/*
 * Holds the writers' flock through the whole batch, as amp_store_update
 * does through one build: amp's senders wait (up to amp.retryTimeout)
 * rather than make the batch start over; a writer outside amp that moves
 * the ref meanwhile does make it start over, on what that writer wrote.
 */
int amp_store_update_batch(amp_store *st, const char *ref, amp_store_step_fn step,
			   void *ctx, git_oid *out, size_t *commits, amp_error *err)
{
	struct batch_odb b = { 0 };
	git_commit *parent = NULL, *head = NULL;
	git_oid tip;
	int64_t deadline = amp_monotonic_ms() + st->retry_timeout_ms;
	unsigned attempt;
	size_t n = 0;
	int rc, status = AMP_OK, fd, held = 0;

	if ((fd = open_writer_lock(st, ref, err)) < 0)
		return AMP_EIO;
	for (attempt = 0;; attempt++) {
		if ((status = take_writer_lock(st, fd, deadline, ref, attempt, err)) < 0)
			goto cleanup;
		held = 1;
		if ((rc = git_reference_name_to_id(&tip, st->repo, ref)) == GIT_ENOTFOUND) {
			status = amp_error_set(err, AMP_EIO, "",
					       "no AMP store in this repository (%s is missing): run 'amp init'",
					       ref);
			goto cleanup;
		}
		if (rc < 0 || git_commit_lookup(&parent, st->repo, &tip) < 0) {
			status = amp_error_git(err, AMP_EIO, "cannot read %s", ref);
			goto cleanup;
		}
		if ((status = batch_odb_open(st, &b, BATCH_SHARED, err)) < 0)
			goto cleanup;
		status = batch_build(st, ref, &b, parent, step, ctx, &head, &n, err);
		batch_odb_close(st, &b);
		if (status < 0 || n == 0)
			goto cleanup;
		rc = move_ref(st, ref, &tip, git_commit_id(head), git_commit_summary(head), err);
		if (rc < 0) {
			status = rc;
			goto cleanup;
		}
		if (rc == 0) {
			if (out)
				git_oid_cpy(out, git_commit_id(head));
			goto cleanup;
		}
		st->retries++;
		n = 0;
		git_commit_free(head);
		git_commit_free(parent);
		head = parent = NULL;
		if (amp_monotonic_ms() > deadline) {
			status = amp_error_set(err, AMP_EIO, "",
					       "%s stayed busy for %.0f s (%u attempts); nothing was written",
					       ref, st->retry_timeout_ms / 1000.0, attempt + 1);
			goto cleanup;
		}
		flock(fd, LOCK_UN);
		held = 0;
		backoff(st, attempt);
	}
cleanup:
	if (commits)
		*commits = status == AMP_OK ? n : 0;
	if (held)
		flock(fd, LOCK_UN);
	close(fd);
	git_commit_free(head);
	git_commit_free(parent);
	/* After the flock, as amp_store_update's.  A batch leaves a pack per
	 * AMP_STORE_BATCH_PACK commits. */
	if (status == AMP_OK && n) {
		sweep_tmp_files(st);
		amp_pack_maybe(st);
	}
	return status;
}

/* ---- init --------------------------------------------------------------- */

struct init_ctx {
	const char *marker;
	const char *subject;
	int strict; /* write where trust starts (sign.h, AMP_STRICT_TRAILER) */
};

static int build_init(amp_store *st, git_tree *tip, void *ctx,
		      amp_store_write *w, amp_error *err)
{
	struct init_ctx *ic = ctx;

	(void)st;
	if (tip && !ic->strict)
		return AMP_NOOP;
	/* Strict mode: the admin's signed marker, on the root when the ref
	 * is new, else on an empty commit above the history it vouches for. */
	if (ic->strict) {
		snprintf(w->author, sizeof(w->author), "admin");
		snprintf(w->trailers, sizeof(w->trailers), "%s\n", AMP_STRICT_TRAILER);
	} else {
		snprintf(w->author, sizeof(w->author), "system");
	}
	snprintf(w->subject, sizeof(w->subject), "%s",
		 tip ? "amp: strict mode on, the history below is the admin's (AMP/1.0)" : ic->subject);
	return tip ? AMP_OK : amp_store_write_add(w, "AMP", ic->marker, strlen(ic->marker), err);
}

/* Strict mode: whether `ref` needs the admin's marker: 2 when it is
 * missing, 1 when it holds none (amp_trust), 0 when not; < 0 an error. */
static int needs_marker(amp_store *st, const char *ref, amp_error *err)
{
	amp_trust trust;
	git_oid tip;
	int rc;

	if (!st->signing.require)
		return 0;
	if ((rc = git_reference_name_to_id(&tip, st->repo, ref)) < 0) {
		if (rc != GIT_ENOTFOUND)
			return amp_error_git(err, AMP_EIO, "cannot read %s", ref);
		git_error_clear();
		return 2;
	}
	amp_trust_init(&trust, &tip);
	rc = amp_trust_found(&trust, st->repo, &st->signing, err);
	amp_trust_free(&trust);
	return rc < 0 ? rc : !rc;
}

int amp_store_init(amp_store *st, int *created, amp_error *err)
{
	struct init_ctx ctx[2] = { { "AMP/1.0 store 1\nmessages\n", "amp: SSOT created (AMP/1.0)", 0 },
				   { "AMP/1.0 store 1\nerrors\n", "amp: error log created (AMP/1.0)", 0 } };
	const char *refs[2] = { st->ref, st->errors_ref };
	int made = 0, rc, i;

	if (ensure_dir(st->state_dir) < 0)
		return amp_error_set(err, AMP_EIO, "", "cannot create %s: %s",
				     st->state_dir, strerror(errno));
	for (i = 0; i < 2; i++)
		if ((ctx[i].strict = needs_marker(st, refs[i], err)) < 0)
			return ctx[i].strict;
	/* Only the admin's key may say where trust starts. */
	if ((ctx[0].strict || ctx[1].strict) &&
	    (rc = amp_signing_may_write(&st->signing, "admin", NULL, NULL, 0, err)) < 0)
		return rc;
	for (i = 0; i < 2; i++) {
		if ((rc = amp_store_update(st, refs[i], build_init, &ctx[i], NULL, err)) < 0)
			return rc;
		if (rc == AMP_OK)
			made |= ctx[i].strict == 2 ? 3 : ctx[i].strict ? 2 : 1;
	}
	if (created)
		*created = made;
	return AMP_OK;
}

/* ---- the error log ------------------------------------------------------ */

struct rejection_ctx {
	const char *raw;
	size_t len;
	char dir[128];
	char *reasons;
	char subject[512];
};

static int build_rejection(amp_store *st, git_tree *tip, void *ctx,
			   amp_store_write *w, amp_error *err)
{
	struct rejection_ctx *rc = ctx;
	git_tree_entry *taken = NULL;
	char dir[192], path[256];
	int status, n;

	(void)st;
	/* One directory per rejection: the same bytes refused twice in one
	 * millisecond (by two commands, say) are two events, kept apart. */
	snprintf(dir, sizeof(dir), "%s", rc->dir);
	for (n = 2; git_tree_entry_bypath(&taken, tip, dir) == 0; n++) {
		git_tree_entry_free(taken);
		taken = NULL;
		snprintf(dir, sizeof(dir), "%s-%d", rc->dir, n);
	}
	git_error_clear();
	snprintf(w->subject, sizeof(w->subject), "%s", rc->subject);
	snprintf(w->author, sizeof(w->author), "system");
	snprintf(path, sizeof(path), "%s/raw", dir);
	if ((status = amp_store_write_add(w, path, rc->raw, rc->len, err)) < 0)
		return status;
	snprintf(path, sizeof(path), "%s/reasons.json", dir);
	return amp_store_write_add(w, path, rc->reasons, strlen(rc->reasons), err);
}


int amp_store_log_rejection(amp_store *st, const char *command,
			    const char *source, const char *raw, size_t len,
			    size_t total, int status,
			    const amp_errlist *reasons, amp_error *err)
{
	/* Past the size limit only a prefix is kept: a refusal must not
	 * cost the repository what acceptance would not have. */
	int cut = len > AMP_LIMIT_MESSAGE_BYTES;
	struct rejection_ctx rc = { raw, cut ? AMP_LIMIT_LOG_RAW_BYTES : len, "", NULL, "" };
	json_t *doc = NULL, *list = NULL, *msg = NULL;
	char when[AMP_TIME_BUFSZ], oid_hex[GIT_OID_HEXSZ + 1];
	amp_error why_not;
	git_oid raw_oid;
	int64_t now_ms;
	size_t i;
	int result;

	/* Strict mode: what amp writes on the errors ref is signed by a key
	 * of amp.allowedSigners valid now (the hook and amp fsck take a
	 * commit there from any principal).  A refusal of a writer without
	 * one (no key, a stranger's, a retired one) is not logged: its
	 * commit would itself fail strict mode, on every clone and at the
	 * hub.  The caller tells the sender, as for a log it cannot write. */
	if (st->signing.require &&
	    amp_signing_may_write(&st->signing, NULL, NULL, NULL, 0, &why_not) < 0)
		return amp_error_set(err, AMP_ERULE, "",
				     "strict mode logs a refusal on %s only signed by a key of %s valid now (%s)",
				     st->errors_ref, st->signing.allowed, why_not.message);
	if ((result = amp_clock_now_ms(&now_ms, err)) < 0)
		return result;
	if (git_odb_hash(&raw_oid, raw, rc.len, GIT_OBJECT_BLOB) < 0)
		return amp_error_git(err, AMP_EIO, "cannot hash the rejected message");
	git_oid_tostr(oid_hex, sizeof(oid_hex), &raw_oid);
	amp_time_format(now_ms, when);
	/* errors/<YYYY>/<MM>/<DD>/<unix_ms>-<blob id>: one directory per
	 * rejection, sharded by day. */
	snprintf(rc.dir, sizeof(rc.dir), "errors/%.4s/%.2s/%.2s/%lld-%.12s",
		 when, when + 5, when + 8, (long long)now_ms, oid_hex);

	list = json_array();
	for (i = 0; reasons && i < reasons->count; i++)
		json_array_append_new(list, json_pack("{s:s,s:s}",
			"path", amp_json_text(reasons->items[i].path),
			"message", amp_json_text(reasons->items[i].message)));
	doc = json_pack("{s:s,s:s,s:s,s:i,s:I,s:o}", "time", when, "command",
			command, "source", amp_json_text(source ? source : ""),
			"exit_code", amp_exit_code(status), "size",
			(json_int_t)(total > len ? total : len), "errors", list);
	list = NULL;
	if (doc && cut) {
		json_object_set_new(doc, "raw_bytes_kept", json_integer((json_int_t)rc.len));
		if (total <= len)
			json_object_set_new(doc, "size_at_least", json_true());
	}
	/* Name what was rejected when the bytes are a JSON object with ids;
	 * only within the bounds, so that the parser never meets a
	 * 100,000-deep input. */
	if (!cut && amp_bounds_check_bytes(raw, len, len, 0, "", NULL) == AMP_OK &&
	    (msg = json_loadb(raw, len, 0, NULL)) && json_is_object(msg)) {
		static const char *const keys[] = { "msg_id", "type", "task_id", "from", "to" };
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			json_t *v = json_object_get(msg, keys[i]);
			if (json_is_string(v))
				json_object_set(doc, keys[i], v);
		}
	}
	if (!doc || !(rc.reasons = amp_json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER))) {
		result = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	snprintf(rc.subject, sizeof(rc.subject), "rejected %.100s from %.100s: %.200s",
		 json_is_string(json_object_get(doc, "msg_id")) ?
			 json_string_value(json_object_get(doc, "msg_id")) : "message",
		 source ? source : "-",
		 reasons && reasons->count ? reasons->items[0].message : "");
	result = amp_store_update(st, st->errors_ref, build_rejection, &rc, NULL, err);
cleanup:
	free(rc.reasons);
	json_decref(msg);
	json_decref(doc);
	json_decref(list);
	return result;
}

/* ---- record times (store.h) ---------------------------------------------- */

struct amp_record_times {
	struct times_slot {
		uint64_t key[2]; /* key[0] 0: an empty slot */
		int64_t ms;
	} *slot;
	size_t nslots, used; /* nslots: a power of two, at most 7/8 used */
};

/*
 * A record's key: the first 128 bits of the SHA-1 of "<task>\0<name>"
 * (key[0] never 0).  The names themselves are not kept: at 200,000 records
 * they were 14.7 MB of the map's 27 MB.  Two records share a key only
 * when their names collide in 128 bits of SHA-1, which names chosen by a
 * hostile agent cannot be made to do (the same trust git puts in SHA-1
 * for the records' own object names).
 */
static void times_key(const char *task, const char *name, uint64_t key[2])
{
	unsigned char digest[20];
	amp_sha1 c;

	amp_sha1_init(&c);
	amp_sha1_update(&c, task, strlen(task) + 1);
	amp_sha1_update(&c, name, strlen(name));
	amp_sha1_final(&c, digest);
	memcpy(key, digest, 16);
	if (!key[0])
		key[0] = 1;
}

/* The slot of `key`, or the empty slot where it would go. */
static struct times_slot *times_slot(const struct times_slot *slot, size_t nslots,
				     const uint64_t key[2])
{
	size_t i;

	for (i = (size_t)key[0] & (nslots - 1); slot[i].key[0]; i = (i + 1) & (nslots - 1))
		if (slot[i].key[0] == key[0] && slot[i].key[1] == key[1])
			break;
	return (struct times_slot *)&slot[i];
}

amp_record_times *amp_record_times_new(void)
{
	amp_record_times *t = calloc(1, sizeof(*t));

	if (t && !(t->slot = calloc(t->nslots = 1024, sizeof(*t->slot)))) {
		free(t);
		t = NULL;
	}
	return t;
}

void amp_record_times_free(amp_record_times *t)
{
	if (!t)
		return;
	free(t->slot);
	free(t);
}

int64_t amp_record_times_get(const amp_record_times *t, const char *task, const char *name)
{
	const struct times_slot *s;
	uint64_t key[2];

	if (!t)
		return -1;
	times_key(task, name, key);
	s = times_slot(t->slot, t->nslots, key);
	return s->key[0] ? s->ms : -1;
}

int amp_record_times_put(amp_record_times *t, const char *task, const char *name, int64_t ms)
{
	struct times_slot *s;
	uint64_t key[2];
	size_t i;

	times_key(task, name, key);
	s = times_slot(t->slot, t->nslots, key);
	if (s->key[0]) {
		if (ms < s->ms)
			s->ms = ms;
		return 0;
	}
	/* 7/8: the keys are SHA-1, spread evenly, so probes stay short;
	 * 200,000 records take 6.3 MB. */
	if ((t->used + 1) * 8 > t->nslots * 7) {
		struct times_slot *bigger = calloc(t->nslots * 2, sizeof(*bigger));

		if (!bigger)
			return -1;
		for (i = 0; i < t->nslots; i++)
			if (t->slot[i].key[0])
				*times_slot(bigger, t->nslots * 2, t->slot[i].key) = t->slot[i];
		free(t->slot);
		t->slot = bigger;
		t->nslots *= 2;
		s = times_slot(t->slot, t->nslots, key);
	}
	s->key[0] = key[0];
	s->key[1] = key[1];
	s->ms = ms;
	t->used++;
	return 0;
}

/* ---- comparing tips ------------------------------------------------------ */

/* Where diff_trees puts what it finds: a JSON object (amp_store_diff_tasks)
 * or a map of record times (amp_store_diff_times, ms >= 0). */
struct touched {
	json_t *json;
	amp_record_times *times;
	int whole; /* amp_store_diff_tasks_whole */
	amp_store *skip; /* not NULL: what is not a task in its place is
			  * skipped and noted there (amp_store_task_in_place) */
};

/* Marks record `name` of `task`: true, or (ms >= 0) the least ms seen for
 * it. */
static void touch(struct touched *to, const char *task, const char *name, int64_t ms)
{
	json_t *files, *cur;

	if (to->times) {
		/* Out of memory: a record without its time counts from its
		 * timestamp (amp_watch_walk_records is best effort). */
		amp_record_times_put(to->times, task, name, ms);
		return;
	}
	if (!json_is_object(files = json_object_get(to->json, task)))
		json_object_set_new(to->json, task, files = json_object());
	cur = json_object_get(files, name);
	if (ms < 0)
		json_object_set_new(files, name, json_true());
	else if (!json_is_integer(cur) || json_integer_value(cur) > ms)
		json_object_set_new(files, name, json_integer(ms));
}

/* amp_store_diff_tasks below `prefix`, `depth` directories down. */
static int diff_trees(git_repository *repo, git_tree *a, git_tree *b,
		      const char *prefix, int depth, struct touched *touched, int64_t ms)
{
	size_t i, n = git_tree_entrycount(b);
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		const git_tree_entry *be = git_tree_entry_byindex(b, i);
		const git_tree_entry *ae = a ? git_tree_entry_byname(a, git_tree_entry_name(be)) : NULL;
		const char *name = git_tree_entry_name(be);
		char path[512];

		if (ae && git_oid_equal(git_tree_entry_id(ae), git_tree_entry_id(be)))
			continue;
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "/" : "", name);
		if (depth == 4) {
			/* tasks/<year>/<shard>/<task>/<record> */
			touch(touched, strrchr(prefix, '/') + 1, name, ms);
			continue;
		}
		if (depth == 3 && touched->skip && !amp_store_task_in_place(touched->skip, prefix + 6, be))
			continue;
		if (git_tree_entry_type(be) != GIT_OBJECT_TREE ||
		    (depth == 0 && strcmp(name, "tasks")))
			continue;
		if (depth == 3 && !ae && touched->whole) {
			/* a task directory a has not: every record is new */
			json_object_set_new(touched->json, name, json_true());
			continue;
		}
		{
			git_tree *sa = NULL, *sb = NULL;

			if (git_tree_lookup(&sb, repo, git_tree_entry_id(be)) < 0 ||
			    (ae && git_tree_entry_type(ae) == GIT_OBJECT_TREE &&
			     git_tree_lookup(&sa, repo, git_tree_entry_id(ae)) < 0)) {
				/* A task directory that cannot be read: the task is
				 * read whole, or found broken (task_broken), alone. */
				git_error_clear();
				if (ms >= 0)
					;
				else if (depth == 3)
					json_object_set_new(touched->json, name, json_null());
				else
					rc = -1;
			} else
				rc = diff_trees(repo, sa, sb, path, depth + 1, touched, ms);
			git_tree_free(sa);
			git_tree_free(sb);
		}
	}
	/* A task whose records vanished (history rewritten) is re-read too. */
	if (a && depth == 3 && rc == 0 && ms < 0) {
		n = git_tree_entrycount(a);
		for (i = 0; i < n; i++) {
			const char *name = git_tree_entry_name(git_tree_entry_byindex(a, i));

			if (!git_tree_entry_byname(b, name) && !json_object_get(touched->json, name))
				json_object_set_new(touched->json, name, json_object());
		}
	}
	return rc;
}

int amp_store_diff_tasks(git_repository *repo, git_tree *a, git_tree *b,
			 json_t *touched, int64_t ms)
{
	struct touched to = { touched, NULL, 0, NULL };

	return diff_trees(repo, a, b, "", 0, &to, ms);
}

int amp_store_diff_tasks_whole(git_repository *repo, amp_store *skip, git_tree *a, git_tree *b,
			       json_t *touched)
{
	struct touched to = { touched, NULL, 1, skip };

	return diff_trees(repo, a, b, "", 0, &to, -1);
}

int amp_store_diff_times(git_repository *repo, git_tree *a, git_tree *b,
			 amp_record_times *times, int64_t ms)
{
	struct touched to = { NULL, times, 0, NULL };

	/* Only ms < 0 writes JSON of its own (null, {}). */
	if (ms < 0 || !times)
		return -1;
	return diff_trees(repo, a, b, "", 0, &to, ms);
}
