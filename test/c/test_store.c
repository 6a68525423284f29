/* Unit tests for the pure parts of the store, clock and message modules,
 * and for the store's compare-and-swap against a writer outside amp. */
#include <git2.h>
#include <git2/sys/odb_backend.h>
#include <git2/sys/transport.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <nettle/sha1.h>

#include "base/clock.h"
#include "record/record.h"
#include "store/store.h"
#include "tap.h"

/* A build callback that, the first time, lets a writer outside amp (a
 * `git update-ref`, a fetch) move the ref between amp's read of the tip and
 * its compare-and-swap. */
struct outsider {
	int calls;
	git_oid outside;
};

static int build_raced(amp_store *st, git_tree *tip, void *ctx,
		       amp_store_write *w, amp_error *err)
{
	struct outsider *o = ctx;
	git_repository *repo = amp_store_repo(st);
	const char *ref = amp_store_messages_ref(st);
	git_signature *sig = NULL;
	git_commit *head = NULL;
	git_oid head_id;

	(void)tip;
	if (o->calls++ == 0) {
		if (git_reference_name_to_id(&head_id, repo, ref) < 0 ||
		    git_commit_lookup(&head, repo, &head_id) < 0 ||
		    git_signature_new(&sig, "outsider", "outsider@invalid", 1772116327, 0) < 0 ||
		    git_commit_create_v(&o->outside, repo, ref, sig, sig, NULL, "outside amp",
					tip, 1, head) < 0) {
			git_signature_free(sig);
			git_commit_free(head);
			return amp_error_set(err, AMP_EIO, "", "outsider failed");
		}
		git_signature_free(sig);
		git_commit_free(head);
	}
	snprintf(w->subject, sizeof(w->subject), "amp's write");
	snprintf(w->author, sizeof(w->author), "system");
	return amp_store_write_add(w, "raced/file", "x", 1, err);
}

/* share/doc/storage.md "Writes take turns, and are a compare-and-swap": "a writer outside
 * amp (git fetch, git update-ref) can still never be overwritten: amp
 * rebuilds on what it wrote and tries again". */
static void test_outside_writer(void)
{
	char dir[] = "/tmp/amp-test-store-XXXXXX";
	git_repository *repo = NULL;
	git_commit *mine = NULL;
	amp_store *st = NULL;
	struct outsider o = { 0, { { 0 } } };
	amp_error err;
	git_oid out;
	int made = mkdtemp(dir) != NULL, rc;

	if (!made || git_repository_init(&repo, dir, 1) < 0 ||
	    amp_store_open(&st, dir, &err) < 0 || amp_store_init(st, NULL, &err) < 0) {
		ok(0, "a store for the compare-and-swap test");
		goto cleanup;
	}
	rc = amp_store_update(st, amp_store_messages_ref(st), build_raced, &o, &out, &err);
	ok(rc == 0 && o.calls == 2 && amp_store_retries(st) == 1,
	   "a ref moved outside amp fails the compare-and-swap, and amp rebuilds once");
	ok(rc == 0 && git_commit_lookup(&mine, amp_store_repo(st), &out) == 0 &&
	   git_commit_parentcount(mine) == 1 &&
	   git_oid_equal(git_commit_parent_id(mine, 0), &o.outside),
	   "amp's commit sits on the outside writer's: nothing is overwritten");
cleanup:
	git_commit_free(mine);
	amp_store_free(st);
	git_repository_free(repo);
	if (made)
		tap_remove_dir(dir);
}

/* Resident KiB of this process's mappings of pack indexes, from
 * /proc/self/smaps; -1 when none is mapped. */
static long index_resident_kib(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[4200];
	long total = -1, kib;
	int in_idx = 0;
	size_t len;

	while (f && fgets(line, sizeof(line), f)) {
		len = strlen(line);
		if (strchr(line, '-') && strchr(line, ' ') && (size_t)(strchr(line, ' ') - line) < 40 &&
		    strchr(line, '-') < strchr(line, ' '))
			in_idx = len > 5 && !strcmp(line + len - 5, ".idx\n");
		else if (in_idx && sscanf(line, "Rss: %ld kB", &kib) == 1)
			total = (total < 0 ? 0 : total) + kib;
	}
	if (f)
		fclose(f);
	return total;
}

/* amp_store_trim_indexes: a pack index libgit2 mapped leaves the resident
 * set, and objects are read from it as before. */
