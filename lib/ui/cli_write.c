/*
 * cli_write.c - the skeleton of the commands that write one record
 * (cli_write.h).
 */
#include "cli_write.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "store/store.h"
#include "write/write.h"
#include "cli.h"

/* The options every writing command takes, after its own. */
static const struct option common_opts[] = {
	{ "from", required_argument, NULL, 'f' },
	{ "json", no_argument, NULL, 'j' },
	{ "repo", required_argument, NULL, 'r' },
	AMP_CLI_AGENT_OPTION,
	AMP_CLI_SYNC_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

#define OPTS_MAX 24

/* Stores optarg where w->values says option `c` goes: 1, or 0 when it
 * says nothing of c. */
static int set_value(amp_cli_writer *w, int c)
{
	size_t i;

	for (i = 0; w->values && w->opts && w->opts[i].name; i++) {
		if (w->opts[i].val == c) {
			*w->values[i] = optarg;
			return 1;
		}
	}
	return 0;
}

/* Parses argv into w; AMP_CLI_GO or the exit code. */
static int parse(amp_cli_writer *w, int argc, char **argv, const struct option *opts)
{
	int c, code;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': w->from = optarg; break;
		case 'j': w->json_out = 1; break;
		case 'r': w->repo = optarg; break;
		AMP_CLI_AGENT_CASE;
		AMP_CLI_SYNC_CASES(w->sync);
		case 'h': return amp_cli_help(w->cmd, w->usage, opts);
		case '?': case ':':
			return amp_cli_bad_option(w->cmd, w->usage, opts, argv[optind - 1]);
		default:
			if (w->option) {
				if ((code = w->option(w, c)))
					return code;
			} else if (!set_value(w, c)) {
				return amp_cli_bad_option(w->cmd, w->usage, opts, argv[optind - 1]);
			}
		}
	}
	if ((code = amp_cli_check_args(w->cmd, argc, argv, "h", opts)) ||
	    (w->idempotency_key && (code = amp_cli_idempotency_key(w->cmd, w->idempotency_key))))
		return code;
	if (!w->usage_one) {
		if (optind != argc)
			return amp_cli_usage_error(w->cmd, w->usage, "no operands expected");
	} else if (optind != argc - 1) {
		return amp_cli_usage_error(w->cmd, w->usage, "%s", w->usage_one);
	} else {
		w->arg = argv[optind];
	}
	return AMP_CLI_GO;
}

int amp_cli_write_open(amp_cli_writer *w, int argc, char **argv)
{
	struct option opts[OPTS_MAX];
	size_t n = 0, i;
	amp_error err;
	int code;

	w->arg = w->from = w->repo = NULL;
	w->json_out = 0;
	w->sync = -1;
	w->set = NULL;
	w->st = NULL;
	w->now_ms = 0;
	memset(&w->errors, 0, sizeof(w->errors));
	for (i = 0; w->opts && w->opts[i].name && n < OPTS_MAX - 8; i++)
		opts[n++] = w->opts[i];
	for (i = 0; i < sizeof(common_opts) / sizeof(common_opts[0]); i++)
		opts[n++] = common_opts[i];
	if ((code = parse(w, argc, argv, opts)) != AMP_CLI_GO ||
	    (w->check && (code = w->check(w))))
		return code;
	if ((code = amp_cli_load_schemas(w->cmd, &w->set)) ||
	    (w->arg && (code = amp_cli_check_id(w->cmd, w->set, w->operand_name, w->arg,
						  w->operand_def))) ||
	    (w->check_ids && (code = w->check_ids(w))) ||
	    (code = amp_cli_open_ssot(w->cmd, w->repo, &w->st)) ||
	    (code = amp_cli_role(w->cmd, w->st, w->set, w->from, w->role_required, &w->from)))
		return code;
	if (amp_clock_now_ms(&w->now_ms, &err) < 0)
		return amp_cli_fail(w->cmd, &err);
	if (w->role && w->from && strcmp(w->from, w->role)) {
		amp_errlist_add(&w->errors, AMP_ERULE, "/from", "%s, not %s", w->role_why, w->from);
		return amp_cli_print_errors(w->cmd, &w->errors, AMP_ERULE);
	}
	return AMP_CLI_GO;
}

void amp_cli_write_print(amp_cli_writer *w, json_t *out, const char *fmt, ...)
{
	va_list ap;

	if (w->json_out) {
		amp_cli_print_json(out, 0);
	} else {
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		putchar('\n');
	}
	json_decref(out);
}

int amp_cli_write_done(amp_cli_writer *w, int status)
{
	int code = status < 0 ? amp_cli_print_errors(w->cmd, &w->errors, status)
			      : amp_cli_sync_after_write(w->cmd, w->st, w->set, w->sync);

	return amp_cli_write_close(w, code);
}

int amp_cli_write_refused(amp_cli_writer *w, int status, const amp_send_result *res)
{
	int code = amp_cli_print_errors(w->cmd, &w->errors, status);

	amp_cli_report_escalation(w->cmd, res);
	/* a refusal that escalated: the escalation goes too */
	if (res->escalation_id[0])
		amp_cli_sync_after_write(w->cmd, w->st, w->set, w->sync);
	return amp_cli_write_close(w, code);
}

