/*
 * proc.c - running another program with an argv (proc.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"

extern char **environ;

/* Appends what fd has to read into *buf; 1 at end of file, 0 for more,
 * -1 out of memory. */
static int drain(int fd, char **buf, size_t *len, size_t *cap)
{
	ssize_t got;

	if (*cap - *len < 4096) {
		size_t bigger = *cap ? *cap * 2 : 8192;
		char *more = realloc(*buf, bigger);

		if (!more)
			return -1;
		*buf = more;
		*cap = bigger;
	}
	got = read(fd, *buf + *len, *cap - *len - 1);
	if (got < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (got <= 0)
		return 1;
	*len += (size_t)got;
	return 0;
}

/* What run_fd() watches besides the program's pipes (amp_run_watch). */
struct watch {
	int fd;                    /* -1: nothing */
	int (*on_input)(void *ctx);
	void *ctx;
};

/* amp_run with the program's stderr on errfd (-1: amp's own) and, when
 * `in` is NULL, its stdin from infd (-1: /dev/null); `watch` (or NULL) is
 * watched while it runs (amp_run_watch). */
static int run_fd(const char *const *argv, const char *in, size_t inlen, int infd, char **out,
		  size_t *outlen, int errfd, struct watch *watch, int *code, amp_error *err)
{
	posix_spawn_file_actions_t fa;
	int inpipe[2] = { -1, -1 }, outpipe[2] = { -1, -1 };
	int status = AMP_OK, ws, fa_ready = 0, spawned = 0;
	size_t len = 0, cap = 0, sent = 0;
	char *buf = NULL;
	pid_t pid;

	*code = -1;
	if (out)
		*out = NULL;
	if ((in && pipe(inpipe) < 0) || (out && pipe(outpipe) < 0)) {
		status = amp_error_set(err, AMP_EIO, "", "cannot make a pipe: %s", strerror(errno));
		goto cleanup;
	}
	if (posix_spawn_file_actions_init(&fa) != 0) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	fa_ready = 1;
	if (in) {
		posix_spawn_file_actions_adddup2(&fa, inpipe[0], 0);
		posix_spawn_file_actions_addclose(&fa, inpipe[0]);
		posix_spawn_file_actions_addclose(&fa, inpipe[1]);
	} else if (infd >= 0) {
		posix_spawn_file_actions_adddup2(&fa, infd, 0);
	} else {
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	}
	if (out) {
		posix_spawn_file_actions_adddup2(&fa, outpipe[1], 1);
		posix_spawn_file_actions_addclose(&fa, outpipe[0]);
		posix_spawn_file_actions_addclose(&fa, outpipe[1]);
	} else {
		posix_spawn_file_actions_adddup2(&fa, 2, 1);
	}
	if (errfd >= 0)
		posix_spawn_file_actions_adddup2(&fa, errfd, 2);
	if ((errno = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ)) != 0) {
		status = amp_error_set(err, AMP_EIO, "", "cannot run %s: %s", argv[0],
				       strerror(errno));
		goto cleanup;
	}
	spawned = 1;
	if (in) {
		close(inpipe[0]);
		inpipe[0] = -1;
		fcntl(inpipe[1], F_SETFL, O_NONBLOCK);
		/* A program that does not read its input must not hang us. */
		signal(SIGPIPE, SIG_IGN);
	}
	if (out) {
		close(outpipe[1]);
		outpipe[1] = -1;
	}
	/* Feed stdin and drain stdout together: either may fill its pipe. */
	while ((in && inpipe[1] >= 0) || (out && outpipe[0] >= 0)) {
		struct pollfd fds[3];
		nfds_t n = 0;
		int w = -1, r = -1, x = -1;

		if (in && inpipe[1] >= 0) {
			fds[n].fd = inpipe[1];
			fds[n].events = POLLOUT;
			w = (int)n++;
		}
		if (out && outpipe[0] >= 0) {
			fds[n].fd = outpipe[0];
			fds[n].events = POLLIN;
			r = (int)n++;
		}
		if (watch && watch->fd >= 0) {
			fds[n].fd = watch->fd;
			fds[n].events = POLLIN;
			x = (int)n++;
		}
		if (poll(fds, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (x >= 0 && fds[x].revents) {
			int stop = watch->on_input(watch->ctx);

			/* Asked to stop: the program's output still drains to
			 * its end, which its exit brings. */
			if (stop > 0)
				kill(pid, SIGTERM);
			if (stop)
				watch->fd = -1;
		}
		if (w >= 0 && fds[w].revents) {
			ssize_t put = sent < inlen ? write(inpipe[1], in + sent, inlen - sent) : 0;

			if (put > 0)
				sent += (size_t)put;
			if (sent >= inlen || (put < 0 && errno != EAGAIN && errno != EINTR)) {
				close(inpipe[1]);
				inpipe[1] = -1;
			}
		}
		if (r >= 0 && fds[r].revents) {
			int done = drain(outpipe[0], &buf, &len, &cap);

			if (done < 0 && status == AMP_OK)
				status = amp_error_set(err, AMP_EIO, "", "out of memory");
			if (done) {
				close(outpipe[0]);
				outpipe[0] = -1;
			}
		}
	}
	if (out && status == AMP_OK) {
		if (!buf && !(buf = malloc(1))) {
			status = amp_error_set(err, AMP_EIO, "", "out of memory");
		} else {
			buf[len] = '\0';
			*out = buf;
			if (outlen)
				*outlen = len;
			buf = NULL;
		}
	}
cleanup:
	if (spawned) {
		while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
			;
		*code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	}
	if (fa_ready)
		posix_spawn_file_actions_destroy(&fa);
	if (inpipe[0] >= 0)
		close(inpipe[0]);
	if (inpipe[1] >= 0)
		close(inpipe[1]);
	if (outpipe[0] >= 0)
		close(outpipe[0]);
	if (outpipe[1] >= 0)
		close(outpipe[1]);
	free(buf);
	return status;
}

static int run(const char *const *argv, const char *in, size_t inlen, char **out,
	       size_t *outlen, int errfd, int *code, amp_error *err)
{
	return run_fd(argv, in, inlen, -1, out, outlen, errfd, NULL, code, err);
}

int amp_run_stdin_fd(const char *const *argv, int infd, char **out, size_t *outlen, int *code,
		     amp_error *err)
{
	return run_fd(argv, NULL, 0, infd, out, outlen, -1, NULL, code, err);
}

int amp_run(const char *const *argv, const char *in, size_t inlen, char **out,
	    size_t *outlen, int *code, amp_error *err)
{
	return run(argv, in, inlen, out, outlen, -1, code, err);
}

int amp_run_errfd(const char *const *argv, const char *in, size_t inlen, char **out,
		  size_t *outlen, int errfd, int *code, amp_error *err)
{
	return run(argv, in, inlen, out, outlen, errfd, code, err);
}

int amp_run_watch(const char *const *argv, const char *in, size_t inlen, char **out,
		  size_t *outlen, int errfd, int watch, int (*on_input)(void *ctx), void *ctx,
		  int *code, amp_error *err)
{
	struct watch w = { watch, on_input, ctx };

	return run_fd(argv, in, inlen, -1, out, outlen, errfd, &w, code, err);
}

int amp_run_quiet(const char *const *argv, const char *in, size_t inlen, char **out,
		  size_t *outlen, int *code, char *errbuf, size_t errsz, amp_error *err)
{
	FILE *f = tmpfile();
	size_t got = 0, i;
	int status;

	if (errsz)
		errbuf[0] = '\0';
	if (!f)
		return amp_error_set(err, AMP_EIO, "", "cannot make a temporary file: %s",
				     strerror(errno));
	status = run(argv, in, inlen, out, outlen, fileno(f), code, err);
	if (status == AMP_OK && errsz && fseek(f, 0, SEEK_SET) == 0)
		got = fread(errbuf, 1, errsz - 1, f);
	fclose(f);
	if (!errsz)
		return status;
	/* One line of printable text: the program's words are data. */
	while (got && (errbuf[got - 1] == '\n' || errbuf[got - 1] == '\r' || errbuf[got - 1] == ' '))
		got--;
	errbuf[got] = '\0';
	/* Lines joined by "; " (the last of them cut when that overflows). */
	for (i = 0; i < got; i++) {
		if (errbuf[i] == '\n' && got + 1 < errsz) {
			memmove(errbuf + i + 2, errbuf + i + 1, got - i);
			errbuf[i++] = ';';
			errbuf[i] = ' ';
			got++;
		} else if ((unsigned char)errbuf[i] < 0x20 || errbuf[i] == 0x7f) {
			errbuf[i] = ' ';
		}
	}
	return status;
}

void amp_null_stdio(void)
{
	int null = open("/dev/null", O_RDWR);

	if (null < 0)
		return;
	dup2(null, 0);
	dup2(null, 1);
	dup2(null, 2);
	if (null > 2)
		close(null);
}
