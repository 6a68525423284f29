#include "cli.h"
#include "protocol/protocol.h"
#include "sync/sync.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"
#include "base/clock.h"
#include "write/write.h"
#include "read/read.h"
#include "store/store.h"
#include "base/util.h"
#include "base/errout.h"

int amp_cli_fail(const char *cmd, const amp_error *err)
{
	amp_print_error(cmd, err);
	return amp_exit_code(err->status);
}

int amp_cli_sync_after_write(const char *cmd, amp_store *st, amp_schema_set *set, int flag)
{
	amp_sync_result res;
	amp_error err;
	char remote[256];
	int on = flag;

	if (flag < 0 && amp_store_config_bool(st, "amp.autoSync", 0, &on, &err) < 0)
		return amp_cli_fail(cmd, &err);
	if (!on)
		return 0;
	if (amp_sync_remote(st, NULL, remote, sizeof(remote), &err) < 0 ||
	    amp_sync(st, set, remote, &res, &err) < 0) {
		amp_error out = err;

		snprintf(out.message, sizeof(out.message),
			 "sync: %.700s (what was written stays in the local SSOT: run amp sync)",
			 err.message);
		return amp_cli_fail(cmd, &out);
	}
	return 0;
}

int amp_cli_open_store(const char *cmd, const char *repo, amp_store **st)
{
	amp_error err;

	int64_t now;

	/* AMP_NOW is checked here, before anything is read or written, so
	 * that a bad value is a usage error and never a rejected message. */
	if (amp_clock_now_ms(&now, &err) < 0 || amp_store_open(st, repo, &err) < 0)
		return amp_cli_fail(cmd, &err);
	return 0;
}

/* --agent, when given: command-line glue, one per process. */
static const char *agent_option;

void amp_cli_agent_given(const char *name)
{
	agent_option = name;
}

/* The instance writing: --agent, $AMP_AGENT, git config amp.agent. */
static int set_agent(const char *cmd, amp_store *st)
{
	const char *env = getenv("AMP_AGENT"), *name = agent_option, *where = "--agent";
	char conf[256];
	amp_error err;

	if (!name && env && *env) {
		name = env;
		where = "AMP_AGENT";
	}
	if (!name && amp_store_config(st, "amp.agent", conf, sizeof(conf)) && conf[0]) {
		name = conf;
		where = "git config amp.agent";
	}
	if (amp_store_set_agent(st, name, &err) < 0) {
		amp_error out = err;

		snprintf(out.message, sizeof(out.message), "%s: %.900s", where, err.message);
		return amp_cli_fail(cmd, &out);
	}
	return 0;
}

int amp_cli_open_ssot(const char *cmd, const char *repo, amp_store **st)
{
	const char *ref;
	amp_error err;
	git_oid oid;
	int code;

	if ((code = amp_cli_open_store(cmd, repo, st)) || (code = set_agent(cmd, *st)))
		return code;
	ref = amp_store_messages_ref(*st);
	if (git_reference_name_to_id(&oid, amp_store_repo(*st), ref) < 0) {
		amp_error_set(&err, AMP_EIO, "",
			      "no AMP store in this repository (%s is missing): run 'amp init'",
			      ref);
		git_error_clear();
		return amp_cli_fail(cmd, &err);
	}
	return 0;
}

int amp_cli_load_schemas(const char *cmd, amp_schema_set **set)
{
	amp_error err;

	if (amp_schema_set_load_amp(set, NULL, &err) < 0)
		return amp_cli_fail(cmd, &err);
	return 0;
}

int amp_cli_print_errors(const char *cmd, const amp_errlist *errors, int status)
{
	size_t i;
	int worst = amp_exit_code(status);

	for (i = 0; i < errors->count; i++) {
		amp_print_error(cmd, &errors->items[i]);
		/* An I/O failure outranks the verdict on the message. */
		if (errors->items[i].status == AMP_EIO)
			worst = AMP_EXIT_IO;
	}
	return worst;
}

int amp_cli_report_skipped(const char *cmd, amp_store *st, int code)
{
	const amp_errlist *skipped = st ? amp_store_skipped(st) : NULL;

	if (!skipped || !skipped->count)
		return code;
	amp_cli_print_errors(cmd, skipped, AMP_EIO);
	amp_store_skipped_clear(st);
	return code ? code : AMP_EXIT_IO;
}