json_t *amp_cli_sent_json(const char *key, const amp_send_result *res)
{
	json_t *out = json_pack("{s:s,s:b}", key, res->msg_id, "duplicate", res->duplicate);

	json_object_set_new(out, "escalation", res->escalation_id[0] ?
			    json_string(res->escalation_id) : json_null());
	return out;
}

int amp_cli_write_close(amp_cli_writer *w, int code)
{
	amp_errlist_free(&w->errors);
	amp_schema_set_free(w->set);
	amp_store_free(w->st);
	w->set = NULL;
	w->st = NULL;
	return code;
}

/* ---- amp resume, approve, abort, heartbeat ------------------------------------ */

struct control_args {
	const char *reason, *note, *text;
};

static int control_option(amp_cli_writer *w, int c)
{
	struct control_args *a = w->ctx;

	if (c == 'R')
		a->reason = optarg;
	else
		a->note = optarg;
	return 0;
}

static int control_check(amp_cli_writer *w)
{
	struct control_args *a = w->ctx;
	const char *type = w->cmd;
	int heartbeat = !strcmp(type, "heartbeat");
	int reason_required = !strcmp(type, "resume") || !strcmp(type, "abort");

	if (heartbeat ? a->reason != NULL : a->note != NULL)
		return amp_cli_usage_error(type, w->usage, "%s takes %s", type,
					   heartbeat ? "--note, not --reason" : "--reason, not --note");
	a->text = heartbeat ? a->note : a->reason;
	if (a->text && !*a->text)
		return amp_cli_usage_error(type, w->usage, "--%s must not be empty",
					   heartbeat ? "note" : "reason");
	if (reason_required && !a->text)
		return amp_cli_usage_error(type, w->usage, "--reason is required");
	return 0;
}

/* The --json result of a control record. */
static json_t *control_json(const amp_cli_writer *w, const amp_control_result *res)
{
	const char *type = w->cmd;
	json_t *out = json_pack("{s:s,s:s}", "task_id", w->arg, "control", res->name);

	if (!strcmp(type, "resume"))
		json_object_set_new(out, "lifts", json_string(res->target));
	if (!strcmp(type, "approve"))
		json_object_set_new(out, "approves", json_string(res->target));
	json_object_set_new(out, "was", json_string(res->was));
	json_object_set_new(out, "state", json_string(res->now));
	json_object_set_new(out, "type", json_string(type));
	json_object_set_new(out, "from", json_string(w->from));
	/* The instance, when one is named (--agent, AMP_AGENT, amp.agent). */
	if (amp_store_agent(w->st))
		json_object_set_new(out, "agent", json_string(amp_store_agent(w->st)));
	json_object_set_new(out, "escalation", res->escalation_id[0] ?
			    json_string(res->escalation_id) : json_null());
	if (res->lost[0])
		json_object_set_new(out, "lost_claim", json_string(res->lost));
	return out;
}

int amp_cli_control(const char *type, const char *usage, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "reason", required_argument, NULL, 'R' },
		{ "note", required_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 },
	};
	struct control_args a = { NULL, NULL, NULL };
	amp_cli_writer w = { .cmd = type, .usage = usage, .opts = opts, .option = control_option,
			     AMP_CLI_TASK_OPERAND, .role_required = 1, .check = control_check,
			     .ctx = &a };
	amp_control_result res;
	json_t *recovered, *r;
	size_t i;
	int code, status;

	amp_reccache_arena(); /* one message, then exit */
	if ((code = amp_cli_write_open(&w, argc, argv)) != AMP_CLI_GO)
		return amp_cli_write_close(&w, code);
	status = amp_control_write(w.st, w.set, type, w.arg, w.from, a.text, w.now_ms, &res,
				   &w.errors);
	if (status < 0)
		return amp_cli_write_done(&w, status);
	/* Recovered (issue 33): what the instance still held is given back. */
	recovered = res.lost[0] ? amp_cli_recover(&w, res.lost) : NULL;
	if (w.json_out) {
		json_t *out = control_json(&w, &res);

		if (recovered)
			json_object_set(out, "released", recovered);
		amp_cli_print_json(out, 0);
		json_decref(out);
	} else if (!strcmp(type, "resume")) {
		if (res.escalation_id[0])
			printf("recorded the due hallucination lock %s\n", res.escalation_id);
		printf("resumed %s (%s -> %s): lifted %s\n", w.arg, res.was, res.now, res.target);
	} else if (!strcmp(type, "approve")) {
		printf("approved %s: %s may start (%s -> %s)\n", w.arg, res.target, res.was,
		       res.now);
	} else if (!strcmp(type, "abort")) {
		printf("aborted %s (%s -> aborted): only the admin may write to it now\n", w.arg,
		       res.was);
	} else {
		printf("heartbeat %s %s (%s)\n", w.arg, w.from, res.name);
	}
	/* The holder is told (issue 33): amp watch released its lease. */
	if (res.lost[0])
		fprintf(stderr, "amp heartbeat: warning: /agent: %s: the lease of %s (%s) ran out and amp watch released it; the task is claimable again: claim it before working on it\n",
			amp_store_agent(w.st), w.arg, res.lost);
	json_array_foreach(recovered, i, r)
		fprintf(stderr, "amp heartbeat: warning: /agent: %s: released %s of %s too (recovered: it was not renewed since); claim it again to go on\n",
			amp_store_agent(w.st), amp_json_str(r, "claim"), amp_json_str(r, "task_id"));
	json_decref(recovered);
	return amp_cli_write_done(&w, status);
}