static void test_trim_indexes(void)
{
	char dir[] = "/tmp/amp-test-trim-XXXXXX", cmd[200];
	git_repository *repo = NULL;
	git_commit *tip = NULL;
	amp_store *st = NULL;
	amp_error err;
	git_oid id, other;
	int made = mkdtemp(dir) != NULL;

	snprintf(cmd, sizeof(cmd), "git -C '%s' repack -adq", dir);
	if (!made || git_repository_init(&repo, dir, 1) < 0 ||
	    amp_store_open(&st, dir, &err) < 0 || amp_store_init(st, NULL, &err) < 0 ||
	    git_reference_name_to_id(&id, repo, amp_store_messages_ref(st)) < 0 ||
	    git_reference_name_to_id(&other, repo, amp_store_errors_ref(st)) < 0 ||
	    system(cmd) != 0) {
		ok(0, "a packed store for the trim test");
		goto cleanup;
	}
	/* a new handle reads the pack */
	git_repository_free(repo);
	repo = NULL;
	if (git_repository_open(&repo, dir) < 0 || git_commit_lookup(&tip, repo, &id) < 0) {
		ok(0, "the packed tip");
		goto cleanup;
	}
	git_commit_free(tip);
	tip = NULL;
	ok(index_resident_kib() > 0, "trim: reading an object maps the pack's index");
	ok(amp_store_trim_indexes() >= 1 && index_resident_kib() == 0,
	   "trim: the index is mapped still, none of it resident");
	ok(git_commit_lookup(&tip, repo, &other) == 0 && index_resident_kib() > 0,
	   "trim: the next read (another commit) maps it back from the page cache");
	ok(!amp_store_should_trim((size_t)57 << 20, 0) && amp_store_should_trim((size_t)59 << 20, 0),
	   "trim: from 58 MB on");
	ok(!amp_store_should_trim((size_t)60 << 20, (size_t)53 << 20) &&
	   amp_store_should_trim((size_t)62 << 20, (size_t)53 << 20),
	   "trim: after a trim, once grown by 8 MB");
	ok(amp_store_should_trim((size_t)63 << 20, (size_t)56 << 20),
	   "trim: past 62 MB when a trim frees 2 MB or more, however little it grew");
	ok(!amp_store_should_trim((size_t)63 << 20, (size_t)61 << 20) &&
	   amp_store_should_trim((size_t)70 << 20, (size_t)61 << 20),
	   "trim: a command whose own memory is at the ceiling trims once grown by 8 MB only");
cleanup:
	git_commit_free(tip);
	amp_store_free(st);
	git_repository_free(repo);
	if (made)
		tap_remove_dir(dir);
}

/* A backend that, the first time the odb reads the pack directory again
 * (git_odb_refresh, after the pack backend read it), does what a roll-up
 * does: puts a pack holding the object in place and deletes the pack that
 * held it, which the pack backend has just listed. */
struct roller {
	git_odb_backend parent;
	const char *dir;
	char old[41];
	int done;
};

static int roller_refresh(git_odb_backend *b)
{
	struct roller *r = (struct roller *)b;
	char cmd[512];

	if (r->done++)
		return 0;
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && { printf 'moved\\n' | git hash-object -w --stdin;"
		 " printf 'beside it\\n' | git hash-object -w --stdin; } |"
		 " git pack-objects -q objects/pack/pack > /dev/null && git prune-packed &&"
		 " rm objects/pack/pack-%s.idx objects/pack/pack-%s.pack", r->dir, r->old, r->old);
	return system(cmd) == 0 ? 0 : -1;
}

static void roller_free(git_odb_backend *b)
{
	(void)b;
}

/* A read racing a roll-up: the object's pack, listed by libgit2 when it
 * read the directory again after a miss, is deleted before it is opened,
 * and the pack that replaced it was not there when the directory was read.
 * libgit2 alone reads the directory once per lookup and fails. */