int amp_cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
{
	char reason[AMP_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	amp_errout_record(AMP_EUSAGE, "", reason);
	/* The reason quotes argv. */
	fprintf(stderr, "amp %s: error: %s\n%s", cmd, amp_term(reason), usage);
	return AMP_EXIT_USAGE;
}

/* What a definition of common.schema.json looks like, for the error: the
 * enum's values, else a shape. */
static void describe(amp_schema_set *set, const char *uri, const char *def,
		     char *buf, size_t bufsz)
{
	const json_t *values, *v;
	size_t i, used;

	if (!strcmp(def, "task_id")) {
		snprintf(buf, bufsz, "a task id (T-YYYY-NNN)");
		return;
	}
	if (!strcmp(def, "msg_id")) {
		snprintf(buf, bufsz, "a msg_id (<type>-T-YYYY-NNN-<unix_ms>)");
		return;
	}
	values = json_object_get(amp_schema_set_lookup(set, uri), "enum");
	used = (size_t)snprintf(buf, bufsz, "a role (");
	json_array_foreach(values, i, v)
		if (used < bufsz)
			used += (size_t)snprintf(buf + used, bufsz - used, "%s%s",
						 i ? ", " : "", json_string_value(v));
	if (used < bufsz)
		snprintf(buf + used, bufsz - used, ")");
}

int amp_cli_check_id(const char *cmd, amp_schema_set *set, const char *what,
		     const char *value, const char *def)
{
	char uri[256], shape[256];
	amp_errlist errors = { 0 };
	amp_error err;
	json_t *schema, *instance = json_string(value);
	int status;

	snprintf(uri, sizeof(uri), "%scommon.schema.json#/definitions/%s",
		 AMP_SCHEMA_BASE, def);
	/* Ids have their pattern in C too (lib/record/bounds.c, held to agree with
	 * the schema by test/51-limits.bats): no schema needs loading. */
	if (instance && (!strcmp(def, "task_id") || !strcmp(def, "msg_id"))) {
		status = !strcmp(def, "task_id") ? (amp_task_id_valid(value, strlen(value)) ? AMP_OK : AMP_ESCHEMA)
						 : (amp_msg_id_parse(value, NULL, NULL, NULL) == 0 ? AMP_OK : AMP_ESCHEMA);
		if (status == AMP_ESCHEMA) {
			describe(set, uri, def, shape, sizeof(shape));
			status = amp_error_set(&err, AMP_EUSAGE, "", "%s: '%s' is not %s",
					       what, value, shape);
		}
		json_decref(instance);
		return status < 0 ? amp_cli_fail(cmd, &err) : 0;
	}
	schema = json_pack("{s:s}", "$ref", uri);
	if (!instance)
		status = amp_error_set(&err, AMP_EUSAGE, "", "%s: not valid UTF-8: '%s'",
				       what, value);
	else if (!schema)
		status = amp_error_set(&err, AMP_EIO, "", "out of memory");
	else if ((status = amp_schema_validate(set, schema, AMP_SCHEMA_MESSAGE,
					       instance, &errors)) == AMP_ESCHEMA) {
		describe(set, uri, def, shape, sizeof(shape));
		status = amp_error_set(&err, AMP_EUSAGE, "", "%s: '%s' is not %s",
				       what, value, shape);
	} else if (status < 0) {
		err = errors.items[0];
	}
	amp_errlist_free(&errors);
	json_decref(schema);
	json_decref(instance);
	return status < 0 ? amp_cli_fail(cmd, &err) : 0;
}

int amp_cli_role(const char *cmd, amp_store *st, amp_schema_set *set,
		 const char *given, int required, const char **role)
{
	static char buf[256];
	const char *env = getenv("AMP_ROLE"), *what = "--from";
	amp_error err;

	*role = given;
	if (!given && env && *env) {
		*role = env;
		what = "AMP_ROLE";
	} else if (!given && st && amp_store_config(st, "amp.role", buf, sizeof(buf))) {
		*role = buf;
		what = "git config amp.role";
	}
	if (!*role) {
		if (!required)
			return 0;
		amp_error_set(&err, AMP_EUSAGE, "",
			      "--from is required (or set AMP_ROLE or git config amp.role)");
		return amp_cli_fail(cmd, &err);
	}
	return amp_cli_check_id(cmd, set, what, *role, "sender_role");
}

/* The option of `opts` that `arg` ("--name" or "--name=value", perhaps
 * abbreviated as getopt_long allows) names. */
static const struct option *long_option(const struct option *opts, const char *arg)
{
	size_t n = strcspn(arg, "=");
	const struct option *o, *prefix = NULL;

	for (o = opts; o->name; o++) {
		if (strncmp(o->name, arg, n))
			continue;
		if (!o->name[n])
			return o;
		if (!prefix)
			prefix = o;
	}
	return prefix;
}

static int is_path_option(const char *name)
{
	return !strcmp(name, "repo") || !strcmp(name, "payload") ||
	       !strcmp(name, "envelope");
}

int amp_cli_check_args(const char *cmd, int argc, char **argv,
		       const char *optstring, const struct option *opts)
{
	const char *value;
	amp_error err;
	int i;

	/* getopt_long has moved the options and their values before optind,
	 * in order, and the operands after it. */
	for (i = 1; i < optind && strcmp(argv[i], "--"); i++) {
		const char *arg = argv[i], *c, *spec;
		char name[64];

		if (!strncmp(arg, "--", 2)) {
			const struct option *o = long_option(opts, arg + 2);

			if (!o || o->has_arg == no_argument)
				continue;
			value = strchr(arg, '=') ? strchr(arg, '=') + 1 :
				i + 1 < optind ? argv[++i] : "";
			snprintf(name, sizeof(name), "--%s", o->name);
			if (is_path_option(o->name) || amp_utf8_valid(value))
				continue;
		} else {
			/* A cluster of short options; one taking a value
			 * ends it. */
			for (c = arg + 1; *c; c++)
				if ((spec = strchr(optstring, *c)) && spec[1] == ':')
					break;
			if (!*c)
				continue;
			value = c[1] ? c + 1 : i + 1 < optind ? argv[++i] : "";
			snprintf(name, sizeof(name), "-%c", *c);
			if (amp_utf8_valid(value))
				continue;
		}
		amp_error_set(&err, AMP_EUSAGE, "", "%s: not valid UTF-8: '%s'", name, value);
		return amp_cli_fail(cmd, &err);
	}
	for (i = optind; i < argc; i++)
		if (!amp_utf8_valid(argv[i])) {
			amp_error_set(&err, AMP_EUSAGE, "", "argument '%s': not valid UTF-8",
				      argv[i]);
			return amp_cli_fail(cmd, &err);
		}
	return 0;
}

int amp_cli_int(const char *cmd, const char *what, const char *s,
		long long min, long long max, long long *out)
{
	amp_error err;

	return amp_parse_int(what, s, min, max, out, &err) < 0 ?
	       amp_cli_fail(cmd, &err) : 0;
}

int amp_cli_real(const char *cmd, const char *what, const char *s,
		 double min, double max, double *out)
{
	amp_error err;

	return amp_parse_real(what, s, min, max, out, &err) < 0 ?
	       amp_cli_fail(cmd, &err) : 0;
}

void amp_cli_warn_soft_waits(const char *cmd, amp_store *st, const json_t *msg)
{
	const char *type = amp_json_str(msg, "type"), *task = amp_json_str(msg, "task_id");
	amp_task_log log = { 0 };
	git_tree *tip = NULL;
	json_t *waits = NULL, *d;
	amp_error err;
	size_t i;

	if (!type || strcmp(type, "task_dispatch") || !task ||
	    amp_store_tip(st, amp_store_messages_ref(st), NULL, &tip, &err) < 0 ||
	    amp_store_read_task_controls(st, tip, task, &log, &err) < 0 ||
	    amp_coord_waits(st, tip, &log, &waits, &err) < 0)
		goto cleanup;
	json_array_foreach(waits, i, d)
		fprintf(stderr, "amp %s: warning: task %s waits for %s (%s), a soft dependency: dispatched before it is approved\n",
			cmd, task, amp_term(amp_json_str(d, "task_id")), amp_json_str(d, "state"));
cleanup:
	json_decref(waits);
	amp_task_log_free(&log);
	git_tree_free(tip);
}

void amp_cli_print_document(const json_t *value, int pretty)
{
	amp_json_dumpf(value, stdout, (pretty ? JSON_INDENT(2) : JSON_COMPACT) |
		       JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	putchar('\n');
}

void amp_cli_print_result(const char *name, const char *key, const json_t *value, int pretty)
{
	json_t *doc = json_object();

	/* "format" first, so that a program reads it before the rest. */
	json_object_set_new(doc, "format", amp_errout_format(name));
	if (json_is_object(value) && !key)
		json_object_update(doc, (json_t *)value);
	else /* a list is a member: "items" when the caller names none */
		json_object_set(doc, key ? key : "items", (json_t *)value);
	amp_json_dumpf(doc, stdout, (pretty ? JSON_INDENT(2) : JSON_COMPACT) | JSON_PRESERVE_ORDER);
	putchar('\n');
	json_decref(doc);
	amp_errout_result_printed();
}

void amp_cli_print_json(const json_t *value, int pretty)
{
	amp_cli_print_result(amp_errout_command(), NULL, value, pretty);
}

int amp_cli_idempotency_key(const char *cmd, const char **key)
{
	const char *env = getenv("AMP_IDEMPOTENCY_KEY");

	if (!*key && env && *env)
		*key = env;
	if (!*key)
		return 0;
	if (!**key || strlen(*key) > AMP_IDEMPOTENCY_KEY_MAX || !amp_utf8_valid(*key)) {
		amp_error err;

		amp_error_set(&err, AMP_EUSAGE, "", "--idempotency-key: '%s' is not a key (1..%d bytes of UTF-8)",
			      *key, AMP_IDEMPOTENCY_KEY_MAX);
		return amp_cli_fail(cmd, &err);
	}
	return 0;
}

void amp_cli_trace(const char *cmd, amp_store *st)
{
	unsigned long parsed, cached, trees, trees_cached;

	if (!st || !getenv("AMP_TRACE"))
		return;
	amp_store_record_counts(st, &parsed, &cached);
	amp_store_tree_counts(st, &trees, &trees_cached);
	fprintf(stderr, "amp %s: trace: retries=%lu lookup_scans=%lu state_steps=%lu trees_read=%lu trees_cached=%lu records_parsed=%lu records_cached=%lu\n",
		cmd, amp_store_retries(st), amp_task_log_scanned(), amp_task_state_steps(), trees,
		trees_cached, parsed, cached);
}

void amp_cli_report_escalation(const char *cmd, const amp_send_result *res)
{
	if (!res->escalation_id[0])
		return;
	if (!strcmp(res->escalation_type, "hallucination_lock"))
		fprintf(stderr, "amp %s: the task is locked: hallucination_lock escalation %s recorded with it\n",
			cmd, amp_term(res->escalation_id));
	else if (!strcmp(res->escalation_type, "ack_timeout"))
		fprintf(stderr, "amp %s: the ACK is late: ack_timeout escalation %s recorded with it\n",
			cmd, amp_term(res->escalation_id));
	else
		fprintf(stderr, "amp %s: %s escalation %s recorded\n", cmd,
			amp_term(res->escalation_type), amp_term(res->escalation_id));
}

int amp_cli_inbox_open(const char *cmd, const char *usage, int argc, char **argv,
		       const struct option *opts, const char *task, const char *repo,
		       const char **role, amp_store **st)
{
	amp_schema_set *set = NULL;
	int code;

	if ((code = amp_cli_check_args(cmd, argc, argv, "h", opts)))
		return code;
	if (argc - optind != 1)
		return amp_cli_usage_error(cmd, usage, "one role expected");
	*role = argv[optind];
	if (!(code = amp_cli_load_schemas(cmd, &set)) &&
	    !(code = amp_cli_check_id(cmd, set, "<role>", *role, "addressee_role")) &&
	    !(task && (code = amp_cli_check_id(cmd, NULL, "--task", task, "task_id"))))
		code = amp_cli_open_store(cmd, repo, st);
	amp_schema_set_free(set);
	return code;
}

int amp_cli_inbox_print(const char *cmd, amp_store *st, const amp_inbox *in,
			const char *role, int json_out, amp_human *h, int pager)
{
	amp_error err;
	char *text;
	int64_t now;

	/* Unclaimed work first, then by priority (amp claim, amp plan). */
	if (amp_clock_now_ms(&now, &err) < 0 ||
	    amp_coord_order_inbox(st, in->messages, now, &err) < 0)
		return amp_cli_fail(cmd, &err);
	amp_human_start(h, amp_store_repo(st), json_out, pager);
	if (!(text = amp_inbox_render(in, role, amp_store_messages_ref(st), now, json_out, h))) {
		amp_error_set(&err, AMP_EIO, "", "out of memory");
		return amp_cli_fail(cmd, &err);
	}
	amp_human_fit(text, strlen(text), h->width, stdout);
	free(text);
	return 0;
}
