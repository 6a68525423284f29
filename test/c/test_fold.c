/* test_fold.c - the fold of a task's state (protocol/task_fold.h) against
 * amp_task_state_compute: for random logs of every kind of record, in
 * orders amp never writes but a fetch can bring (an ACK before its message,
 * an approve or a verdict naming a message to come, an ACK out of its
 * place), the state after each prefix is the one computed from the start. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/protocol.h"
#include "store/store.h"
#include "tap.h"

#define TASK "T-2026-000001"

struct gen {
	unsigned long rng;
	long long ms;
	char dispatch[96], result[96], request[96]; /* the latest of each */
	char any[64][96];                           /* every message id */
	int nany;
};

static unsigned pick(struct gen *g, unsigned n)
{
	g->rng = g->rng * 6364136223846793005UL + 1442695040888963407UL;
	return (unsigned)(g->rng >> 33) % n;
}

static void stamp(struct gen *g, char *buf, size_t bufsz, long long ms)
{
	long long s = 1772000000 + ms / 1000;

	snprintf(buf, bufsz, "2026-02-25T%02lld:%02lld:%02lld.%03lld+00:00", (s / 3600) % 24,
		 (s / 60) % 60, s % 60, ms % 1000);
	(void)g;
}

/* An id of `type`: of a message to come (the next ms), now and then. */
static void id_of(struct gen *g, char *buf, size_t bufsz, const char *type)
{
	snprintf(buf, bufsz, "%s-" TASK "-%lld", type, 1772000000000LL + g->ms + (pick(g, 4) == 0));
}

static const char *role(struct gen *g)
{
	static const char *const r[] = { "coordinator", "executor", "reviewer", "admin", "system" };

	return r[pick(g, 5)];
}

/* Appends one random record to log. */
static void add_record(struct gen *g, amp_task_log *log)
{
	static const char *const types[] = { "task_dispatch", "task_result", "review_request",
					     "review_verdict", "escalation", "task_dispatch",
					     "task_result", "review_request" };
	char id[96], ts[64], ref[96];
	unsigned what = pick(g, 14);
	json_t *doc;

	g->ms += 1 + pick(g, 3);
	stamp(g, ts, sizeof(ts), g->ms);
	if (what < 8) {
		const char *type = types[what];
		const char *sub = pick(g, 2) ? "S1" : "S2";

		snprintf(id, sizeof(id), "%s-" TASK "-%lld", type, 1772000000000LL + g->ms);
		doc = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:b,s:{}}", "msg_id", id, "task_id", TASK,
				"type", type, "from", role(g), "to", role(g), "timestamp", ts,
				"requires_ack", pick(g, 3) != 0, "payload");
		if (!strcmp(type, "task_dispatch")) {
			json_object_set_new(json_object_get(doc, "payload"), "subtasks",
					    json_pack("[{s:s}]", "subtask_id", sub));
			json_object_set_new(json_object_get(doc, "payload"), "risk_level",
					    json_string(pick(g, 3) ? "low" : "high"));
			snprintf(g->dispatch, sizeof(g->dispatch), "%s", id);
		} else if (!strcmp(type, "task_result")) {
			json_object_set_new(json_object_get(doc, "payload"), "subtask_id", json_string(sub));
			json_object_set_new(json_object_get(doc, "payload"), "completion_status",
					    json_string(pick(g, 4) ? "complete" : "partial"));
			snprintf(g->result, sizeof(g->result), "%s", id);
		} else if (!strcmp(type, "review_request")) {
			json_object_set_new(json_object_get(doc, "payload"), "original_dispatch_ref",
					    json_string(g->dispatch));
			if (pick(g, 5) == 0)
				id_of(g, ref, sizeof(ref), "task_result");
			json_object_set_new(json_object_get(doc, "payload"), "task_result_ref",
					    json_string(pick(g, 5) == 0 ? ref : g->result));
			snprintf(g->request, sizeof(g->request), "%s", id);
		} else if (!strcmp(type, "review_verdict")) {
			json_object_set_new(json_object_get(doc, "payload"), "decision",
					    json_string(pick(g, 2) ? "approved" : "rejected"));
			id_of(g, ref, sizeof(ref), "review_request");
			if (pick(g, 3))
				json_object_set_new(doc, "context_ref",
						    json_pack("[s]", pick(g, 3) ? g->request : ref));
		} else {
			json_object_set_new(json_object_get(doc, "payload"), "severity",
					    json_string(pick(g, 3) ? "info" : "critical"));
			json_object_set_new(json_object_get(doc, "payload"), "escalation_type",
					    json_string(pick(g, 2) ? "conflict" : "hallucination_lock"));
		}
		if (g->nany < 64)
			snprintf(g->any[g->nany++], sizeof(g->any[0]), "%s", id);
		amp_task_log_append(log, log->next_seq++, AMP_ENTRY_MSG, id, doc, 0);
	} else if (what < 11) {
		/* an ACK: of a message so far, or of one to come; now and then
		 * out of its place (it names another message) */
		if (g->nany && pick(g, 4))
			snprintf(id, sizeof(id), "%s", g->any[pick(g, (unsigned)g->nany)]);
		else
			id_of(g, id, sizeof(id), types[pick(g, 8)]);
		doc = json_pack("{s:s,s:s,s:s,s:s}", "ack_for", pick(g, 10) ? id : g->dispatch,
				"task_id", TASK, "from", role(g), "timestamp", ts);
		amp_task_log_append(log, log->next_seq++, AMP_ENTRY_ACK, id, doc, 0);
	} else {
		static const char *const ctl[] = { "approve", "resume", "abort", "plan" };
		const char *type = ctl[pick(g, 4)];

		snprintf(id, sizeof(id), "%s-%lld", type, g->ms);
		id_of(g, ref, sizeof(ref), "task_dispatch");
		doc = json_pack("{s:s,s:s,s:s,s:s,s:i}", "type", type, "from",
				pick(g, 4) ? "admin" : role(g), "timestamp", ts, "approves",
				pick(g, 3) ? g->dispatch : ref, "max_iterations", 1 + (int)pick(g, 3));
		amp_task_log_append(log, log->next_seq++, AMP_ENTRY_CTL, id, doc, 0);
	}
}

