/*
 * sign.c - signed commits and roles bound to keys (sign.h).  The
 * cryptography is ssh-keygen's, or the same done in process for Ed25519
 * keys (sshsig.h, which says why): amp builds the commit buffer, and
 * whatever sshsig.c does not do exactly as ssh-keygen is ssh-keygen's.
 */
#include <errno.h>
#include "base/gitobj.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "record/record.h"
#include "base/proc.h"
#include "sign.h"
#include "sigcache.h"
#include "sshsig.h"
#include "store.h"

int amp_principal_grants(const char *principal, const char *role)
{
	const char *at = strrchr(principal, '@');

	return !strcmp(at ? at + 1 : principal, role);
}

int amp_sign_buffer(const amp_signing *s, const char *ns, const char *data, size_t len,
		    char **sig, size_t *siglen, amp_error *err)
{
	char reason[512];
	int code, status;
	const char *argv[] = { "ssh-keygen", "-q", "-Y", "sign", "-n", ns, "-f", s->key, NULL };

	if ((status = amp_sshsig_sign(s->key, ns, data, len, sig, siglen, err)) != 0)
		return status < 0 ? status : AMP_OK;
	if ((status = amp_run_quiet(argv, data, len, sig, siglen, &code, reason, sizeof(reason),
				    err)) < 0)
		return status;
	if (code != 0 || !*siglen) {
		free(*sig);
		*sig = NULL;
		return amp_error_set(err, AMP_EIO, "",
				     "ssh-keygen could not sign with git config amp.signingKey %s (exit %d: %s)",
				     s->key, code, reason[0] ? reason : "no reason given");
	}
	return AMP_OK;
}

int amp_sign_commit_create(git_repository *repo, const amp_signing *s, git_oid *out,
			   const git_signature *author, const git_signature *committer,
			   const char *encoding, const char *message, const git_tree *tree,
			   size_t nparents, const git_commit **parents, amp_error *err)
{
	git_buf buf = { 0 };
	char *sig = NULL;
	size_t siglen = 0;
	int status = AMP_OK;

	if (!s->key[0]) {
		if (git_commit_create(out, repo, NULL, author, committer, encoding, message, tree,
				      nparents, parents) < 0)
			return amp_error_git(err, AMP_EIO, "cannot write the commit");
		return AMP_OK;
	}
	if (git_commit_create_buffer(&buf, repo, author, committer, encoding, message, tree,
				     nparents, parents) < 0)
		return amp_error_git(err, AMP_EIO, "cannot build the commit");
	if ((status = amp_sign_buffer(s, "git", buf.ptr, buf.size, &sig, &siglen, err)) < 0)
		goto cleanup;
	/* The header value has no final newline (git strips it too). */
	while (siglen && sig[siglen - 1] == '\n')
		sig[--siglen] = '\0';
	if (git_commit_create_with_signature(out, repo, buf.ptr, sig, "gpgsig") < 0)
		status = amp_error_git(err, AMP_EIO, "cannot write the signed commit");
cleanup:
	free(sig);
	git_buf_dispose(&buf);
	return status;
}

static int is_key_type(const char *t)
{
	return !strncmp(t, "ssh-", 4) || !strncmp(t, "ecdsa-", 6) || !strncmp(t, "sk-", 3);
}

/* The public key of s->key as "type base64" into buf: the key file itself
 * when it is a public key, else `ssh-keygen -y -f key`. */
