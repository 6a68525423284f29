/*
 * arrivals.c - the hub's notes of when pushes arrived (arrivals.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "arrivals.h"

#define NOTE_KEY "Amp-Arrived-Ms: "

/* How often a note is tried again when another hook moved the ref. */
#define ARRIVALS_TRIES 20

/* One try: 1 when written or there already, 0 when the ref moved, -1 on
 * error. */
static int note_once(git_repository *repo, const git_oid *commit, int64_t ms)
{
	git_reference *ref = NULL;
	git_commit *parent = NULL;
	git_note *old = NULL;
	git_signature *sig = NULL;
	git_oid notes, blob, *had = NULL, had_id;
	char text[160], when[AMP_TIME_BUFSZ], msg[120];
	int rc = -1, got = git_reference_name_to_id(&had_id, repo, AMP_ARRIVALS_REF);

	if (got == 0) {
		had = &had_id;
		if (git_commit_lookup(&parent, repo, had) < 0)
			goto cleanup;
		if (git_note_commit_read(&old, repo, parent, commit) == 0) {
			rc = 1; /* the first arrival stands */
			goto cleanup;
		}
	} else if (got != GIT_ENOTFOUND) {
		goto cleanup;
	}
	snprintf(text, sizeof(text), NOTE_KEY "%" PRId64 "\nAmp-Arrived: %s\n", ms,
		 amp_time_format(ms, when));
	snprintf(msg, sizeof(msg), "amp hook: arrived %s", when);
	if (git_signature_new(&sig, "amp hook", "amp-hook@hub.invalid", (git_time_t)(ms / 1000), 0) < 0 ||
	    git_note_commit_create(&notes, &blob, repo, parent, sig, sig, commit, text, 0) < 0)
		goto cleanup;
	/* Compare and swap: a hook that moved the ref first keeps its note. */
	if (had)
		got = git_reference_create_matching(&ref, repo, AMP_ARRIVALS_REF, &notes, 1, had, msg);
	else
		got = git_reference_create(&ref, repo, AMP_ARRIVALS_REF, &notes, 0, msg);
	rc = got == 0 ? 1 : (got == GIT_EMODIFIED || got == GIT_EEXISTS) ? 0 : -1;
cleanup:
	git_reference_free(ref);
	git_note_free(old);
	git_signature_free(sig);
	git_commit_free(parent);
	return rc;
}

int amp_arrivals_note(git_repository *repo, const git_oid *commit, int64_t ms, amp_error *err)
{
	int i, rc = 0;

	for (i = 0; i < ARRIVALS_TRIES && (rc = note_once(repo, commit, ms)) == 0; i++)
		git_error_clear();
	if (rc == 1)
		return AMP_OK;
	if (rc < 0)
		return amp_error_git(err, AMP_EIO, "cannot note the arrival on %s", AMP_ARRIVALS_REF);
	return amp_error_set(err, AMP_EIO, AMP_ARRIVALS_REF, "moved by other hooks %d times in a row",
			     ARRIVALS_TRIES);
}

void amp_arrivals_open(amp_arrivals *a, git_repository *repo)
{
	git_oid id;

	a->repo = repo;
	a->notes = NULL;
	if (git_reference_name_to_id(&id, repo, AMP_ARRIVALS_REF) < 0 ||
	    git_commit_lookup(&a->notes, repo, &id) < 0)
		a->notes = NULL;
	git_error_clear();
}

void amp_arrivals_close(amp_arrivals *a)
{
	git_commit_free(a->notes);
	a->notes = NULL;
}

int64_t amp_arrivals_get(const amp_arrivals *a, const git_oid *commit)
{
	git_note *note = NULL;
	const char *text;
	char *end;
	long long ms = -1;

	if (!a->notes)
		return -1;
	if (git_note_commit_read(&note, a->repo, a->notes, commit) < 0) {
		git_error_clear();
		return -1;
	}
	/* Hostile input too: a clone takes the hub's notes as they come. */
	text = git_note_message(note);
	if (text && !strncmp(text, NOTE_KEY, strlen(NOTE_KEY))) {
		ms = strtoll(text + strlen(NOTE_KEY), &end, 10);
		if (end == text + strlen(NOTE_KEY) || *end != '\n' || ms < 0 ||
		    ms > AMP_CLOCK_MAX_SEC * 1000LL)
			ms = -1;
	}
	git_note_free(note);
	return ms;
}

int amp_arrivals_take(git_repository *repo, const char *mirror, amp_error *err)
{
	git_reference *ref = NULL;
	git_oid id;

	if (git_reference_name_to_id(&id, repo, mirror) < 0) {
		git_error_clear();
		return AMP_OK;
	}
	if (git_reference_create(&ref, repo, AMP_ARRIVALS_REF, &id, 1, "amp sync: the hub's arrivals") < 0)
		return amp_error_git(err, AMP_EIO, "cannot update %s", AMP_ARRIVALS_REF);
	git_reference_free(ref);
	return AMP_OK;
}