static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* 1 when a and b say the same, else 0 with what differs in why. */
static int same_state(const amp_task_state *a, const amp_task_state *b, char *why, size_t whysz)
{
	size_t i;

#define SAME(cond, what) \
	do { if (!(cond)) { snprintf(why, whysz, "%s", what); return 0; } } while (0)
	SAME(same_str(a->state, b->state), "state");
	SAME(same_str(a->flow_state, b->flow_state), "flow_state");
	SAME(a->reject_count == b->reject_count, "reject_count");
	SAME(a->rejects_since_resume == b->rejects_since_resume, "rejects_since_resume");
	SAME(a->rejects_in_a_row == b->rejects_in_a_row, "rejects_in_a_row");
	SAME(a->suspended == b->suspended && a->locked == b->locked, "suspended");
	SAME(a->lock_due == b->lock_due && a->lock_threshold == b->lock_threshold, "lock");
	SAME(a->messages == b->messages, "messages");
	SAME(same_str(a->suspended_by, b->suspended_by), "suspended_by");
	SAME(a->last_dispatch == b->last_dispatch && a->awaiting == b->awaiting &&
	     a->aborted == b->aborted, "last_dispatch, awaiting, aborted");
	SAME(same_str(a->last_successful_msg_id, b->last_successful_msg_id),
	     "last_successful_msg_id");
	SAME(same_str(a->last_msg_id, b->last_msg_id), "last_msg_id");
	SAME(a->last_activity_ms == b->last_activity_ms && a->resume_ms == b->resume_ms, "times");
	SAME(a->nsubtasks == b->nsubtasks, "nsubtasks");
	for (i = 0; i < a->nsubtasks; i++) {
		const amp_subtask *x = &a->subtasks[i], *y = &b->subtasks[i];

		SAME(same_str(x->id, y->id) && same_str(x->state, y->state), "subtask state");
		SAME(x->dispatch == y->dispatch && x->result == y->result &&
		     x->request == y->request && x->verdict == y->verdict, "subtask records");
		SAME(x->round == y->round && x->rejects == y->rejects, "subtask counts");
	}
#undef SAME
	return 1;
}

int main(void)
{
	amp_policy policy = amp_policy_default;
	unsigned long refolds = 0, prefixes = 0;
	int seed, bad = 0;
	char why[128] = "";

	policy.lock_threshold = 2;
	policy.approval_levels = AMP_RISK_HIGH;
	for (seed = 1; seed <= 400 && !bad; seed++) {
		struct gen g = { (unsigned long)seed, 0, "", "", "", { { 0 } }, 0 };
		amp_task_log log;
		amp_task_fold f;
		size_t n, len = 10 + (size_t)pick(&g, 60);

		memset(&log, 0, sizeof(log));
		snprintf(log.task_id, sizeof(log.task_id), TASK);
		log.policy = &policy;
		log.layout = 2;
		log.next_seq = 1;
		while (log.count < len)
			add_record(&g, &log);
		amp_task_fold_init(&f);
		/* every prefix, and now and then a few records at once */
		for (n = 0; n <= log.count && !bad; n += 1 + (pick(&g, 5) == 0)) {
			amp_task_log view = log;
			amp_task_state want;
			const amp_task_state *got = amp_task_fold_to(&f, &log, n);

			view.count = n;
			amp_task_state_compute(&view, &want);
			if (!got || !same_state(got, &want, why, sizeof(why))) {
				printf("# seed %d, %zu records of %zu: %s\n", seed, n, log.count,
				       got ? why : "out of memory");
				bad = 1;
			}
			amp_task_state_free(&want);
			prefixes++;
		}
		refolds += f.refolds;
		amp_task_fold_free(&f);
		amp_task_log_free(&log);
	}
	ok(!bad, "the fold's state after each prefix of 400 random logs is amp_task_state_compute's");
	ok(prefixes > 10000, "... over more than 10,000 prefixes");
	/* the records that change what an earlier one did came up: the
	 * checks above covered applying every record again */
	ok(refolds > 0, "... some of them applying every record again");
	printf("# %lu prefixes, %lu records applied again\n", prefixes, refolds);
	return tap_done();
}
