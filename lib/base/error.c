#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy_path(char *dst, const char *path)
{
	snprintf(dst, AMP_PATH_MAX, "%s", path ? path : "");
}

int amp_error_set(amp_error *err, int status, const char *path,
		  const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return status;
	err->status = status;
	copy_path(err->path, path);
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return status;
}

void amp_error_clear(amp_error *err)
{
	if (!err)
		return;
	err->status = AMP_OK;
	err->path[0] = '\0';
	err->message[0] = '\0';
}

int amp_exit_code(int status)
{
	if (status >= 0)
		return 0;
	if (status == AMP_ECLAIMED)
		return 6;
	if (status < AMP_EIO)
		return 4;
	return -status;
}

static int grow(amp_errlist *list)
{
	size_t alloc;
	amp_error *items;

	if (list->count < list->alloc)
		return 0;
	alloc = list->alloc ? list->alloc * 2 : 8;
	items = realloc(list->items, alloc * sizeof(*items));
	if (!items)
		return -1;
	list->items = items;
	list->alloc = alloc;
	return 0;
}

int amp_errlist_add(amp_errlist *list, int status, const char *path,
		    const char *fmt, ...)
{
	amp_error *e;
	va_list ap;

	if (grow(list) < 0)
		return AMP_EIO;
	e = &list->items[list->count++];
	e->status = status;
	copy_path(e->path, path);
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return status;
}

int amp_errlist_extend(amp_errlist *dst, const amp_errlist *src)
{
	size_t i;

	for (i = 0; i < src->count; i++) {
		if (grow(dst) < 0)
			return AMP_EIO;
		dst->items[dst->count++] = src->items[i];
	}
	return AMP_OK;
}

void amp_errlist_truncate(amp_errlist *list, size_t count)
{
	if (count < list->count)
		list->count = count;
}

void amp_errlist_free(amp_errlist *list)
{
	free(list->items);
	list->items = NULL;
	list->count = list->alloc = 0;
}
