/* hubgc.c - a hub's `git gc --auto`, run only when it has work (hubgc.h). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "base/proc.h"
#include "base/util.h"
#include "hubgc.h"

/* git config `key` as an integer into *out (def when unset or not one). */
static long long config_int(amp_store *st, const char *key, long long def)
{
	char buf[64];
	long long v;
	amp_error ignored;

	if (!amp_store_config(st, key, buf, sizeof(buf)) ||
	    amp_parse_int(key, buf, -1000000000LL, 1000000000LL, &v, &ignored) < 0)
		return def;
	return v;
}

/* How many entries of directory `dir` end in `suffix` and are `len` bytes
 * long (0: any length), not counting those `keep` says are kept. */
static long long count_names(const char *dir, const char *suffix, size_t len, int keep)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char kept[4096];
	long long n = 0;
	size_t sl = strlen(suffix);

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t nl = strlen(e->d_name);

		if (nl < sl || strcmp(e->d_name + nl - sl, suffix) || (len && nl != len))
			continue;
		if (keep) {
			FILE *f;

			snprintf(kept, sizeof(kept), "%s/%.*s.keep", dir, (int)(nl - sl), e->d_name);
			if ((f = fopen(kept, "r"))) {
				fclose(f);
				continue;
			}
		}
		n++;
	}
	closedir(d);
	return n;
}

int amp_store_hub_gc(amp_store *st, int *ran, amp_error *err)
{
	const char *gitdir = git_repository_path(amp_store_repo(st));
	char buf[16], dir[4096 + 32], arg[4096 + 16], why[512];
	long long gc_auto, pack_limit, loose, packs;
	int code, on;
	const char *argv[] = { "git", arg, "gc", "--auto", "--quiet", NULL };

	*ran = 0;
	if (!amp_store_config(st, "receive.autogc", buf, sizeof(buf)) ||
	    git_config_parse_bool(&on, buf) < 0 || on) {
		git_error_clear();
		return AMP_OK;
	}
	gc_auto = config_int(st, "gc.auto", 6700);
	pack_limit = config_int(st, "gc.autoPackLimit", 50);
	/* A loose object's file name is the 38 hex digits after its first 2. */
	snprintf(dir, sizeof(dir), "%sobjects/17", gitdir);
	loose = gc_auto > 0 ? count_names(dir, "", 38, 0) : 0;
	snprintf(dir, sizeof(dir), "%sobjects/pack", gitdir);
	packs = pack_limit > 0 ? count_names(dir, ".pack", 0, 1) : 0;
	if (!(gc_auto > 0 && loose > (gc_auto + 255) / 256) && !(pack_limit > 0 && packs > pack_limit))
		return AMP_OK;
	snprintf(arg, sizeof(arg), "--git-dir=%s", gitdir);
	if (amp_run_quiet(argv, NULL, 0, NULL, NULL, &code, why, sizeof(why), err) < 0)
		return AMP_EIO;
	if (code != 0)
		return amp_error_set(err, AMP_EIO, "", "git gc --auto failed (exit %d): %s", code, why);
	*ran = 1;
	return AMP_OK;
}

int amp_store_hub_gc_install(amp_store *st, amp_error *err)
{
	git_config *cfg = NULL, *local = NULL;
	int status = AMP_OK;

	if (git_repository_config(&cfg, amp_store_repo(st)) < 0 ||
	    git_config_open_level(&local, cfg, GIT_CONFIG_LEVEL_LOCAL) < 0 ||
	    git_config_set_bool(local, "receive.autogc", 0) < 0)
		status = amp_error_git(err, AMP_EIO, "cannot set git config receive.autogc");
	git_config_free(local);
	git_config_free(cfg);
	return status;
}