static int public_key(const amp_signing *s, char *buf, size_t bufsz, amp_error *err)
{
	const char *argv[] = { "ssh-keygen", "-y", "-f", s->key, NULL };
	char line[8192], *out = NULL, *sp, reason[512];
	FILE *f;
	int code, status = AMP_OK;

	char pubpath[PATH_MAX + 8];

	if (!(f = fopen(s->key, "r")))
		return amp_error_set(err, AMP_EIO, "", "git config amp.signingKey: cannot read %s: %s",
				     s->key, strerror(errno));
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	/* A private key: its "<key>.pub" beside it, as ssh-keygen writes
	 * it, spares running ssh-keygen -y on every strict write. */
	if (!strncmp(line, "-----BEGIN", 10)) {
		snprintf(pubpath, sizeof(pubpath), "%s.pub", s->key);
		if ((f = fopen(pubpath, "r"))) {
			if (!fgets(line, sizeof(line), f) || !is_key_type(line))
				snprintf(line, sizeof(line), "-----BEGIN");
			fclose(f);
		}
	}
	if (strncmp(line, "-----BEGIN", 10)) {
		snprintf(buf, bufsz, "%s", line);
	} else if (amp_sshsig_public_key(s->key, buf, bufsz)) {
		return AMP_OK;
	} else {
		if ((status = amp_run_quiet(argv, NULL, 0, &out, NULL, &code, reason, sizeof(reason),
					    err)) < 0)
			return status;
		if (code != 0) {
			free(out);
			return amp_error_set(err, AMP_EIO, "",
					     "git config amp.signingKey: ssh-keygen -y cannot read the public key of %s (%s)",
					     s->key, reason[0] ? reason : "no reason given");
		}
		snprintf(buf, bufsz, "%s", out);
		free(out);
	}
	/* "type base64 [comment]" -> "type base64" */
	if ((sp = strchr(buf, ' ')) && (sp = strpbrk(sp + 1, " \n\r")))
		*sp = '\0';
	if (!strchr(buf, ' '))
		return amp_error_set(err, AMP_EIO, "", "git config amp.signingKey: %s holds no SSH key",
				     s->key);
	return AMP_OK;
}

/* Splits line into whitespace-separated tokens, honouring double quotes
 * (the options of an allowed-signers line); at most max. */
static size_t tokens(char *line, char **tok, size_t max)
{
	size_t n = 0;
	char *p = line;

	while (*p && n < max) {
		int quoted = 0;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '\n' || *p == '#')
			break;
		tok[n++] = p;
		while (*p && (quoted || (*p != ' ' && *p != '\t' && *p != '\n'))) {
			if (*p == '"')
				quoted = !quoted;
			p++;
		}
		if (*p)
			*p++ = '\0';
	}
	return n;
}


/* A timestamp of an allowed-signers option (ssh-keygen(1): YYYYMMDD[Z]
 * or YYYYMMDDHHMM[SS][Z], local time unless Z) into *out; -1 when it is
 * not one. */
