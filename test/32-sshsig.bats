#!/usr/bin/env bats
# SSH signatures in process (issue 32, lib/store/sshsig.c): with Ed25519
# keys, strict mode signs records and commits and verifies them without
# running ssh-keygen, and what it writes and accepts is what ssh-keygen
# writes and accepts.  Everything else is still ssh-keygen's: RSA keys,
# passphrase-protected keys (in ssh-agent), and every signature that does
# not verify, refused with ssh-keygen's own reason.  The checks are against
# the real ssh-keygen; its runs are counted by a wrapper on PATH.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load hub
load signing

setup() {
	signing_setup
	role_signers
	cd "$BATS_TEST_TMPDIR" || return 1
	HUB_BASE=$BATS_TEST_TMPDIR
	HUB=$BATS_TEST_TMPDIR/hub.git
	# ssh-keygen, counted: each run is a line of $KEYGEN_LOG
	KEYGEN_LOG=$BATS_TEST_TMPDIR/keygen.log
	mkdir -p wrap
	printf '#!/bin/sh\necho "$*" >> "%s"\nexec %s "$@"\n' "$KEYGEN_LOG" "$(command -v ssh-keygen)" > wrap/ssh-keygen
	chmod +x wrap/ssh-keygen
}

teardown() {
	[ -z "${AGENT_PID:-}" ] || kill "$AGENT_PID" 2> /dev/null || true
	fsck_all_repos
}

# counted CMD...: runs CMD with the counting ssh-keygen first on PATH,
# after emptying the log.
counted() {
	: > "$KEYGEN_LOG"
	PATH="$BATS_TEST_TMPDIR/wrap:$PATH" "$@"
}

# keygen_runs: how many times ssh-keygen ran since `counted`.
keygen_runs() {
	wc -l < "$KEYGEN_LOG" | tr -d ' '
}

# A strict hub at $HUB and an initialised SSOT on it, from the admin's
# clone `adm`.
strict_setup() {
	strict_hub "$HUB"
	strict_clone "$HUB" adm admin
	on adm amp init > /dev/null
	on adm amp sync > /dev/null
}

# dispatched: the coordinator's clone `co` dispatches $T to the executor
# through the hub; the executor's clone `exe` has it.
dispatched() {
	strict_clone_synced co coordinator
	on co amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	on co amp sync > /dev/null
	strict_clone_synced exe executor
}

# strict_clone_synced NAME KEY: a clone of $HUB in strict mode writing with
# $K/KEY, after its first amp sync.
strict_clone_synced() {
	strict_clone "$HUB" "$1" "$2"
	on "$1" amp sync > /dev/null
}

# in_executor_clone: a dispatched $T; then in the executor's clone, $tip its
# messages ref, $dir the directory of its records 000090..000099, and
# ../hb1.json an executor's heartbeat record.
in_executor_clone() {
	dispatched
	cd exe || return 1
	tip=$(git rev-parse refs/amp/messages)
	dir=$(dirname "$(record_path "$T" 000090.ctl.x.json)")
	heartbeat_record 1
}

# commit_sig REPO COMMIT OUT: the commit's signature (its gpgsig header)
# into OUT.sig and the bytes it signs into OUT.data, as git verify-commit
# splits them.
commit_sig() {
	git -C "$1" cat-file commit "$2" | python3 -c '
import sys
raw = sys.stdin.buffer.read()
head, body = raw.split(b"\n\n", 1)
data, sig, insig = [], [], False
for line in head.split(b"\n"):
    if line.startswith(b"gpgsig "):
        insig = True; sig.append(line[7:])
    elif insig and line.startswith(b" "):
        sig.append(line[1:])
    else:
        insig = False; data.append(line)
open(sys.argv[1] + ".data", "wb").write(b"\n".join(data) + b"\n\n" + body)
open(sys.argv[1] + ".sig", "wb").write(b"\n".join(sig) + b"\n")
' "$3"
}

# forge_sig PARENT PATH RECORD SIGFILE COMMITKEY: a commit on PARENT (in the
# current repository) adding RECORD at PATH with SIGFILE as its record
# signature, the commit signed by ssh-keygen (git commit-tree -S) with
# $K/COMMITKEY as the executor; prints its id.
forge_sig() {
	local idx=$BATS_TEST_TMPDIR/forge.idx tree
	GIT_INDEX_FILE=$idx git read-tree "$1"
	GIT_INDEX_FILE=$idx git update-index --add --cacheinfo "100644,$(git hash-object -w "$3"),$2"
	GIT_INDEX_FILE=$idx git update-index --add --cacheinfo "100644,$(git hash-object -w "$4"),$2.sig"
	tree=$(GIT_INDEX_FILE=$idx git write-tree)
	rm -f "$idx"
	GIT_AUTHOR_NAME=executor GIT_AUTHOR_EMAIL=executor@amp.invalid \
		git -c gpg.format=ssh -c user.signingkey="$K/$5" commit-tree -S "$tree" -p "$1" -m "forged"
}