static void test_moved_pack(void)
{
	char dir[] = "/tmp/amp-test-moved-XXXXXX", cmd[256];
	struct roller roller = { 0 };
	amp_store *st = NULL;
	git_odb *odb = NULL;
	git_odb_object *obj = NULL;
	git_repository *repo = NULL;
	amp_error err;
	git_oid moved;
	FILE *p = NULL;
	int made = mkdtemp(dir) != NULL;

	git_odb_hash(&moved, "moved\n", 6, GIT_OBJECT_BLOB);
	if (!made || git_repository_init(&repo, dir, 1) < 0 ||
	    amp_store_open(&st, dir, &err) < 0 || amp_store_init(st, NULL, &err) < 0 ||
	    git_repository_odb(&odb, amp_store_repo(st)) < 0 || git_odb_refresh(odb) < 0) {
		ok(0, "a store for the moved-pack test");
		goto cleanup;
	}
	/* the object's pack, written after the odb read the directory */
	snprintf(cmd, sizeof(cmd), "cd '%s' && printf 'moved\\n' | git hash-object -w --stdin |"
		 " git pack-objects -q objects/pack/pack && git prune-packed", dir);
	/* read to the end: the loose copy is gone once the command is */
	if ((p = popen(cmd, "r"))) {
		if (!fgets(roller.old, sizeof(roller.old), p))
			roller.old[0] = '\0';
		while (fgets(cmd, sizeof(cmd), p))
			;
	}
	if (!p || pclose(p) != 0 || strlen(roller.old) != 40) {
		ok(0, "the object's pack");
		goto cleanup;
	}
	roller.dir = dir;
	roller.parent.version = GIT_ODB_BACKEND_VERSION;
	roller.parent.refresh = roller_refresh;
	roller.parent.free = roller_free;
	if (git_odb_add_backend(odb, &roller.parent, 1) < 0) {
		ok(0, "the roller backend");
		goto cleanup;
	}
	ok(git_odb_read(&obj, odb, &moved) == 0 && git_odb_object_size(obj) == 6,
	   "moved pack: an object whose pack was rolled up while it was looked for is found");
cleanup:
	git_odb_object_free(obj);
	git_odb_free(odb);
	amp_store_free(st);
	git_repository_free(repo);
	if (made)
		tap_remove_dir(dir);
}

/* amp_record_times: one time per (task, record), the least one kept, past
 * the table's first growth; keys that concatenate alike stay apart. */
static void test_record_times(void)
{
	amp_record_times *t = amp_record_times_new();
	char task[32], name[64];
	int i, all = 1;

	ok(t && amp_record_times_get(t, "T-2026-044", "000001.msg.x.json") == -1,
	   "record times: an unknown record has none");
	for (i = 0; t && i < 5000; i++) {
		snprintf(task, sizeof(task), "T-2026-%03d", i % 700);
		snprintf(name, sizeof(name), "%06d.msg.m-%d.json", i, i);
		all &= amp_record_times_put(t, task, name, 1000 + i) == 0;
	}
	ok(all, "record times: 5,000 records put");
	all = 1;
	for (i = 0; t && i < 5000; i++) {
		snprintf(task, sizeof(task), "T-2026-%03d", i % 700);
		snprintf(name, sizeof(name), "%06d.msg.m-%d.json", i, i);
		all &= amp_record_times_get(t, task, name) == 1000 + i;
	}
	ok(all, "record times: each of them read back");
	amp_record_times_put(t, "T-2026-001", "000001.msg.m-1.json", 7);
	amp_record_times_put(t, "T-2026-001", "000001.msg.m-1.json", 9);
	ok(amp_record_times_get(t, "T-2026-001", "000001.msg.m-1.json") == 7,
	   "record times: the least time is kept");
	amp_record_times_put(t, "T-1", "a/b", 1);
	amp_record_times_put(t, "T-1/a", "b", 2);
	ok(amp_record_times_get(t, "T-1", "a/b") == 1 && amp_record_times_get(t, "T-1/a", "b") == 2,
	   "record times: (T-1, a/b) and (T-1/a, b) are two records");
	amp_record_times_free(t);
}

/*
 * share/doc/internals.md "A lean binary": linked with Debian's libgit2.a (build/libgit2/link
 * says "archive"), libgit2's ways to TLS and SSH are amp's (lib/store/tls_ca.c)
 * and fail, saying that amp is built without them: an https:// or ssh://
 * remote opened through libgit2 in amp's process fails.  (Not through
 * git_remote_connect: libgit2 1.5 leaks on that failure, which make asan
 * would report.)
 */