static int option_time(const char *v, size_t len, time_t *out)
{
	struct tm tm = { 0 };
	char digits[16];
	size_t n = len;
	int utc = n && v[n - 1] == 'Z';

	if (utc)
		n--;
	if ((n != 8 && n != 12 && n != 14) || strspn(v, "0123456789") < n)
		return -1;
	memcpy(digits, v, n);
	digits[n] = '\0';
	if (sscanf(digits, "%4d%2d%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday) != 3)
		return -1;
	if (n >= 12 && sscanf(digits + 8, "%2d%2d", &tm.tm_hour, &tm.tm_min) != 2)
		return -1;
	if (n == 14 && sscanf(digits + 12, "%2d", &tm.tm_sec) != 1)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	tm.tm_isdst = -1;
	*out = utc ? timegm(&tm) : mktime(&tm);
	return *out == (time_t)-1 ? -1 : 0;
}

/*
 * 1 when the options of an allowed-signers line (its tokens between the
 * principals and the key, nopt of them) let the key sign at `now`: its
 * valid-after and valid-before, which ssh-keygen -Y verify checks at the
 * commit's time (amp_signing_verify_commit).  A write is checked at now, so a key
 * retired with valid-before writes nothing after it.  0, with the option
 * that stops it in bound[0..bsz), when not.
 */
static int valid_at(char *const *opt, size_t nopt, time_t now, char *bound, size_t bsz)
{
	size_t i;

	for (i = 0; i < nopt; i++) {
		const char *p = opt[i];

		while (*p) {
			size_t len = 0;
			int quoted = 0, before;
			const char *v;
			time_t t;

			while (p[len] && (quoted || p[len] != ',')) {
				if (p[len] == '"')
					quoted = !quoted;
				len++;
			}
			before = !strncmp(p, "valid-before=", 13);
			if (before || !strncmp(p, "valid-after=", 12)) {
				size_t vlen = len - (before ? 13 : 12);

				v = p + (before ? 13 : 12);
				if (vlen >= 2 && v[0] == '"' && v[vlen - 1] == '"') {
					v++;
					vlen -= 2;
				}
				/* A bound amp cannot read is not a bound it can honour. */
				if (option_time(v, vlen, &t) < 0 || (before ? now > t : now < t)) {
					snprintf(bound, bsz, "%.*s", (int)len, p);
					return 0;
				}
			}
			p += len;
			if (*p == ',')
				p++;
		}
	}
	return 1;
}

/* 1 when principal p names an instance other than `agent` ("alice@executor"
 * for agent "bob"); a bare role names none. */
static int other_instance(const char *p, const char *agent)
{
	const char *at = strrchr(p, '@');

	return agent && *agent && at && ((size_t)(at - p) != strlen(agent) ||
					 strncmp(p, agent, (size_t)(at - p)));
}

int amp_signing_may_write(const amp_signing *s, const char *role, const char *agent,
			  char *principal, size_t psz, amp_error *err)
{
	char pub[8192], line[16384], *tok[16], fp[128] = "", other[256] = "", bound[128] = "";
	FILE *f;
	int status, granted = 0, known = 0;
	int64_t now_ms;

	if (psz)
		principal[0] = '\0';
	if (!role)
		role = "any role"; /* for the reasons below; every principal grants */

	if (!s->key[0])
		return amp_error_set(err, AMP_ERULE, "",
				     "git config amp.requireSigned: a write as %s needs a signing key (git config amp.signingKey)",
				     role);
	if ((status = public_key(s, pub, sizeof(pub), err)) < 0 ||
	    (status = amp_clock_now_ms(&now_ms, err)) < 0)
		return status;
	if (!(f = fopen(s->allowed, "r")))
		return amp_error_set(err, AMP_EIO, "", "git config amp.allowedSigners: cannot read %s: %s",
				     s->allowed, strerror(errno));
	while (!granted && fgets(line, sizeof(line), f)) {
		size_t n = tokens(line, tok, 16), k;
		char key[8192], *p, *save = NULL;

		for (k = 1; k + 1 < n && !is_key_type(tok[k]); k++)
			;
		if (k + 1 >= n)
			continue;
		snprintf(key, sizeof(key), "%s %s", tok[k], tok[k + 1]);
		if (strcmp(key, pub))
			continue;
		known = 1;
		if (!valid_at(tok + 1, k - 1, (time_t)(now_ms / 1000), bound, sizeof(bound)))
			continue;
		if (tok[0][0] == '"') { /* a quoted list of principals */
			tok[0]++;
			if ((p = strrchr(tok[0], '"')))
				*p = '\0';
		}
		for (p = strtok_r(tok[0], ",", &save); p && !granted; p = strtok_r(NULL, ",", &save)) {
			if (strcmp(role, "any role") && !amp_principal_grants(p, role))
				continue;
			if (other_instance(p, agent)) {
				snprintf(other, sizeof(other), "%s", p);
				continue;
			}
			granted = 1;
			if (psz)
				snprintf(principal, psz, "%s", p);
		}
	}
	fclose(f);
	if (granted)
		return AMP_OK;
	if (other[0])
		return amp_error_set(err, AMP_ERULE, "/agent",
				     "agent %s disagrees with the signing key's principal %s (git config amp.signingKey): the key names the instance",
				     agent, other);
	{
		/* The fingerprint names the key without printing it whole. */
		const char *argv[] = { "ssh-keygen", "-l", "-f", s->key, NULL };
		char *out = NULL;
		int code;

		if (amp_run_quiet(argv, NULL, 0, &out, NULL, &code, NULL, 0, err) == AMP_OK &&
		    code == 0 && out) {
			char *t[4];
			if (tokens(out, t, 4) >= 2)
				snprintf(fp, sizeof(fp), "%s", t[1]);
		}
		free(out);
	}
	if (bound[0])
		return amp_error_set(err, AMP_ERULE, "",
				     "the key %s (git config amp.signingKey) may not write now: its line in %s says %s",
				     fp[0] ? fp : s->key, s->allowed, bound);
	return amp_error_set(err, AMP_ERULE, "",
			     known ? "the key %s (git config amp.signingKey) may not write as %s: no principal of it in %s grants that role"
				   : "the key %s (git config amp.signingKey) is not in %s, so it may not write as %s",
			     fp[0] ? fp : s->key, known ? role : s->allowed, known ? s->allowed : role);
}

/* "-Overify-time=YYYYMMDDHHMMSS" for `t` in the local time zone into opt and
 * the readable time into when. */
static int time_opt(time_t t, char *opt, size_t optsz, char *when, size_t whensz)
{
	struct tm tm;

	return localtime_r(&t, &tm) && strftime(opt, optsz, "-Overify-time=%Y%m%d%H%M%S", &tm) &&
	       strftime(when, whensz, "%Y-%m-%d %H:%M:%S", &tm) ? 0 : -1;
}

/*
 * amp_signing_verify_buffer's runs of ssh-keygen, in process (sshsig.h):
 * 1 with the principal when they would accept the signature, 0 when the
 * answer is ssh-keygen's to give (and the reason for a refusal).
 */
static int verify_in_process(const amp_signing *s, const char *ns, const char *sig,
			     size_t siglen, const char *data, size_t len, int64_t when_s,
			     const char *role, const char *hint, char *principal, size_t psz)
{
	char found[1024], *p, *list;
	int rc = 0;

	if (hint && (!role || amp_principal_grants(hint, role))) {
		rc = amp_sshsig_verify(s->allowed, ns, sig, siglen, data, len, when_s, hint);
		if (rc == 1)
			snprintf(principal, psz, "%s", hint);
		if (rc != 0)
			return rc == 1;
	}
	if (amp_sshsig_find_principals(s->allowed, sig, siglen, when_s, found, sizeof(found)) != 1)
		return 0;
	/* as ssh-keygen prints them (a line each, up to an empty one) and
	 * the loop below reads them: the first granting the role is tried */
	for (list = found; (p = strsep(&list, ",")) && *p;) {
		if (role && !amp_principal_grants(p, role))
			continue;
		if (amp_sshsig_verify(s->allowed, ns, sig, siglen, data, len, when_s, p) != 1)
			return 0;
		snprintf(principal, psz, "%s", p);
		return 1;
	}
	return 0;
}

int amp_signing_verify_in_process(const amp_signing *s, const char *ns, const char *sig,
				  size_t siglen, const char *data, size_t len, int64_t when_s,
				  const char *role, const char *hint, char *principal, size_t psz)
{
	principal[0] = '\0';
	return verify_in_process(s, ns, sig, siglen, data, len, when_s, role, hint ? hint : role,
				 principal, psz);
}

int amp_signing_verify_kept(const amp_signing *s, struct amp_sigcache *cache, const char *key,
			    const char *ns, const char *sig, size_t siglen, const char *data,
			    size_t len, int64_t when_s, const char *at, const char *role,
			    const char *hint, char *principal, size_t psz, char *why, size_t whysz,
			    amp_error *err)
{
	const char *cached;
	int status;

	if (amp_signing_verify_in_process(s, ns, sig, siglen, data, len, when_s, role, hint,
					  principal, psz))
		return 1;
	if (cache && (cached = amp_sigcache_get(cache, key))) {
		snprintf(principal, psz, "%s", cached);
		return 1;
	}
	status = amp_signing_verify_buffer(s, ns, sig, siglen, data, len, when_s, at, role, hint,
					   principal, psz, why, whysz, err);
	if (status == 1 && cache)
		amp_sigcache_put(cache, key, principal);
	return status;
}

int amp_signing_verify_buffer(const amp_signing *s, const char *ns, const char *sig,
			      size_t siglen, const char *data, size_t len, int64_t when_s,
			      const char *at, const char *role, const char *hint, char *principal,
			      size_t psz, char *why, size_t whysz, amp_error *err)
{
	char tmpl[] = "/tmp/amp-sig-XXXXXX", *out = NULL, *line, *save = NULL;
	char when_opt[64], when[32], reason[512];
	const char *find[] = { "ssh-keygen", "-Y", "find-principals", "-s", tmpl, "-f", s->allowed,
			       when_opt, NULL };
	int fd = -1, code, status = 0;

	principal[0] = '\0';
	if (time_opt((time_t)when_s, when_opt, sizeof(when_opt), when, sizeof(when)) < 0)
		return amp_error_set(err, AMP_EIO, "", "a signature's time is out of range");
	if (!hint)
		hint = role;
	if ((fd = mkstemp(tmpl)) < 0 || write(fd, sig, siglen) != (ssize_t)siglen ||
	    write(fd, "\n", 1) != 1) {
		status = amp_error_set(err, AMP_EIO, "", "cannot write a temporary file: %s",
				       strerror(errno));
		goto cleanup;
	}
	/* The common case in one run: the key's principal is the role itself
	 * (ssh-keygen -Y verify -I checks that the key is the principal's);
	 * else find its principals, then verify for one that grants it. */
	if (hint && (!role || amp_principal_grants(hint, role))) {
		const char *direct[] = { "ssh-keygen", "-Y", "verify", "-n", ns, "-f", s->allowed,
					 "-I", hint, "-s", tmpl, when_opt, NULL };

		if ((status = amp_run_quiet(direct, data, len, &out, NULL, &code, NULL, 0, err)) < 0)
			goto cleanup;
		free(out);
		out = NULL;
		if (code == 0) {
			snprintf(principal, psz, "%s", hint);
			status = 1;
			goto cleanup;
		}
	}
	/* ssh-keygen's own words ("No principal matched.") are data for
	 * amp's reason, never printed raw. */
	if ((status = amp_run_quiet(find, NULL, 0, &out, NULL, &code, reason, sizeof(reason),
				    err)) < 0)
		goto cleanup;
	if (code != 0) {
		snprintf(why, whysz, "its key is not in %s as valid at %s %s (ssh-keygen: %s)",
			 s->allowed, at, when, reason[0] ? reason : "no principal");
		goto cleanup;
	}
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *verify[] = { "ssh-keygen", "-Y", "verify", "-n", ns, "-f", s->allowed,
					 "-I", line, "-s", tmpl, when_opt, NULL };
		char *vout = NULL;

		if (role && !amp_principal_grants(line, role))
			continue;
		if ((status = amp_run_quiet(verify, data, len, &vout, NULL, &code, reason,
					    sizeof(reason), err)) < 0)
			goto cleanup;
		free(vout);
		if (code == 0) {
			snprintf(principal, psz, "%s", line);
			status = 1;
			goto cleanup;
		}
		snprintf(why, whysz, "its signature does not verify for %s (ssh-keygen: %s)", line,
			 reason[0] ? reason : "no reason given");
		goto cleanup;
	}
	snprintf(why, whysz, "its key may not write as %s (no principal of it grants that role)",
		 role);
cleanup:
	if (fd >= 0) {
		close(fd);
		unlink(tmpl);
	}
	free(out);
	return status;
}

int amp_signing_verify_commit(git_repository *repo, const amp_signing *s, const git_oid *id,
			      const char *role, char *principal, size_t psz, char *why,
			      size_t whysz, amp_error *err)
{
	git_buf sig = { 0 }, data = { 0 };
	git_commit *c = NULL;
	const char *email, *at;
	char hint[32] = "", key[GIT_OID_HEXSZ + 64];
	int64_t when_s;
	int rc, status;

	principal[0] = '\0';
	rc = git_commit_extract_signature(&sig, &data, repo, (git_oid *)id, NULL);
	if (rc == GIT_ENOTFOUND) {
		git_error_clear();
		snprintf(why, whysz, "it is not signed");
		return 0;
	}
	if (rc < 0)
		return amp_error_git(err, AMP_EIO, "cannot read the signature of %s",
				     git_oid_tostr_s(id));
	/* Verified at the commit's committer time, as git's gpg-interface.c
	 * does ("SSH signing key validity has no timezone information - Use
	 * the local timezone"): a key's valid-after and valid-before in the
	 * allowed-signers file are checked against when the commit was
	 * made, so a key retired with valid-before still verifies what it
	 * signed while it was valid, as `git verify-commit` says. */
	if (amp_git_commit_lookup(&c, repo, id) < 0) {
		status = amp_error_git(err, AMP_EIO, "cannot read commit %s", git_oid_tostr_s(id));
		goto cleanup;
	}
	when_s = (int64_t)git_commit_committer(c)->when.time;
	/* Tried first: the role the commit was written as (its author's
	 * email keeps it, "<role>@amp.invalid"). */
	if (!role && (email = git_commit_author(c)->email) && (at = strchr(email, '@')) &&
	    (size_t)(at - email) < sizeof(hint)) {
		snprintf(hint, sizeof(hint), "%.*s", (int)(at - email), email);
		if (!amp_role_in(hint, "admin coordinator executor reviewer system"))
			hint[0] = '\0';
	}
	/* What ssh-keygen verified is kept (sigcache.h): a commit's bytes
	 * are its id, its time among them, so the principal found for it
	 * and a role stays true while the file is the same. */
	snprintf(key, sizeof(key), "%s commit:%.30s 0", git_oid_tostr_s(id), role ? role : "*");
	status = amp_signing_verify_kept(s, s->cache, key, "git", sig.ptr, sig.size, data.ptr,
					 data.size, when_s, "its commit time", role,
					 hint[0] ? hint : NULL, principal, psz, why, whysz, err);
cleanup:
	git_commit_free(c);
	git_buf_dispose(&sig);
	git_buf_dispose(&data);
	return status;
}

/* 1 when the commit adds a record from `role` in `task`. */
static int has_record(const amp_signed_record *recs, size_t n, const char *role, const char *task)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(recs[i].from, role) && !strcmp(recs[i].task, task))
			return 1;
	return 0;
}