# heartbeat_record N: an executor's heartbeat record of $T into ../hbN.json.
heartbeat_record() {
	printf '{"protocol_version": "AMP/1.0", "type": "heartbeat", "task_id": "%s", "from": "executor", "timestamp": "%s", "note": "%s"}\n' \
		"$T" "$(date -u +%Y-%m-%dT%H:%M:%S+00:00)" "$1" > "../hb$1.json"
}

@test "a strict send with an Ed25519 key runs no ssh-keygen, with its .pub file beside it or not: its record signature and its commit signature are byte for byte what ssh-keygen -Y sign writes, and ssh-keygen -Y verify and git verify-commit accept them; the strict hub's hook verifies the push with no ssh-keygen run" {
	strict_setup
	strict_clone_synced co coordinator
	counted on co amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > d.out
	[ "$(keygen_runs)" = 0 ]
	D=$(cat d.out)
	counted on co amp sync > /dev/null
	[ "$(keygen_runs)" = 0 ]
	[ "$(git -C co rev-parse refs/amp/messages)" = "$(git -C "$HUB" rev-parse refs/amp/messages)" ]
	rec=$(git -C "$HUB" ls-tree -r --name-only refs/amp/messages | grep "\.msg\.$D\.json$")
	git -C "$HUB" show "refs/amp/messages:$rec" > rec.json
	git -C "$HUB" show "refs/amp/messages:$rec.sig" > rec.sig
	ssh-keygen -q -Y sign -n amp-record -f "$K/coordinator" < rec.json > keygen.sig
	cmp rec.sig keygen.sig
	run -0 ssh-keygen -Y verify -f "$K/signers" -I coordinator -n amp-record -s rec.sig < rec.json
	assert_output --partial 'Good "amp-record" signature for coordinator with ED25519 key'
	# the commit: its signature is ssh-keygen's of the same bytes
	commit_sig "$HUB" refs/amp/messages c
	ssh-keygen -q -Y sign -n git -f "$K/coordinator" < c.data > keygen-c.sig
	cmp c.sig keygen-c.sig
	run -0 git -C "$HUB" -c gpg.ssh.allowedSignersFile="$K/signers" verify-commit refs/amp/messages
	run -0 git -C "$HUB" -c gpg.ssh.allowedSignersFile="$K/signers" log -1 --format='%G? %GS' refs/amp/messages
	assert_output "G coordinator"
	# a key file without its .pub beside it: its public key is read from
	# the private key in process too
	mv "$K/coordinator.pub" "$K/coordinator.pub.away"
	counted on co amp send task_dispatch --task T-2026-045 --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	[ "$(keygen_runs)" = 0 ]
	mv "$K/coordinator.pub.away" "$K/coordinator.pub"
}

@test "ssh-keygen's own Ed25519 signatures, of a record (ssh-keygen -Y sign) and of its commit (git commit-tree -S), are verified in process: the strict hub's hook takes the push, amp fsck and amp sync accept them, with no ssh-keygen run and nothing kept in <git dir>/amp/record-sigs" {
	strict_setup
	in_executor_clone
	ssh-keygen -q -Y sign -n amp-record -f "$K/executor" < ../hb1.json > ../hb1.sig
	c=$(forge_sig "$tip" "$dir/000090.ctl.heartbeat-k1.json" ../hb1.json ../hb1.sig executor)
	counted git push -q origin "$c:refs/amp/messages"
	[ "$(keygen_runs)" = 0 ]
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$c" ]
	cd ..
	strict_clone "$HUB" w system
	counted on w amp sync > /dev/null
	[ "$(keygen_runs)" = 0 ]
	[ "$(git -C w rev-parse refs/amp/messages)" = "$c" ]
	counted on w amp fsck --proofs > fsck.out
	[ "$(keygen_runs)" = 0 ]
	run -0 cat fsck.out
	assert_line --regexp "^amp fsck: [0-9a-f]{7}: $dir/000090\.ctl\.heartbeat-k1\.json: record signature by executor$"
	# checked in process, nothing is kept: no cache to read on the next run
	[ ! -e w/.git/amp/record-sigs ]
}

