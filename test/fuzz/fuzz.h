/*
 * fuzz.h - what the fuzz targets of test/fuzz/ share: finding the source
 * tree, a fixed clock, the AMP schema set, a scratch repository whose
 * objects live in memory, and splitting one input into several records.
 *
 * Each target defines LLVMFuzzerInitialize and LLVMFuzzerTestOneInput.  It
 * is linked either with libFuzzer (clang -fsanitize=fuzzer, `make fuzz`)
 * or with replay.c (any compiler, `make`), which feeds it the committed
 * corpus.  A target that finds a broken promise (not only a crash) calls
 * fuzz_fail(), which aborts: both drivers report an abort as a finding.
 */
#ifndef AMP_FUZZ_H
#define AMP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "schema/schema.h"
#include "store/store.h"

/* The libFuzzer entry points. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The time every target runs at (AMP_NOW), a few minutes after the
 * timestamps of the test fixtures. */
#define FUZZ_NOW "2026-02-26T14:40:00+00:00"

/* Sets AMP_NOW, and AMP_SCHEMA_DIR (when unset) to the schemas/ of the
 * source tree found above the executable, so that the schemas of the tree
 * being tested are used, never installed ones.  Exits on failure. */
void fuzz_env(void);

/* The source tree (the directory holding schemas/); valid after fuzz_env. */
const char *fuzz_tree(void);

/* The AMP schema set, loaded once by fuzz_env's caller; exits on failure. */
amp_schema_set *fuzz_schemas(void);

/*
 * A scratch bare repository in a temporary directory, `amp init`ed, whose
 * new objects go to an in-memory object database.  Removed at exit.
 * fuzz_repo_reset() puts both refs back to their first commit and drops
 * every object written since, so each input starts from an empty SSOT and
 * the repository never grows.
 */
amp_store *fuzz_repo(void);
void fuzz_repo_reset(void);
/* A scratch file path inside that directory (for inputs read from a file). */
const char *fuzz_scratch_file(void);

/* Prints "fuzz: <what>" and aborts. */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Record separator of inputs that hold several records: a line "@@". */
#define FUZZ_SEP "\n@@\n"

/* Calls fn on each part of data[0..size) between FUZZ_SEP separators, at
 * most `max` parts; stops when fn returns non-zero. */
void fuzz_split(const uint8_t *data, size_t size, size_t max,
		int (*fn)(const char *part, size_t len, void *ctx), void *ctx);

#endif