/* The instance a named principal ("alice@executor") speaks as, into buf
 * ("" for a role's own principal). */
static void principal_instance(const char *principal, char *buf, size_t bufsz)
{
	const char *at = strrchr(principal, '@');

	snprintf(buf, bufsz, "%.*s", at ? (int)(at - principal) : 0, principal);
}

/* 1 when record i needs the commit's proof: it is not proven by its own
 * signature, nor a system record in the task of one that is. */
static int needs_commit_proof(const amp_signed_record *recs, size_t n, size_t i)
{
	size_t k;

	if (recs[i].proven)
		return 0;
	if (strcmp(recs[i].from, "system"))
		return 1;
	for (k = 0; k < n; k++)
		if (recs[k].proven && !strcmp(recs[k].task, recs[i].task))
			return 0;
	return 1;
}

/* The role a commit was written as: its author's name, or for a named
 * instance the role its email keeps ("<role>@amp.invalid", store.h). */
static const char *commit_role(const git_commit *commit, char *buf, size_t bufsz)
{
	const git_signature *author = git_commit_author(commit);
	const char *role = author->name, *at = author->email ? strchr(author->email, '@') : NULL;

	if (!amp_role_in(role, "admin coordinator executor reviewer system") && at &&
	    (size_t)(at - author->email) < bufsz) {
		snprintf(buf, bufsz, "%.*s", (int)(at - author->email), author->email);
		if (amp_role_in(buf, "admin coordinator executor reviewer system"))
			return buf;
	}
	return role;
}

