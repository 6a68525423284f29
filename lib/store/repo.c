/*
 * repo.c - the store handle (store.h): the repository opened, its git
 * config read and checked once (the refs, the policy, signing, fsync), and
 * the accessors every other file of store/ reads it through.
 */
#include "store_int.h"
#include <git2/sys/odb_backend.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/util.h"

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

	const char *key = getenv("AMP_SIGNING_KEY");

	/* AMP_SIGNING_KEY (an absolute path) before the config: amp mcp
	 * --signing-key hands its key to the commands it runs this way. */
	if (key && *key && snprintf(s->key, sizeof(s->key), "%s", key) >= (int)sizeof(s->key))
		return amp_error_set(err, AMP_EUSAGE, "", "AMP_SIGNING_KEY: the path is too long");
	if ((!key || !*key) &&
	    (status = config_path(st, "amp.signingKey", s->key, sizeof(s->key), err)) < 0)
		return status;
	if ((status = config_path(st, "amp.allowedSigners", s->allowed, sizeof(s->allowed),
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

/* git config amp.fsync (default true), for the whole process
 * (amp_store_git_fsync says why). */
static int load_fsync(amp_store *st, amp_error *err)
{
	int on, status;

	if ((status = amp_store_config_bool(st, "amp.fsync", 1, &on, err)) < 0 ||
	    (status = amp_store_git_fsync(on, err)) < 0)
		return status;
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

	if (git_libgit2_init() < 0)
		return amp_error_git(err, AMP_EIO, "cannot start libgit2");
	if ((status = amp_store_git_options(err)) < 0)
		return status;
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
	amp_sigcache_init(&st->sigcache, st->state_dir, st->signing.allowed);
	st->signing.cache = &st->sigcache;
	st->rng = (unsigned int)getpid() ^ (unsigned int)time(NULL);
	*out = st;
	st = NULL;
cleanup:
	amp_store_free(st);
	return status;
}

void amp_store_free(amp_store *st)
{
	if (!st)
		return;
	amp_store_docs_share(st, 0);
	amp_errlist_free(&st->skipped);
	amp_sigcache_free(&st->sigcache);
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
void amp_store_tree_counts(const amp_store *st, unsigned long *read, unsigned long *cached)
{
	*read = st->trees_read;
	*cached = st->trees_cached;
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
