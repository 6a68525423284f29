/* amp_error_git lives apart from error.c so that programs which never touch
 * a repository (the driver, amp validate) do not load libgit2 at all. */
#include "error.h"

#include <git2.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int amp_error_git_out_of_memory(void)
{
	const git_error *e = git_error_last();

	return e && (e->klass == GIT_ERROR_NOMEMORY ||
		     (e->klass == GIT_ERROR_ZLIB && e->message &&
		      strstr(e->message, "failed to init zlib")));
}

int amp_error_git(amp_error *err, int status, const char *fmt, ...)
{
	const git_error *gerr = git_error_last();
	size_t used;
	va_list ap;

	if (!err)
		return status;
	err->status = status;
	err->path[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	used = strlen(err->message);
	if (!gerr || !gerr->message || used >= sizeof(err->message))
		return status;
	/* libgit2 reports a zlib stream that could not start as a zlib
	 * error; zlib's inflateInit fails for memory only. */
	snprintf(err->message + used, sizeof(err->message) - used, ": %s%s", gerr->message,
		 gerr->klass == GIT_ERROR_ZLIB && amp_error_git_out_of_memory() ?
		 ": out of memory" : "");
	return status;
}