/* The records needing the commit's proof come from its role, or are
 * system's beside one of its role in their task.  1, or 0 with why. */
static int records_of_role(const amp_signed_record *recs, size_t n, const char *role, char *why,
			   size_t whysz)
{
	size_t i, k;

	if (!amp_role_in(role, "admin coordinator executor reviewer system")) {
		snprintf(why, whysz, "its author '%.100s' is not a role", role);
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (!needs_commit_proof(recs, n, i) || !strcmp(recs[i].from, role))
			continue;
		/* AMP/1.0 §05: an escalation is about its task; the one amp
		 * commits with an act is about the act's. */
		if (!strcmp(recs[i].from, "system") && has_record(recs, n, role, recs[i].task))
			continue;
		for (k = 0; k < n && strcmp(recs[k].from, role); k++)
			;
		if (!strcmp(recs[i].from, "system") && k < n)
			snprintf(why, whysz, "it adds a record from system to task %.40s, but its record from %s is of task %.40s: a system record is committed only beside a record of its own task",
				 recs[i].task, role, recs[k].task);
		else
			snprintf(why, whysz, "it adds a record from %.40s, but it was written as %s",
				 recs[i].from, role);
		return 0;
	}
	return 1;
}

int amp_signing_check_commit(git_repository *repo, const amp_signing *s, const git_commit *commit,
			     const amp_signed_record *recs, size_t n, const char *agent,
			     char *why, size_t whysz, amp_error *err)
{
	char principal[256], reason[400], by_email[32], instance[256];
	const char *role = NULL;
	size_t i, need = 0;
	int ok;

	for (i = 0; i < n; i++)
		need += (size_t)needs_commit_proof(recs, n, i);
	/* Records whose own signatures name their authors: the commit only
	 * says who moved the ref, any key of the file may. */
	if (need) {
		role = commit_role(commit, by_email, sizeof(by_email));
		if (!records_of_role(recs, n, role, why, whysz))
			return 0;
	}
	ok = amp_signing_verify_commit(repo, s, git_commit_id(commit), role, principal,
				       sizeof(principal), reason, sizeof(reason), err);
	if (ok == 0)
		snprintf(why, whysz, "written as %s, but %s", role ? role : "amp", reason);
	if (ok != 1 || !need)
		return ok;
	/* A key of one instance speaks for that instance only, as amp's own
	 * write check (amp_signing_may_write) holds it locally. */
	principal_instance(principal, instance, sizeof(instance));
	if (!instance[0])
		return 1;
	if (agent && *agent && strcmp(agent, instance)) {
		snprintf(why, whysz, "it was written as instance %.64s (Amp-Agent), but its key is %.200s's",
			 agent, principal);
		return 0;
	}
	for (i = 0; i < n; i++)
		if (needs_commit_proof(recs, n, i) && recs[i].agent &&
		    strcmp(recs[i].agent, instance)) {
			snprintf(why, whysz, "it adds a record from %s of instance %.64s, but its key is %.200s's",
				 recs[i].from, recs[i].agent, principal);
			return 0;
		}
	return 1;
}

