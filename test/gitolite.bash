# shellcheck shell=bash
# Sourced by the bats files, which use the variables set here (SC2034)
# and whose `run` sets status, output and stderr (SC2154).
# shellcheck disable=SC2034,SC2154
# Debian's gitolite3 behind a private sshd on loopback, set up as
# share/doc/hub-gitolite.md says (test/32-hubs.bats, test/37-review.bats).
# Load after helpers, conversation, hub and signing; $K holds the keys.

PEOPLE="admin coordinator executor reviewer"

# people_setup: signing_base (the work repository, payloads, no AMP_NOW:
# strict mode takes the time from the clock, a git identity, $K), git's
# default branch main; cds into the test's directory.
people_setup() {
	signing_base
	git config --global init.defaultBranch main
	cd "$BATS_TEST_TMPDIR" || return 1
}

# ssh_for KEY: the ssh command a clone runs to reach the gitolite sshd as
# the person holding $K/KEY (core.sshCommand).
ssh_for() {
	echo "ssh -F /dev/null -i $K/$1 -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
}

# start_gitolite_sshd: a private sshd on a free loopback port whose only
# keys are the ones gitolite writes (each runs gitolite-shell for its
# person), with HOME set to gitolite's home ($GL).  Sets GL_PORT, GL_URL.
start_gitolite_sshd() {
	local d=$BATS_TEST_TMPDIR/gl-sshd user
	user=$(id -un)
	GL_PORT=$(free_port)
	mkdir -p "$d"
	ssh-keygen -q -t ed25519 -N '' -C gitolite-host -f "$d/host_key"
	[ "$(id -u)" != 0 ] || mkdir -p /run/sshd
	sshd_config "$GL_PORT" "$d" "$GL/.ssh/authorized_keys" "SetEnv HOME=$GL" > "$d/config"
	/usr/sbin/sshd -f "$d/config" -E "$d/log" 3>&- || { cat "$d/log" >&2; return 1; }
	GL_URL=ssh://$user@127.0.0.1:$GL_PORT
	GIT_SSH_COMMAND="$(ssh_for admin)" wait_for_url "$GL_URL/gitolite-admin" ||
		{ echo "sshd did not listen on $GL_PORT" >&2; cat "$d/log" >&2; return 1; }
}

stop_gitolite_sshd() {
	local f=$BATS_TEST_TMPDIR/gl-sshd/sshd.pid
	[ -f "$f" ] || return 0
	kill "$(cat "$f")" 2> /dev/null || true
	rm -f "$f"
	GIT_SSH_COMMAND="$(ssh_for admin)" wait_for_url "$GL_URL/gitolite-admin" gone || true
}

# gitolite_setup: share/doc/hub-gitolite.md, steps 1 to 5, literally.
gitolite_setup() {
	local p amp
	amp=$(command -v amp)
	# 1. a key per person
	for p in $PEOPLE; do ssh-keygen -q -t ed25519 -N '' -C "$p" -f "$K/$p"; done
	# 2. gitolite, its rc: amp's and receive's git config keys, local code
	# for the repo-specific hooks
	GL=$BATS_TEST_TMPDIR/gitolite
	mkdir -p "$GL"
	HOME=$GL gitolite setup -pk "$K/admin.pub" > /dev/null 2>&1
	# shellcheck disable=SC2016 # gitolite.rc's own Perl, $ENV{HOME} literally
	sed -i -e "s/GIT_CONFIG_KEYS  *=>  *'',/GIT_CONFIG_KEYS => 'amp\\\\..* receive\\\\.maxInputSize receive\\\\.autogc',/" \
		-e 's/# LOCAL_CODE  *=>  *"$ENV{HOME}\/local",/LOCAL_CODE => "$ENV{HOME}\/local",/' \
		-e "s/# 'repo-specific-hooks',/'repo-specific-hooks',/" "$GL/.gitolite.rc"
	grep -q "^ *GIT_CONFIG_KEYS => 'amp" "$GL/.gitolite.rc"
	# shellcheck disable=SC2016
	grep -q '^ *LOCAL_CODE => "$ENV{HOME}/local"' "$GL/.gitolite.rc"
	grep -q "^ *'repo-specific-hooks'," "$GL/.gitolite.rc"
	# 3. amp's hooks, running the amp installed on the server
	mkdir -p "$GL/local/hooks/repo-specific"
	for p in pre-receive post-receive; do
		printf '#!/bin/sh\nexec %s hook %s\n' "$amp" "$p" > "$GL/local/hooks/repo-specific/amp-$p"
		chmod +x "$GL/local/hooks/repo-specific/amp-$p"
	done
	start_gitolite_sshd
	# 4. the admin's gitolite-admin: the keys, the allowed signers, the rules
	git -c core.sshCommand="$(ssh_for admin)" clone -q "$GL_URL/gitolite-admin" ga
	git -C ga config core.sshCommand "$(ssh_for admin)"
	mkdir -p ga/amp
	for p in $PEOPLE; do
		cp "$K/$p.pub" ga/keydir/
		printf '%s %s\n' "$p" "$(cut -d' ' -f1,2 "$K/$p.pub")" >> ga/amp/allowed_signers
	done
	cat > ga/conf/gitolite.conf <<CONF
repo gitolite-admin
    RW+     =   admin

@amp = admin coordinator executor reviewer

repo amp
    RW refs/amp/messages\$ refs/amp/errors\$ = @amp
    R       =   @amp
    config amp.requireSigned = true
    config amp.allowedSigners = $GL/.gitolite/amp/allowed_signers
    config receive.maxInputSize = 1048576
    config receive.autogc = false
    option hook.pre-receive = amp-pre-receive
    option hook.post-receive = amp-post-receive
CONF
	git -C ga add -A
	git -C ga commit -q -m "amp: a repository for the SSOT, its people, keys and rules"
	git -C ga push -q origin master 2> "$BATS_TEST_TMPDIR/ga-push.err" ||
		{ cat "$BATS_TEST_TMPDIR/ga-push.err"; return 1; }
	# 5. a clone per person, in strict mode with the person's key
	for p in $PEOPLE; do
		git -c core.sshCommand="$(ssh_for "$p")" clone -q "$GL_URL/amp" "$p" 2> /dev/null
		git -C "$p" config core.sshCommand "$(ssh_for "$p")"
		git -C "$p" config amp.role "$p"
		git -C "$p" config amp.allowedSigners "$BATS_TEST_TMPDIR/ga/amp/allowed_signers"
		git -C "$p" config amp.signingKey "$K/$p"
		git -C "$p" config amp.requireSigned true
		git -C "$p" config amp.syncVerify false # the hub's hook checked it
	done
	on admin amp init > /dev/null
	on admin amp sync > /dev/null
}

# turn PERSON CMD...: runs CMD in PERSON's clone, syncing before and after.
turn() {
	local p=$1
	shift
	on "$p" amp sync > /dev/null || return 1
	on "$p" "$@" || return 1
	on "$p" amp sync > /dev/null
}
