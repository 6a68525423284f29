/*
 * fuzz_validate.c - the JSON reader and the validator, as `amp validate`
 * and the first step of `amp send` use them.
 *
 * The input is the bytes of a file.  It is parsed (amp_json_parse) and
 * validated against the message and the ACK schemas, and handed whole to
 * amp_validate_buffer (which also reads JSON lines).  Promises checked:
 *   - the validator never calls AMP's own schemas unusable (AMP_EIO);
 *   - every refusal comes with at least one reason, whose path is a JSON
 *     pointer ("" or starting with "/");
 *   - amp_validate_buffer gives a whole-buffer value the same verdict;
 *   - a valid message, dumped as amp stores it, parses back to an equal
 *     value that is still valid ("whatever amp accepts, amp can read back").
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "record/record.h"
#include "base/util.h"
#include "json/json.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_env();
	fuzz_schemas();
	return 0;
}

static void check_reasons(int status, const amp_errlist *errors, const char *what)
{
	size_t i;

	if (status == AMP_EIO)
		fuzz_fail("%s: the schema is unusable: %s", what,
			  errors->count ? errors->items[0].message : "(no reason)");
	if (status != AMP_OK && status != AMP_ESCHEMA)
		fuzz_fail("%s: unexpected status %d", what, status);
	if (status == AMP_ESCHEMA && !errors->count)
		fuzz_fail("%s: refused without a reason", what);
	for (i = 0; i < errors->count; i++)
		if (errors->items[i].path[0] && errors->items[i].path[0] != '/')
			fuzz_fail("%s: error path is not a JSON pointer: %s", what,
				  errors->items[i].path);
}

/* A valid record must survive the way amp stores it. */
static void check_round_trip(json_t *msg, int ack)
{
	amp_errlist errors = { 0 };
	amp_error err;
	json_t *back = NULL;
	char *dump = amp_message_dump(msg);

	if (!dump)
		fuzz_fail("a valid %s cannot be dumped", ack ? "ACK" : "message");
	if (amp_json_parse(dump, strlen(dump), &back, &err) < 0)
		fuzz_fail("a valid %s does not parse back: %s", ack ? "ACK" : "message",
			  err.message);
	if (!json_equal(msg, back))
		fuzz_fail("a valid %s parses back to another value", ack ? "ACK" : "message");
	if (amp_message_validate(fuzz_schemas(), back, ack, &errors) != AMP_OK)
		fuzz_fail("a valid %s is invalid once stored: %s", ack ? "ACK" : "message",
			  errors.count ? errors.items[0].message : "");
	amp_errlist_free(&errors);
	json_decref(back);
	free(dump);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	amp_schema_set *set = fuzz_schemas();
	amp_validate_results results = { 0 };
	amp_errlist errors = { 0 };
	amp_error err;
	json_t *msg = NULL;
	int status, ack;

	if (amp_json_parse((const char *)data, size, &msg, &err) == AMP_OK) {
		for (ack = 0; ack <= 1; ack++) {
			status = amp_message_validate(set, msg, ack, &errors);
			check_reasons(status, &errors, ack ? "ack" : "message");
			if (status == AMP_OK)
				check_round_trip(msg, ack);
			amp_errlist_free(&errors);
			memset(&errors, 0, sizeof(errors));
		}
		status = amp_message_validate(set, msg, 0, &errors);
	} else {
		status = AMP_ESCHEMA;
	}
	if (amp_validate_buffer(set, amp_schema_set_lookup(set, AMP_SCHEMA_MESSAGE),
				(const char *)data, size, &results) == AMP_EIO)
		fuzz_fail("amp_validate_buffer: AMP_EIO");
	if (msg && (results.count != 1 || results.items[0].line != 0 ||
		    results.items[0].status != status))
		fuzz_fail("amp_validate_buffer disagrees with amp_message_validate");
	for (size_t i = 0; i < results.count; i++)
		check_reasons(results.items[i].status, &results.items[i].errors, "buffer");
	amp_validate_results_free(&results);
	amp_errlist_free(&errors);
	json_decref(msg);
	return 0;
}
