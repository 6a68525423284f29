/*
 * sync_ssh.c - one ssh connection for the git runs of amp sync
 * (sync_ssh.h).
 *
 * Why: an amp sync runs git two to four times (fetch, push, the fetch of
 * the join), and each git over ssh is a new TCP connection, key exchange
 * and login, most of a sync's time on a loopback hub.  OpenSSH's
 * ControlMaster keeps the first connection open (ControlPersist) and runs
 * the next sessions over it.
 *
 * Whose ssh: git runs GIT_SSH_COMMAND, else core.sshCommand, else GIT_SSH
 * (a program, no options amp could add), else `ssh`.  amp.sshControl:
 *   auto   (default) only a plain `ssh` (none of the three set) whose
 *          ssh_config for the host (`ssh -G`) does not multiplex already;
 *   true   also the user's GIT_SSH_COMMAND or core.sshCommand, the options
 *          added at its end, unless it names a ControlMaster or ControlPath
 *          itself or its ssh_config multiplexes (`<command> -G`);
 *   false  never.
 * The socket is the clone's own, in .git/amp/ssh/ (mode 0700, owned by
 * the user), named by ssh's %C (a hash of the local host, the remote host,
 * port and user).  A Unix socket's path is at most 104 bytes on the BSDs
 * (108 on Linux), and ssh first binds it with 17 bytes more; when the
 * clone's path is too long, the socket goes to a private runtime
 * directory ($XDG_RUNTIME_DIR, else /tmp: amp-ssh-<uid>, mode 0700) named
 * by a hash of the clone's path and %C.
 * A path with a blank or a quote in it gets no socket (ssh would split it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/hash.h"
#include "base/proc.h"
#include "base/tempfile.h"
#include "base/util.h"
#include "store/store.h"
#include "sync_ssh.h"

/* ControlPersist: how long (s) the master outlives its last session. */
#define AMP_SSH_PERSIST "60"
/* The longest socket path ssh can bind: 104 (the BSDs' sun_path, less
 * its NUL) less the ".XXXXXXXXXXXXXXXX" of ssh's temporary name. */
#define AMP_SSH_SOCK_MAX (103 - 17)
/* What a socket's path may not hold: ssh would split it or unquote it. */
#define AMP_SSH_UNSAFE " \t\"'\\"
/* The length of ssh's %C: a SHA-1 in hex. */
#define AMP_SSH_C_LEN 40

/* The host part of an ssh URL. */
struct ssh_dest {
	char user[128];
	char host[256];
	char port[8];
};

/* 1 when s (n bytes) is made only of the bytes of `set` and is not empty. */
static int only(const char *s, size_t n, const char *set)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strchr(set, s[i]))
			return 0;
	return n > 0;
}

/* "[user@]host[:port]" (n bytes, host maybe in brackets) into d; port_ok:
 * a ":port" may follow (ssh:// URLs; scp-like ones end at the colon). 1
 * when it names a host amp passes to ssh, 0 otherwise. */
static int parse_hostpart(const char *s, size_t n, int port_ok, struct ssh_dest *d)
{
	const char *at = memchr(s, '@', n), *h, *end = s + n, *colon;
	const char *hostset = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:";

	memset(d, 0, sizeof(*d));
	if (at) {
		if (at - s >= (long)sizeof(d->user) ||
		    !only(s, (size_t)(at - s), hostset) || s[0] == '-')
			return 0;
		memcpy(d->user, s, (size_t)(at - s));
		s = at + 1;
	}
	if (s < end && *s == '[') {
		if (!(h = memchr(s, ']', (size_t)(end - s))))
			return 0;
		colon = h + 1 < end && h[1] == ':' ? h + 1 : NULL;
		s++;
	} else {
		colon = port_ok ? memchr(s, ':', (size_t)(end - s)) : NULL;
		h = colon ? colon : end;
	}
	if (colon) {
		if (!only(colon + 1, (size_t)(end - colon - 1), "0123456789") ||
		    end - colon - 1 >= (long)sizeof(d->port))
			return 0;
		memcpy(d->port, colon + 1, (size_t)(end - colon - 1));
	} else if (h < end && *h == ']' && h + 1 != end) {
		return 0;
	}
	if (h - s >= (long)sizeof(d->host) || !only(s, (size_t)(h - s), hostset) || *s == '-')
		return 0;
	memcpy(d->host, s, (size_t)(h - s));
	return 1;
}

