/* Unit tests for the pure parts of the store, clock and message modules. */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "message.h"
#include "store.h"

static int n, failed;

static void ok(int cond, const char *name)
{
	n++;
	if (!cond)
		failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", n, name);
}

int main(void)
{
	char buf[128], when[AMP_TIME_BUFSZ];
	int64_t ms;

	ok(amp_store_task_dir("T-2026-044", buf, sizeof(buf)) == 0 &&
	   !strcmp(buf, "tasks/2026/0/T-2026-044"), "task dir of T-2026-044 is tasks/2026/0/");
	ok(amp_store_task_dir("T-2026-1234", buf, sizeof(buf)) == 0 &&
	   !strcmp(buf, "tasks/2026/12/T-2026-1234"), "task dir shards by all but the last two digits");
	ok(amp_store_task_dir("T-26-044", buf, sizeof(buf)) < 0, "a two-digit year is not a task id");
	ok(amp_store_task_dir("T-2026-44", buf, sizeof(buf)) < 0, "two digits are not NNN");
	ok(amp_store_task_dir("T-2026-04x", buf, sizeof(buf)) < 0, "NNN must be digits");
	ok(amp_store_task_dir("../../etc", buf, sizeof(buf)) < 0, "a path is not a task id");

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

	printf("1..%d\n", n);
	return failed ? 1 : 0;
}