@test "a record signature with one flipped byte, of the wrong namespace, by a key not in the allowed signers, with its armor cut short, with trailing data or a length past its end, or by a key whose valid-before is past, is refused by the strict hub's hook as ssh-keygen -Y verify refuses it, with ssh-keygen's reason" {
	strict_setup
	ssh-keygen -q -t ed25519 -N '' -C stranger -f "$K/stranger"
	ssh-keygen -q -t ed25519 -N '' -C retired -f "$K/retired"
	printf 'executor valid-before="20200101" %s\n' "$(cut -d' ' -f1,2 "$K/retired.pub")" >> "$K/signers"
	in_executor_clone
	ssh-keygen -q -Y sign -n amp-record -f "$K/executor" < ../hb1.json > ../good.sig
	# the mutations, each a file ../bad-NAME.sig
	python3 - ../good.sig <<'PY'
import base64, struct, sys
text = open(sys.argv[1]).read()
lines = text.split("\n")
body = "".join(lines[1:-2])
blob = base64.b64decode(body)
def armor(b, name):
    s = base64.b64encode(b).decode()
    out = "-----BEGIN SSH SIGNATURE-----\n" + "\n".join(s[i:i + 70] for i in range(0, len(s), 70)) + "\n-----END SSH SIGNATURE-----\n"
    open("../bad-" + name + ".sig", "w").write(out)
flipped = bytearray(blob); flipped[-10] ^= 0x01
armor(bytes(flipped), "flipped")
armor(blob + b"\0\0\0\0", "trailing")
# the length of the last string (the signature) claims more than is there
long = bytearray(blob); long[len(blob) - 87:len(blob) - 83] = struct.pack(">I", 0xffffff)
armor(bytes(long), "length")
open("../bad-truncated.sig", "w").write(text[:len(text) - 60])
PY
	ssh-keygen -q -Y sign -n git -f "$K/executor" < ../hb1.json > ../bad-namespace.sig
	ssh-keygen -q -Y sign -n amp-record -f "$K/stranger" < ../hb1.json > ../bad-stranger.sig
	ssh-keygen -q -Y sign -n amp-record -f "$K/retired" < ../hb1.json > ../bad-retired.sig
	n=90
	for bad in flipped namespace stranger truncated trailing length retired; do
		# ssh-keygen itself refuses it
		run ! ssh-keygen -Y verify -f "$K/signers" -I executor -n amp-record -s "../bad-$bad.sig" < ../hb1.json
		n=$((n + 1))
		c=$(forge_sig "$tip" "$dir/0000$n.ctl.heartbeat-$bad.json" ../hb1.json "../bad-$bad.sig" executor)
		counted run -1 git push origin "$c:refs/amp/messages"
		assert_output --partial "$dir/0000$n.ctl.heartbeat-$bad.json: its record signature: "
		assert_output --partial "(ssh-keygen: "
		[ "$(keygen_runs)" -gt 0 ] # the refusal is ssh-keygen's
		[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$tip" ]
	done
	# and the good one is taken, in process
	c=$(forge_sig "$tip" "$dir/000099.ctl.heartbeat-good.json" ../hb1.json ../good.sig executor)
	counted git push -q origin "$c:refs/amp/messages"
	[ "$(keygen_runs)" = 0 ]
	[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$c" ]
}

@test "an RSA key and a passphrase-protected Ed25519 key held in ssh-agent still sign and verify through ssh-keygen: their strict writes reach the strict hub, and ssh-keygen verifies their record signatures" {
	ssh-keygen -q -t rsa -b 2048 -N '' -C executor-rsa -f "$K/exec-rsa"
	ssh-keygen -q -t ed25519 -N 'secret phrase' -C coordinator-pw -f "$K/co-pw"
	printf 'executor %s\n' "$(cut -d' ' -f1,2 "$K/exec-rsa.pub")" >> "$K/signers"
	printf 'coordinator %s\n' "$(cut -d' ' -f1,2 "$K/co-pw.pub")" >> "$K/signers"
	strict_setup
	# the passphrase-protected key, in an agent started for the test
	eval "$(ssh-agent -s)" > /dev/null
	AGENT_PID=$SSH_AGENT_PID
	printf '#!/bin/sh\necho "secret phrase"\n' > askpass
	chmod +x askpass
	SSH_ASKPASS=$PWD/askpass SSH_ASKPASS_REQUIRE=force ssh-add -q "$K/co-pw" < /dev/null
	strict_clone_synced co co-pw
	counted on co amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > d.out
	D=$(cat d.out)
	grep -q -- "-Y sign -n amp-record -f $K/co-pw" "$KEYGEN_LOG"
	run -0 on co amp sync
	kill "$AGENT_PID"
	AGENT_PID=
	strict_clone_synced exe exec-rsa
	counted on exe amp ack "$D" --from executor > /dev/null
	grep -q -- "-Y sign -n amp-record -f $K/exec-rsa" "$KEYGEN_LOG"
	run -0 on exe amp sync
	# on the hub: each record's signature, checked by ssh-keygen itself
	for kind in "msg\.$D" "ack\.$D"; do
		rec=$(git -C "$HUB" ls-tree -r --name-only refs/amp/messages | grep "\.$kind\.json$")
		from=$(git -C "$HUB" show "refs/amp/messages:$rec" | python3 -c 'import json,sys; print(json.load(sys.stdin)["from"])')
		git -C "$HUB" show "refs/amp/messages:$rec.sig" > rec.sig
		git -C "$HUB" show "refs/amp/messages:$rec" | ssh-keygen -Y verify -f "$K/signers" -I "$from" -n amp-record -s rec.sig
	done
	run -0 git -C "$HUB" -c gpg.ssh.allowedSignersFile="$K/signers" log --format='%G? %GS' refs/amp/messages
	assert_line "G executor"
	assert_line "G coordinator"
}

@test "allowed-signers options amp reads itself (valid-after, valid-before, namespaces, quoted and comma-separated) verify in process; lines it leaves to ssh-keygen (quoted principals, patterns, cert-authority) and a namespaces= that excludes amp-record are decided by ssh-keygen, as ssh-keygen -Y verify decides them" {
	strict_setup
	for k in opt quoted pattern ca ns; do ssh-keygen -q -t ed25519 -N '' -C "$k" -f "$K/k-$k"; done
	key() { cut -d' ' -f1,2 "$K/k-$1.pub"; }
	{
		printf 'executor valid-after="20200101",valid-before="20991231235959Z",namespaces="git,amp-record" %s\n' "$(key opt)"
		printf '"executor" %s\n' "$(key quoted)"
		printf 'exec* %s\n' "$(key pattern)"
		printf 'executor cert-authority %s\n' "$(key ca)"
		printf 'executor namespaces="git" %s\n' "$(key ns)"
	} >> "$K/signers"
	in_executor_clone
	n=90
	for k in opt quoted pattern ca ns; do
		ssh-keygen -q -Y sign -n amp-record -f "$K/k-$k" < ../hb1.json > "../$k.sig"
		n=$((n + 1))
		c=$(forge_sig "$tip" "$dir/0000$n.ctl.heartbeat-$k.json" ../hb1.json "../$k.sig" executor)
		if ssh-keygen -Y verify -f "$K/signers" -I executor -n amp-record -s "../$k.sig" < ../hb1.json > /dev/null 2>&1; then
			counted run -0 git push origin "$c:refs/amp/messages"
			[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$c" ]
			git -C "$HUB" update-ref refs/amp/messages "$tip"
		else
			counted run -1 git push origin "$c:refs/amp/messages"
			assert_output --partial "heartbeat-$k.json: its record signature: "
			[ "$(git -C "$HUB" rev-parse refs/amp/messages)" = "$tip" ]
		fi
		echo "$k $status $(keygen_runs)" >> ../decisions
	done
	run -0 sed 's/ [1-9][0-9]*$/ some/' ../decisions
	assert_output "opt 0 0
quoted 0 some
pattern 0 some
ca 1 some
ns 1 some"
}

@test "a commit signature verified once is not verified again: with an RSA key (ssh-keygen's), a second amp fsck runs no ssh-keygen, the commits' results kept in <git dir>/amp/record-sigs beside the records'; a change to the allowed-signers file drops them" {
	ssh-keygen -q -t rsa -b 2048 -N '' -C coordinator-rsa -f "$K/co-rsa"
	printf 'coordinator %s\n' "$(cut -d' ' -f1,2 "$K/co-rsa.pub")" >> "$K/signers"
	strict_setup
	strict_clone_synced co co-rsa
	on co amp send task_dispatch --task $T --from coordinator --to executor --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	on co amp sync > /dev/null
	strict_clone_synced w system
	counted on w amp fsck > /dev/null
	counted on w amp fsck > /dev/null
	[ "$(keygen_runs)" = 0 ]
	c=$(git -C w rev-parse refs/amp/messages)
	run -0 grep -c "^$c commit:" w/.git/amp/record-sigs
	# the file changes (a key is added): every signature is checked again
	printf '# rotated\n' >> "$K/signers"
	counted on w amp fsck > /dev/null
	[ "$(keygen_runs)" -gt 0 ]
	grep -q -- "-Y verify -n git" "$KEYGEN_LOG"
	counted on w amp fsck > /dev/null
	[ "$(keygen_runs)" = 0 ]
}