/* 1 when git reaches `url` over ssh (its rules, connect.c), with the host
 * in d; 0 for any other transport or a host amp does not pass on. */
static int ssh_url(const char *url, struct ssh_dest *d)
{
	static const char *const schemes[] = { "ssh://", "git+ssh://", "ssh+git://" };
	const char *scheme = strstr(url, "://"), *colon, *slash;
	size_t i;

	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t len = strlen(schemes[i]);

		if (!strncmp(url, schemes[i], len)) {
			url += len;
			slash = strchr(url, '/');
			return parse_hostpart(url, slash ? (size_t)(slash - url) : strlen(url), 1, d);
		}
	}
	if (scheme)
		return 0;
	/* scp-like "[user@]host:path": a colon before any slash, the host
	 * maybe in brackets (then the colon after them). */
	if (url[0] == '[') {
		const char *close = strchr(url, ']');

		colon = close ? strchr(close, ':') : NULL;
	} else {
		colon = strchr(url, ':');
	}
	slash = strchr(url, '/');
	if (!colon || (slash && slash < colon))
		return 0;
	return parse_hostpart(url, (size_t)(colon - url), 0, d);
}

/* 1 when cmd names an ssh option of its own about multiplexing
 * (ControlMaster, ControlPath, in any case, or -S, ssh's short form). */
static int names_control(const char *cmd)
{
	char low[4096];
	size_t i;

	for (i = 0; cmd[i] && i + 1 < sizeof(low); i++)
		low[i] = (char)(cmd[i] >= 'A' && cmd[i] <= 'Z' ? cmd[i] - 'A' + 'a' : cmd[i]);
	low[i] = '\0';
	return strstr(low, "controlmaster") || strstr(low, "controlpath") || strstr(low, " -s ") ||
	       strstr(low, " -m ");
}

/* Appends s to buf (size bufsz), quoted for sh; -1 when it does not fit. */
static int sh_quote(char *buf, size_t bufsz, const char *s)
{
	size_t n = strlen(buf);

	if (n + 1 >= bufsz)
		return -1;
	buf[n++] = '\'';
	for (; *s; s++) {
		if (n + 5 >= bufsz)
			return -1;
		if (*s == '\'') {
			memcpy(buf + n, "'\\''", 4);
			n += 4;
		} else {
			buf[n++] = *s;
		}
	}
	if (n + 2 > bufsz)
		return -1;
	buf[n++] = '\'';
	buf[n] = '\0';
	return 0;
}

/* 1 when the ssh config of `cmd` for d multiplexes already (`<cmd> -G`
 * says a ControlMaster other than "false" or a ControlPath other than
 * "none"), 0 when not, -1 when ssh cannot say (amp then leaves that ssh
 * as it is). */
static int ask_ssh(const char *cmd, const struct ssh_dest *d)
{
	char script[8192], *out = NULL, *line, *save = NULL;
	const char *argv[] = { "sh", "-c", script, NULL };
	int code = 0, theirs = 0, n;
	amp_error err;

	n = snprintf(script, sizeof(script), "%s -G%s%s%s ", cmd, d->port[0] ? " -p " : "", d->port,
		     d->user[0] ? " -l " : "");
	if (n < 0 || (size_t)n >= sizeof(script) ||
	    (d->user[0] && sh_quote(script, sizeof(script), d->user) < 0) ||
	    strlen(script) + 2 >= sizeof(script))
		return -1;
	strcat(script, " ");
	if (sh_quote(script, sizeof(script), d->host) < 0)
		return -1;
	if (amp_run_quiet(argv, NULL, 0, &out, NULL, &code, NULL, 0, &err) < 0 || code != 0) {
		free(out);
		return -1;
	}
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "controlmaster ", 14) && strcmp(line + 14, "false"))
			theirs = 1;
		if (!strncmp(line, "controlpath ", 12) && strcmp(line + 12, "none"))
			theirs = 1;
	}
	free(out);
	return theirs;
}

/* How long ssh's answer for a destination stands (s). */
#define AMP_SSH_G_TTL 600

