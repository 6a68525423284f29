# shellcheck shell=bash
# Sourced by the bats files, which use the variables set here (SC2034)
# and whose `run` sets status, output and stderr (SC2154).
# shellcheck disable=SC2034,SC2154
# Real servers on loopback for the sync suites and share/bench-hub.sh: a
# bare hub served by `git daemon --enable=receive-pack` and by a private
# OpenSSH sshd, each on a free port of 127.0.0.1, started and stopped by
# the caller.  Everything (keys, config, pid files, logs) lives in
# $HUB_BASE, by default the test's tmpdir; the hub is $HUB_BASE/hub.git.
# Load after helpers (or set HUB_BASE first, outside bats).

HUB_BASE=${HUB_BASE:-${BATS_TEST_TMPDIR:-}}

# on NAME CMD...: runs CMD in clone NAME (a directory of $HUB_BASE).
on() {
	local name=$1
	shift
	(cd "$HUB_BASE/$name" && "$@")
}

# records GITDIR: the identities (kind.id) of every record on the messages
# ref, sorted, read by git (not by amp).
records() {
	git -C "$1" ls-tree -r --name-only refs/amp/messages |
		sed -n 's#^tasks/.*/[0-9]\{6\}\.\(.*\)\.json$#\1#p' | sort
}

# free_port: a TCP port of 127.0.0.1 nobody listens on now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for_url URL [gone]: until git ls-remote URL succeeds (or, with
# "gone", fails), at most 10 s.
wait_for_url() {
	local _
	for _ in $(seq 100); do
		if git ls-remote "$1" > /dev/null 2>&1; then
			[ "${2:-}" = gone ] || return 0
		else
			[ "${2:-}" != gone ] || return 0
		fi
		sleep 0.1
	done
	return 1
}

# start_daemon [OPTION...]: serves $HUB_BASE over git:// on a free loopback
# port, with git daemon's OPTIONs added; sets PORT (kept when set, to come
# back on the same one) and URL.
start_daemon() {
	: "${PORT:=$(free_port)}"
	URL=git://127.0.0.1:$PORT/hub.git
	git daemon --reuseaddr --enable=receive-pack --export-all \
		--base-path="$HUB_BASE" --port="$PORT" --listen=127.0.0.1 \
		--detach --pid-file="$HUB_BASE/daemon.pid" "$@" "$HUB_BASE"
	wait_for_url "$URL" || { echo "git daemon did not listen on $PORT" >&2; return 1; }
}

# stop_daemon: stops the daemon start_daemon started, if any, and waits
# until its port is free again.
stop_daemon() {
	local f=$HUB_BASE/daemon.pid
	[ -f "$f" ] || return 0
	kill "$(cat "$f")" 2> /dev/null || true
	rm -f "$f"
	wait_for_url "$URL" gone || true
}

# sshd_config PORT DIR AUTHORIZED_KEYS [LINE...]: a private sshd's config on
# 127.0.0.1:PORT, its host key and pid file in DIR, key login only for the
# user this runs as, LINEs added (HUB_SSHD_LOGLEVEL: its LogLevel, ERROR
# unless set; INFO logs each login).
sshd_config() {
	local port=$1 d=$2 keys=$3 line
	shift 3
	cat <<CONF
ListenAddress 127.0.0.1
Port $port
HostKey $d/host_key
PidFile $d/sshd.pid
AuthorizedKeysFile $keys
AllowUsers $(id -un)
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
PrintMotd no
MaxStartups 400
MaxSessions 200
LogLevel ${HUB_SSHD_LOGLEVEL:-ERROR}
CONF
	for line in "$@"; do echo "$line"; done
}

# start_sshd: the hub over ssh, through a real sshd (Debian openssh-server)
# with a private config: a throw-away host key and user key, password and
# PAM off, key login for the user the test runs as.  Sets SSH_PORT (kept
# when set), SSH_URL, and exports GIT_SSH_COMMAND so that every git (and so
# every amp sync) of the caller uses the user key.  The client passes
# AMP_NOW and AMP_SCHEMA_DIR on, so the hub's hook sees the test's clock and
# schemas (an asan build's programs are not beside the schemas), and
# AMP_TRACE (share/bench-hub.sh reads the hook's trace of its joins).  The
# sessions run with the caller's HOME, not the account's: bash reads the
# account's ~/.bashrc for every command sshd runs, and a heavy one (this
# machine's root runs pyenv's init there: 160 ms of CPU a session, against
# 10 ms without) would be measured as the cost of every git over ssh.
start_sshd() {
	local d=$HUB_BASE/sshd user
	user=$(id -un)
	: "${SSH_PORT:=$(free_port)}"
	if [ ! -f "$d/config" ]; then
		mkdir -p "$d"
		ssh-keygen -q -t ed25519 -N '' -C amp-test-host -f "$d/host_key" || return 1
		ssh-keygen -q -t ed25519 -N '' -C amp-test-user -f "$d/user_key" || return 1
		cp "$d/user_key.pub" "$d/authorized_keys"
	fi
	# sshd's privilege separation directory, which the service unit would
	# create; only root may, and only root needs it.
	[ "$(id -u)" != 0 ] || mkdir -p /run/sshd
	sshd_config "$SSH_PORT" "$d" "$d/authorized_keys" "AcceptEnv AMP_NOW AMP_SCHEMA_DIR AMP_TRACE" "SetEnv HOME=$HOME" > "$d/config"
	/usr/sbin/sshd -f "$d/config" -E "$d/log" 3>&- || { cat "$d/log" >&2; return 1; }
	SSH_URL=ssh://$user@127.0.0.1:$SSH_PORT$HUB_BASE/hub.git
	export GIT_SSH_COMMAND="ssh -F /dev/null -i $d/user_key -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o SendEnv=AMP_NOW -o SendEnv=AMP_SCHEMA_DIR -o SendEnv=AMP_TRACE"
	wait_for_url "$SSH_URL" || { echo "sshd did not listen on $SSH_PORT" >&2; cat "$d/log" >&2; return 1; }
}

# stop_sshd: stops the sshd start_sshd started, if any (the sessions it
# forked end with their clients), and waits until its port is free again.
stop_sshd() {
	local f=$HUB_BASE/sshd/sshd.pid
	[ -f "$f" ] || return 0
	kill "$(cat "$f")" 2> /dev/null || true
	rm -f "$f"
	wait_for_url "$SSH_URL" gone || true
}

# stop_servers: for teardown, whatever was started.
stop_servers() {
	stop_daemon
	stop_sshd
}