static void test_no_network(void)
{
	char src[8192], link[8300], mode[16] = "";
	git_smart_subtransport *sub = NULL;
	const char *tls = "TLS through libgit2 fails: amp is built without it",
		   *ssh = "SSH through libgit2 fails: amp is built without it";
	const git_error *e;
	FILE *f;
	int rc;

	if (tap_source_dir(src, sizeof(src)) == 0) {
		snprintf(link, sizeof(link), "%s/build/libgit2/link", src);
		/* the second line's first word */
		if ((f = fopen(link, "r"))) {
			if (!fgets(link, sizeof(link), f) || fscanf(f, "%15s", mode) != 1)
				mode[0] = '\0';
			fclose(f);
		}
	}
	if (!strcmp(mode, "lean")) {
		/* share/build-libgit2.sh's libgit2 has no TLS nor SSH at all:
		 * libgit2 itself says so */
		rc = git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS,
				      "/etc/ssl/certs/ca-certificates.crt", NULL);
		e = git_error_last();
		ok(rc < 0 && e && e->message && strstr(e->message, "TLS backend doesn't support"), tls);
		rc = git_smart_subtransport_ssh(&sub, NULL, NULL);
		e = git_error_last();
		ok(rc < 0 && !sub && e && e->message && strstr(e->message, "without SSH support"), ssh);
		return;
	}
	if (strcmp(mode, "archive")) {
		tap_skip(tls, "libgit2 is the system's shared one here");
		tap_skip(ssh, "libgit2 is the system's shared one here");
		return;
	}
	/* what libgit2 does first for an https:// remote's certificates */
	rc = git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, "/etc/ssl/certs/ca-certificates.crt",
			      NULL);
	e = git_error_last();
	ok(rc < 0 && e && e->message && strstr(e->message, "without libgit2's TLS"), tls);
	/* the subtransport libgit2's table names for ssh:// */
	rc = git_smart_subtransport_ssh(&sub, NULL, NULL);
	e = git_error_last();
	ok(rc < 0 && !sub && e && e->message && strstr(e->message, "without libgit2's SSH"), ssh);
}

/* The hex SHA-1 (nettle's, which packwrite.c and pack.c use) of len bytes of data, fed `step` bytes at a time. */
static const char *sha1_hex(const void *data, size_t len, size_t step, char hex[41])
{
	const unsigned char *p = data;
	unsigned char out[20];
	struct sha1_ctx c;
	size_t i, n;

	sha1_init(&c);
	for (i = 0; i < len; i += n) {
		n = len - i < step ? len - i : step;
		sha1_update(&c, n, p + i);
	}
	sha1_digest(&c, SHA1_DIGEST_SIZE, out);
	for (i = 0; i < 20; i++)
		snprintf(hex + 2 * i, 3, "%02x", out[i]);
	return hex;
}

/* The trailer of every pack amp writes: FIPS 180-4's examples, fed whole
 * and in odd pieces across the 64-byte blocks. */