void amp_trust_init(amp_trust *t, const git_oid *tip)
{
	memset(t, 0, sizeof(*t));
	git_oid_cpy(&t->tip, tip);
}

void amp_trust_free(amp_trust *t)
{
	free(t->below);
	t->below = NULL;
	t->nbelow = 0;
}

/* 1 when the message has the trailer line AMP_STRICT_TRAILER. */
static int has_strict_trailer(const char *msg)
{
	size_t n = strlen(AMP_STRICT_TRAILER);
	const char *p;

	for (p = msg; (p = strstr(p, "\n" AMP_STRICT_TRAILER)); p += n)
		if (p[n + 1] == '\n' || p[n + 1] == '\0')
			return 1;
	return 0;
}

static int oid_order(const void *a, const void *b)
{
	return git_oid_cmp(a, b);
}

int amp_trust_found(amp_trust *t, git_repository *repo, const amp_signing *s, amp_error *err)
{
	amp_first_parents chain;
	git_commit *commit = NULL;
	git_oid *line = NULL, *grown;
	unsigned char *marked = NULL, *more;
	size_t n = 0, alloc = 0, i;
	char principal[256], why[600];
	int rc, status = AMP_OK;

	if (t->looked)
		return t->found;
	/* The first-parent line, newest first, and which commits carry the
	 * trailer: one pass reading commit headers, no trees. */
	amp_first_parents_start(&chain, repo, &t->tip);
	while ((rc = amp_first_parents_next(&chain, &commit)) == 0) {
		if (n == alloc) {
			alloc = alloc ? alloc * 2 : 256;
			if (!(grown = realloc(line, alloc * sizeof(*line)))) {
				status = amp_error_set(err, AMP_EIO, "", "out of memory");
				goto cleanup;
			}
			line = grown;
			if (!(more = realloc(marked, alloc))) {
				status = amp_error_set(err, AMP_EIO, "", "out of memory");
				goto cleanup;
			}
			marked = more;
		}
		git_oid_cpy(&line[n], git_commit_id(commit));
		marked[n++] = (unsigned char)has_strict_trailer(git_commit_message(commit));
		git_commit_free(commit);
		commit = NULL;
	}
	if (rc != GIT_ITEROVER) {
		status = amp_error_git(err, AMP_EIO, "cannot walk the history below %s",
				       git_oid_tostr_s(&t->tip));
		goto cleanup;
	}
	/* The oldest marker the admin's key signed. */
	for (i = n; i-- > 0;) {
		if (!marked[i])
			continue;
		if ((rc = amp_signing_verify_commit(repo, s, &line[i], "admin", principal,
						    sizeof(principal), why, sizeof(why), err)) < 0) {
			status = rc;
			goto cleanup;
		}
		if (rc == 1) {
			t->found = 1;
			git_oid_cpy(&t->start, &line[i]);
			t->nbelow = n - i - 1;
			if (!t->nbelow) /* the marker is the root: nothing below */
				break;
			if (!(t->below = malloc(t->nbelow * sizeof(*t->below)))) {
				status = amp_error_set(err, AMP_EIO, "", "out of memory");
				goto cleanup;
			}
			memcpy(t->below, line + i + 1, t->nbelow * sizeof(*t->below));
			qsort(t->below, t->nbelow, sizeof(*t->below), oid_order);
			break;
		}
	}
	t->looked = 1;
	status = t->found;
cleanup:
	git_commit_free(commit);
	free(line);
	free(marked);
	return status;
}

