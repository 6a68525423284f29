/*
 * sync_ssh.h - one ssh connection for the git runs of an amp sync and the
 * syncs after it (OpenSSH's ControlMaster), where the user's ssh allows
 * it (sync_ssh.c).  Private to lib/sync/.
 */
#ifndef AMP_SYNC_SSH_H
#define AMP_SYNC_SSH_H

#include "base/error.h"
#include "store/store.h"

/* What amp_sync_ssh_begin changed in amp's environment, to undo. */
struct amp_sync_ssh {
	int set;       /* GIT_SSH_COMMAND was set by amp_sync_ssh_begin */
	char *old;     /* its value before (malloc'd), NULL when unset */
};

/*
 * git config amp.sshControl: "auto" (the default), "true" or "false".
 * When `remote` is reached over ssh and multiplexing applies (sync_ssh.c
 * says when), sets GIT_SSH_COMMAND for the git programs amp runs next to
 * the user's ssh command with ControlMaster=auto, a ControlPath in the
 * clone's private .git/amp/ssh/ (or, when that path is too long for a
 * socket, under a private runtime directory) and a short ControlPersist.
 * Otherwise changes nothing.  AMP_EUSAGE for a bad setting; a socket
 * directory that cannot be made private only turns multiplexing off.
 */
int amp_sync_ssh_begin(amp_store *st, const char *remote, struct amp_sync_ssh *s,
		       amp_error *err);

/* Puts GIT_SSH_COMMAND back as it was before amp_sync_ssh_begin. */
void amp_sync_ssh_end(struct amp_sync_ssh *s);

#endif