static void test_sha1(void)
{
	static const char two_blocks[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	char hex[41], *million = malloc(1000000);
	int same = 1;
	size_t step;

	ok(!strcmp(sha1_hex("", 0, 64, hex), "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
	   "SHA-1 of nothing");
	ok(!strcmp(sha1_hex("abc", 3, 64, hex), "a9993e364706816aba3e25717850c26c9cd0d89d"),
	   "SHA-1 of abc");
	for (step = 1; step <= 65; step++)
		same &= !strcmp(sha1_hex(two_blocks, sizeof(two_blocks) - 1, step, hex),
				"84983e441c3bd26ebaae4aa1f95129e5e54670f1");
	ok(same, "SHA-1 of the 448-bit example, fed 1 to 65 bytes at a time");
	if (million)
		memset(million, 'a', 1000000);
	ok(million && !strcmp(sha1_hex(million, 1000000, 4099, hex),
			      "34aa973cd4c4daa4f61eeb2bdbad27316534016f"), "SHA-1 of a million a's");
	free(million);
}

int main(void)
{
	char buf[128], when[AMP_TIME_BUFSZ];
	int64_t ms;

	ok(amp_store_task_dir(AMP_LAYOUT_FLAT, "T-2026-044", buf, sizeof(buf)) == 0 &&
	   !strcmp(buf, "tasks/2026/0/T-2026-044"), "task dir of T-2026-044 is tasks/2026/0/");
	ok(amp_store_task_dir(AMP_LAYOUT_FLAT, "T-2026-1234", buf, sizeof(buf)) == 0 &&
	   !strcmp(buf, "tasks/2026/12/T-2026-1234"), "task dir shards by all but the last two digits");
	ok(amp_store_task_dir(AMP_LAYOUT_FLAT, "T-26-044", buf, sizeof(buf)) < 0, "a two-digit year is not a task id");
	ok(amp_store_task_dir(AMP_LAYOUT_FLAT, "T-2026-44", buf, sizeof(buf)) < 0, "two digits are not NNN");
	ok(amp_store_task_dir(AMP_LAYOUT_FLAT, "T-2026-04x", buf, sizeof(buf)) < 0, "NNN must be digits");
	ok(amp_store_task_dir(AMP_LAYOUT_FLAT, "../../etc", buf, sizeof(buf)) < 0, "a path is not a task id");
	ok(amp_store_task_dir(AMP_LAYOUT_FANNED, "T-2026-044", buf, sizeof(buf)) == 0 &&
	   !strcmp(buf, "tasks/2026/0/0/T-2026-044"), "layout 2: T-2026-044 in tasks/2026/0/0/");
	ok(amp_store_task_dir(AMP_LAYOUT_FANNED, "T-2026-123456", buf, sizeof(buf)) == 0 &&
	   !strcmp(buf, "tasks/2026/12/34/T-2026-123456"),
	   "layout 2: the shard's last two digits below the rest");
	ok(amp_store_record_path(AMP_LAYOUT_FANNED, "T-2026-044", "012345.msg.x.json", buf,
				 sizeof(buf)) == 0 &&
	   !strcmp(buf, "tasks/2026/0/0/T-2026-044/01/23/012345.msg.x.json"),
	   "layout 2: record 12345 in <task>/01/23/");
	ok(amp_store_record_path(AMP_LAYOUT_FLAT, "T-2026-044", "000001.ack.x.json", buf,
				 sizeof(buf)) == 0 &&
	   !strcmp(buf, "tasks/2026/0/T-2026-044/000001.ack.x.json"), "layout 1: records flat");
	ok(amp_store_record_path(AMP_LAYOUT_FANNED, "T-2026-044", "1.msg.x.json", buf,
				 sizeof(buf)) < 0, "not a record's name: no path");

	ok(amp_msg_id_task("task_dispatch-T-2026-044-1740576727001", buf, sizeof(buf)) == 0 &&
	   !strcmp(buf, "T-2026-044"), "task of a msg_id");
	ok(amp_msg_id_task("review_verdict-T-2026-1044-1", buf, sizeof(buf)) == 0 &&
	   !strcmp(buf, "T-2026-1044"), "task of a msg_id with a 4-digit number");
	ok(amp_msg_id_task("task_dispatch-T-2026-044-", buf, sizeof(buf)) < 0, "msg_id without ms");
	ok(amp_msg_id_task("task_dispatch-T-2026-044-17x", buf, sizeof(buf)) < 0, "msg_id with a bad ms");
	ok(amp_msg_id_task("nonsense", buf, sizeof(buf)) < 0, "not a msg_id");
	ok(amp_msg_id_ms("task_dispatch-T-2026-044-1740576727001") == 1740576727001LL, "ms of a msg_id");

	ok(amp_time_parse("2026-02-26T14:32:07+00:00", &ms) == 0 && ms == 1772116327000LL,
	   "parse the seed's timestamp");
	ok(amp_time_parse("2026-02-26T16:32:07.250+02:00", &ms) == 0 && ms == 1772116327250LL,
	   "offset and fraction");
	ok(amp_time_parse("2026-02-26T14:32:07", &ms) < 0, "no offset is refused");
	ok(amp_time_parse("2026-02-30T14:32:07Z", &ms) < 0, "Feb 30 is refused");
	ok(amp_time_parse("2024-02-29T00:00:00Z", &ms) == 0, "leap day");
	ok(amp_time_parse("2026-02-26T23:59:60Z", &ms) == 0, "leap second at the end of a UTC day");
	ok(amp_time_parse("2026-02-26T12:59:60Z", &ms) < 0, "leap second elsewhere is refused");
	ok(amp_time_parse("2026-02-26T14:32:07+00:00x", &ms) < 0, "trailing text is refused");
	ok(!strcmp(amp_time_format(1772116327000LL, when), "2026-02-26T14:32:07+00:00"), "format whole seconds");
	ok(!strcmp(amp_time_format(1772116327042LL, when), "2026-02-26T14:32:07.042+00:00"), "format milliseconds");
	ok(!strcmp(amp_time_format(0, when), "1970-01-01T00:00:00+00:00"), "format the epoch");

	ok(amp_type_lookup("task_dispatch")->ack_timeout_sec == 300, "dispatch ACK timeout is 300 s");
	ok(amp_type_lookup("task_result")->ack_timeout_sec == 120, "result ACK timeout is 120 s");
	ok(amp_type_lookup("review_request")->ack_timeout_sec == 600, "review_request ACK timeout is 600 s");
	ok(amp_type_lookup("review_verdict")->ack_timeout_sec == 60, "verdict ACK timeout is 60 s");
	ok(!amp_type_lookup("escalation")->requires_ack, "escalations need no ACK");
	ok(amp_role_in("admin", "coordinator admin") && !amp_role_in("admi", "coordinator admin"),
	   "role lists match whole words");
	test_sha1();
	git_libgit2_init();
	test_outside_writer();
	test_record_times();
	test_trim_indexes();
	test_moved_pack();
	test_no_network();
	git_libgit2_shutdown();

	return tap_done();
}