int amp_trust_vouches(amp_trust *t, git_repository *repo, const amp_signing *s,
		      const git_oid *id, amp_error *err)
{
	int rc = amp_trust_found(t, repo, s, err);

	if (rc <= 0)
		return rc;
	return t->nbelow && bsearch(id, t->below, t->nbelow, sizeof(*t->below), oid_order) != NULL;
}

int amp_signing_add_key(const amp_signing *s, const char *role, const char *agent,
			const char *pubkey, char *fp, size_t fpsz, amp_error *err)
{
	static const char *const roles[] = { "admin", "coordinator", "executor", "reviewer",
					     "system" };
	const char *argv[] = { "ssh-keygen", "-l", "-f", "/dev/stdin", NULL };
	char text[8192], line[16384], want[16384], *out = NULL, *t[4], reason[512];
	size_t k, n;
	FILE *f;
	int code, status;

	fp[0] = '\0';
	for (k = 0; k < sizeof(roles) / sizeof(roles[0]) && strcmp(role, roles[k]); k++)
		;
	if (k == sizeof(roles) / sizeof(roles[0]))
		return amp_error_set(err, AMP_EUSAGE, "<role>", "'%s' is not a role", role);
	if (agent && (!*agent || strlen(agent) > 64 ||
		      strspn(agent, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
			      strlen(agent)))
		return amp_error_set(err, AMP_EUSAGE, "--agent",
				     "'%s' is not an agent name ([A-Za-z0-9._-], 1 to 64)", agent);
	if (!s->allowed[0])
		return amp_error_set(err, AMP_EUSAGE, "",
				     "git config amp.allowedSigners names no file to add the key to");
	/* The key itself, or a file holding it. */
	if (is_key_type(pubkey)) {
		snprintf(text, sizeof(text), "%s", pubkey);
	} else if ((f = fopen(pubkey, "r"))) {
		if (!fgets(text, sizeof(text), f))
			text[0] = '\0';
		fclose(f);
	} else {
		return amp_error_set(err, AMP_EUSAGE, "<pubkey>",
				     "'%s' is neither an SSH public key nor a file holding one", pubkey);
	}
	text[strcspn(text, "\r\n")] = '\0';
	if ((status = amp_run_quiet(argv, text, strlen(text), &out, NULL, &code, reason,
				    sizeof(reason), err)) < 0)
		return status;
	if (code != 0 || tokens(out, t, 4) < 2) {
		free(out);
		return amp_error_set(err, AMP_EUSAGE, "<pubkey>", "ssh-keygen cannot read the key (%s)",
				     reason[0] ? reason : "no reason given");
	}
	snprintf(fp, fpsz, "%s", t[1]);
	free(out);
	n = tokens(text, t, 3);
	if (n < 2 || !is_key_type(t[0]))
		return amp_error_set(err, AMP_EUSAGE, "<pubkey>", "not an SSH public key");
	snprintf(want, sizeof(want), "%s%s%s %s %s%s%s\n", agent ? agent : "", agent ? "@" : "",
		 role, t[0], t[1], n > 2 ? " " : "", n > 2 ? t[2] : "");
	if ((f = fopen(s->allowed, "r"))) {
		while (fgets(line, sizeof(line), f))
			if (!strcmp(line, want)) {
				fclose(f);
				return AMP_NOOP;
			}
		fclose(f);
	}
	if (!(f = fopen(s->allowed, "a")) || fputs(want, f) == EOF || fclose(f) == EOF)
		return amp_error_set(err, AMP_EIO, "", "cannot write %s: %s", s->allowed,
				     strerror(errno));
	return AMP_OK;
}
