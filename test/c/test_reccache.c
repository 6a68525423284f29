/* Unit tests of the record cache's decoding arena (reccache.h,
 * amp_reccache_arena): records decoded in it, and past its bound (from
 * malloc again), read back as they were saved, and stay intact while
 * others are decoded and freed around them. */
#include <git2.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "tap.h"

#define RECORDS 64
/* 64 records of ~2.2 KB, 100 times: ~14 MB, past the arena's 8 MiB. */
#define ROUNDS 100

int main(void)
{
	char dir[] = "/tmp/amp-test-reccache-XXXXXX", text[2049];
	amp_entry entries[RECORDS];
	git_oid ids[RECORDS];
	json_t *first[RECORDS] = { NULL }, *last[RECORDS] = { NULL }, *d;
	amp_reccache *c = NULL;
	int made = mkdtemp(dir) != NULL, same = 1, kept = 1, round, i;

	memset(entries, 0, sizeof(entries));
	for (i = 0; i < RECORDS; i++) {
		memset(text, 'a' + i % 26, sizeof(text) - 1);
		text[sizeof(text) - 1] = '\0';
		entries[i].doc = json_pack("{s:i, s:s, s:[i, b, n, f], s:{s:s}}", "n", i, "text", text,
					   "list", i, 1, 2.5, "obj", "key", "value");
		memset(&ids[i], 0, sizeof(ids[i]));
		ids[i].id[0] = (unsigned char)(i + 1);
		ids[i].id[19] = 0xa5;
	}
	if (!made || amp_reccache_save(dir, "T-2026-001", NULL, ids, entries, RECORDS) < 0 ||
	    !(c = amp_reccache_load(dir, "T-2026-001"))) {
		ok(0, "a record cache of 64 records");
		goto cleanup;
	}
	amp_reccache_arena();
	for (round = 0; round < ROUNDS; round++)
		for (i = 0; i < RECORDS; i++) {
			d = amp_reccache_get(c, &ids[i]);
			same &= d && json_equal(d, entries[i].doc);
			if (round == 0)
				first[i] = d;
			else if (round == ROUNDS - 1)
				last[i] = d;
			else
				json_decref(d);
		}
	ok(same, "6,400 records decoded in the arena and past its bound read back as saved");
	for (i = 0; i < RECORDS; i++)
		kept &= first[i] && last[i] && json_equal(first[i], entries[i].doc) &&
			json_equal(last[i], entries[i].doc);
	ok(kept, "records kept from the first and last rounds are intact after the others were freed");
	/* a value added to a decoded record comes from malloc, and goes */
	ok(first[0] && json_object_set_new(first[0], "added", json_string(text)) == 0 &&
	   json_object_del(first[0], "added") == 0 && json_equal(first[0], entries[0].doc),
	   "a decoded record takes and drops a member");
cleanup:
	for (i = 0; i < RECORDS; i++) {
		json_decref(first[i]);
		json_decref(last[i]);
		json_decref(entries[i].doc);
	}
	amp_reccache_free(c);
	if (made)
		tap_remove_dir(dir);
	return tap_done();
}