/* 1 when `path` exists and changed after `when`. */
static int changed_after(const char *path, const struct timespec *when)
{
	struct stat sb;

	return stat(path, &sb) == 0 &&
	       (sb.st_mtim.tv_sec > when->tv_sec ||
		(sb.st_mtim.tv_sec == when->tv_sec && sb.st_mtim.tv_nsec > when->tv_nsec));
}

/*
 * ask_ssh's answer, kept in the clone's state directory (ssh-G-<hash of
 * the command and destination>) for AMP_SSH_G_TTL seconds, unless the
 * user's or the system's ssh_config changed since: `ssh -G` (a shell and
 * an ssh) was ~6.5 ms of CPU in every sync, 10% of a strict inbox sync's
 * own, for an answer that seldom changes.  A config that another file
 * Includes is read again within AMP_SSH_G_TTL.  1 when the user's ssh
 * multiplexes, or cannot say.
 */
static int user_multiplexes(amp_store *st, const char *cmd, const struct ssh_dest *d)
{
	const char *home = getenv("HOME");
	char path[4200], conf[4200], said = 0;
	struct stat sb;
	time_t now = time(NULL);
	uint64_t h = amp_fnv1a_str(AMP_FNV1A_BASIS, cmd);
	amp_tempfile t;
	FILE *f;
	int v;

	h = amp_fnv1a_str(amp_fnv1a(h, "", 1), d->user);
	h = amp_fnv1a_str(amp_fnv1a(h, "", 1), d->host);
	h = amp_fnv1a_str(amp_fnv1a(h, "", 1), d->port);
	snprintf(path, sizeof(path), "%s/ssh-G-%016llx", amp_store_state_dir(st),
		 (unsigned long long)h);
	snprintf(conf, sizeof(conf), "%s/.ssh/config", home ? home : "/nonexistent");
	if (stat(path, &sb) == 0 && sb.st_mtime <= now && now - sb.st_mtime < AMP_SSH_G_TTL &&
	    !changed_after(conf, &sb.st_mtim) && !changed_after("/etc/ssh/ssh_config", &sb.st_mtim) &&
	    !changed_after("/etc/ssh/ssh_config.d", &sb.st_mtim) && (f = fopen(path, "r"))) {
		said = (char)fgetc(f);
		fclose(f);
		if (said == '0' || said == '1')
			return said == '1';
	}
	if ((v = ask_ssh(cmd, d)) < 0)
		return 1;
	/* best effort: without it, the next sync asks again */
	said = v ? '1' : '0';
	if (mkdir(amp_store_state_dir(st), 0777) < 0 && errno != EEXIST)
		return v;
	if (amp_tempfile_open(&t, path, 0) < 0 || amp_tempfile_write(&t, &said, 1) < 0 ||
	    amp_tempfile_commit(&t) < 0)
		amp_tempfile_rollback(&t);
	return v;
}

/* Makes dir (mode 0700) or checks the one there: a directory of this user
 * that nobody else may enter (tightened when it is ours).  0 or -1. */
static int private_dir(const char *dir)
{
	struct stat sb;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -1;
	if (lstat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid())
		return -1;
	if ((sb.st_mode & 077) && chmod(dir, 0700) < 0)
		return -1;
	return 0;
}

/* The ControlPath (with ssh's %C, a literal % doubled) into buf: in the
 * clone's .git/amp/ssh/, or the runtime directory when that is too long.
 * -1 when neither is private or short enough. */
