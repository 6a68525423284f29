/*
 * proc.h - running another program (git, ssh-keygen) with an argv, never
 * a shell: its stdin fed from a buffer, its stdout captured.
 */
#ifndef AMP_PROC_H
#define AMP_PROC_H

#include <stddef.h>

#include "error.h"

/*
 * Runs argv[0] (found on PATH) with argv, stdin the `inlen` bytes of `in`
 * (NULL: /dev/null), stderr passed through (the program's own reasons
 * reach the user), and stdout captured into *out (malloc'd, NUL-terminated,
 * its length in *outlen when not NULL; the caller frees) when out is not
 * NULL, else sent to stderr so that amp's stdout stays its result alone.
 * *code is the exit status (128 + signal when killed).  Returns AMP_OK
 * when the program ran, AMP_EIO when it could not be started.
 */
int amp_run(const char *const *argv, const char *in, size_t inlen, char **out,
	    size_t *outlen, int *code, amp_error *err);

/* amp_run with the program's stdin read from the file descriptor infd
 * (a list too long to hold in memory, spooled to a temporary file; the
 * program reads from the descriptor's offset on; the caller closes it). */
int amp_run_stdin_fd(const char *const *argv, int infd, char **out, size_t *outlen, int *code,
		     amp_error *err);
/* amp_run with the program's stderr written to file descriptor errfd (the
 * caller reads it back, and shows it, when the program is done). */
int amp_run_errfd(const char *const *argv, const char *in, size_t inlen, char **out,
		  size_t *outlen, int errfd, int *code, amp_error *err);

/*
 * amp_run_errfd that also watches file descriptor `watch` while the
 * program runs: when it has input, on_input(ctx) is called, and the
 * program is ended (SIGTERM) when it returns 1, and `watch` no longer
 * watched when it returns 1 or -1 (its end of file).  *code is then
 * 128 + 15.
 */
int amp_run_watch(const char *const *argv, const char *in, size_t inlen, char **out,
		  size_t *outlen, int errfd, int watch, int (*on_input)(void *ctx), void *ctx,
		  int *code, amp_error *err);

/*
 * amp_run with the program's stderr captured, not shown: its first errsz-1
 * bytes into errbuf as one line (newlines as "; ", other control characters
 * as spaces, trailing blanks cut), for amp to report in its own error.
 */
int amp_run_quiet(const char *const *argv, const char *in, size_t inlen, char **out,
		  size_t *outlen, int *code, char *errbuf, size_t errsz, amp_error *err);

/* A detached process's stdin, stdout and stderr on /dev/null (after its
 * setsid()): nobody waits for what it says. */
void amp_null_stdio(void);

#endif
