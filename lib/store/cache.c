/* cache.c - the build id and the reading of derived files (cache.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build-id.h"
#include "cache.h"
#include "json/json.h"

const char *amp_build_id(void)
{
	return AMP_BUILD_ID;
}

size_t amp_cache_bound(amp_store *st)
{
	/* per objects directory: a process may open more than one store */
	static size_t bound;
	static char of[PATH_MAX];
	char path[PATH_MAX];
	struct dirent *e;
	struct stat sb;
	uint64_t packs = 0;
	size_t n;
	DIR *d;

	if (bound && !strcmp(of, amp_store_objects_dir(st)))
		return bound;
	snprintf(of, sizeof(of), "%s", amp_store_objects_dir(st));
	if (snprintf(path, sizeof(path), "%s/pack", amp_store_objects_dir(st)) < (int)sizeof(path) &&
	    (d = opendir(path))) {
		while ((e = readdir(d)))
			if ((n = strlen(e->d_name)) > 5 && !strcmp(e->d_name + n - 5, ".pack") &&
			    fstatat(dirfd(d), e->d_name, &sb, 0) == 0 && S_ISREG(sb.st_mode))
				packs += (uint64_t)sb.st_size;
		closedir(d);
	}
	if (packs > (SIZE_MAX - AMP_CACHE_FLOOR) / AMP_CACHE_RATIO)
		bound = SIZE_MAX - 1;
	else
		bound = AMP_CACHE_FLOOR + (size_t)packs * AMP_CACHE_RATIO;
	return bound;
}

int amp_cache_read(const char *path, size_t max, char **buf, size_t *len)
{
	struct stat sb;
	char *data = NULL;
	size_t got = 0, size;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC), status = -1;

	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size < 0 ||
	    (uint64_t)sb.st_size > (uint64_t)max || max >= SIZE_MAX)
		goto cleanup;
	size = (size_t)sb.st_size;
	if (!(data = malloc(size + 1)))
		goto cleanup;
	while (got < size && ((r = read(fd, data + got, size - got)) > 0 ||
			      (r < 0 && errno == EINTR)))
		if (r > 0)
			got += (size_t)r;
	if (got != size)
		goto cleanup;
	data[got] = '\0';
	*buf = data;
	*len = got;
	data = NULL;
	status = 0;
cleanup:
	free(data);
	if (fd >= 0)
		close(fd);
	return status;
}

json_t *amp_cache_json(amp_store *st, const char *path)
{
	char *buf;
	size_t len;
	json_t *v;

	if (amp_cache_read(path, amp_cache_bound(st), &buf, &len) < 0)
		return NULL;
	v = amp_json_loadb(buf, len, 0, NULL, NULL);
	free(buf);
	return v;
}