static int control_path(amp_store *st, char *buf, size_t bufsz)
{
	const char *state = amp_store_state_dir(st), *rt = getenv("XDG_RUNTIME_DIR");
	char dir[4200], name[64];
	size_t i, n = 0;

	/* ssh splits an option's value at blanks and reads quotes in it */
	if (strpbrk(state, AMP_SSH_UNSAFE))
		return -1;
	snprintf(dir, sizeof(dir), "%s/ssh", state);
	if (strlen(dir) + 1 + AMP_SSH_C_LEN <= AMP_SSH_SOCK_MAX) {
		if (private_dir(state) < 0 && access(state, W_OK) < 0)
			return -1;
		if (private_dir(dir) < 0)
			return -1;
		snprintf(name, sizeof(name), "%%C");
	} else {
		/* $XDG_RUNTIME_DIR when it is short enough, else /tmp */
		snprintf(dir, sizeof(dir), "%s/amp-ssh-%lu", rt && rt[0] == '/' ? rt : "/tmp",
			 (unsigned long)geteuid());
		if (strlen(dir) + 1 + 17 + AMP_SSH_C_LEN > AMP_SSH_SOCK_MAX)
			snprintf(dir, sizeof(dir), "/tmp/amp-ssh-%lu", (unsigned long)geteuid());
		snprintf(name, sizeof(name), "%016llx-%%C",
			 (unsigned long long)amp_fnv1a_str(AMP_FNV1A_BASIS, state));
		if (strpbrk(dir, AMP_SSH_UNSAFE) || private_dir(dir) < 0)
			return -1;
	}
	for (i = 0; dir[i] && n + 3 < bufsz; i++) {
		if (dir[i] == '%')
			buf[n++] = '%';
		buf[n++] = dir[i];
	}
	if (n + 1 + strlen(name) + 1 > bufsz)
		return -1;
	snprintf(buf + n, bufsz - n, "/%s", name);
	return 0;
}

/* The remote's URL (its url, else `remote` itself: a URL or a path). */
static void remote_url(amp_store *st, const char *remote, char *buf, size_t bufsz)
{
	git_remote *r = NULL;

	if (git_remote_lookup(&r, amp_store_repo(st), remote) == 0 && git_remote_url(r))
		snprintf(buf, bufsz, "%s", git_remote_url(r));
	else
		snprintf(buf, bufsz, "%s", remote);
	git_remote_free(r);
	git_error_clear();
}

int amp_sync_ssh_begin(amp_store *st, const char *remote, struct amp_sync_ssh *s,
		       amp_error *err)
{
	char mode[16] = "auto", cmd[4096], url[4096], path[512], next[8192];
	const char *env = getenv("GIT_SSH_COMMAND");
	struct ssh_dest d;
	int yours = 1;

	memset(s, 0, sizeof(*s));
	if (amp_store_config(st, "amp.sshControl", mode, sizeof(mode)) && strcmp(mode, "auto")) {
		int b;

		if (git_config_parse_bool(&b, mode) < 0) {
			git_error_clear();
			return amp_error_set(err, AMP_EUSAGE, "",
					     "git config amp.sshControl: '%s' is not auto, true or false",
					     amp_term(mode));
		}
		snprintf(mode, sizeof(mode), "%s", b ? "true" : "false");
	}
	if (!strcmp(mode, "false"))
		return AMP_OK;
	if (env && *env)
		snprintf(cmd, sizeof(cmd), "%s", env);
	else if (!amp_store_config(st, "core.sshCommand", cmd, sizeof(cmd)) || !*cmd) {
		const char *program = getenv("GIT_SSH");

		if (program && *program)
			return AMP_OK; /* a program: no options to add */
		snprintf(cmd, sizeof(cmd), "ssh");
		yours = 0;
	}
	if (yours && (strcmp(mode, "true") || names_control(cmd)))
		return AMP_OK;
	remote_url(st, remote, url, sizeof(url));
	if (!ssh_url(url, &d) || user_multiplexes(st, cmd, &d) ||
	    control_path(st, path, sizeof(path)) < 0)
		return AMP_OK;
	snprintf(next, sizeof(next), "%s -o ControlMaster=auto -o ControlPersist=" AMP_SSH_PERSIST
		 " -o ControlPath=", cmd);
	if (sh_quote(next, sizeof(next), path) < 0)
		return AMP_OK;
	if (env && !(s->old = strdup(env)))
		return amp_error_set(err, AMP_EIO, "", "out of memory");
	if (setenv("GIT_SSH_COMMAND", next, 1) < 0) {
		free(s->old);
		s->old = NULL;
		return amp_error_set(err, AMP_EIO, "", "cannot set GIT_SSH_COMMAND");
	}
	s->set = 1;
	return AMP_OK;
}

void amp_sync_ssh_end(struct amp_sync_ssh *s)
{
	if (!s->set)
		return;
	if (s->old)
		setenv("GIT_SSH_COMMAND", s->old, 1);
	else
		unsetenv("GIT_SSH_COMMAND");
	free(s->old);
	s->old = NULL;
	s->set = 0;
}
