#!/usr/bin/env bats
# Issue 34, "one look" and "a format programs can read": on a terminal every
# human line amp prints fits its width (80 columns unless the terminal says
# otherwise), columns that do not fit are shortened (relative times, a cut
# at a character with an ellipsis), --wide keeps the long form, and one
# time format serves every command.  The terminal is a real one: util-linux
# script(1) runs the commands on a pseudo-terminal whose width stty sets.

bats_require_minimum_version 1.5.0

load helpers
load conversation

setup() {
	export AMP_PAGER=cat
}

# on_tty COLS SCRIPT: runs SCRIPT with bash on a terminal COLS wide, stdin
# and stdout being that terminal; output is what it printed, without the
# terminal's carriage returns.
on_tty() {
	printf 'stty cols %s rows 50\n%s\n' "$1" "$2" > "$BATS_TEST_TMPDIR/tty.sh"
	run script -qec "bash -euo pipefail $BATS_TEST_TMPDIR/tty.sh" /dev/null < /dev/null
	output=${output//$'\r'/}
	mapfile -t lines <<< "$output"
}

# The width of the widest line of $output, in characters.
widest_line() {
	python3 -c 'import sys; print(max([len(l) for l in sys.stdin.read().split("\n")] + [0]))' <<< "$output"
}

@test "the README's tour on an 80-column terminal: no line over 80 columns, every message id whole" {
	run -0 python3 "$AMP_SRC/test/doc-claims.py" blocks "$AMP_SRC/README.md" "<!-- tour -->" "<!-- /tour -->" 5
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/tour.sh"
	cd "$BATS_TEST_TMPDIR"
	on_tty 80 "bash -euo pipefail $BATS_TEST_TMPDIR/tour.sh"
	[ "$status" -eq 0 ] || fail "$output"
	[ "$(widest_line)" -le 80 ] || fail "$(widest_line) columns: $output"
	[[ $output != *$'\e'* ]] || fail "terminal control in: $output"
	cd tour-repo
	# what the agents act on is there in full: the ids of the inbox,
	# of amp status and of amp log
	D=$(amp log --json --type task_dispatch | python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["id"])')
	V=$(amp log --json --type review_verdict | python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["id"])')
	[[ $output == *"$D  from coordinator  "*"due in 4m"* ]] || fail "$output"
	[[ $output == *"  $D  "*"acked after"* ]] || fail "$output"
	[[ $output == *" coordinator  ack  $V"* ]] || fail "$output"
	[[ $output == *"Initialized AMP/1.0 store in $BATS_TEST_TMPDIR/tour-repo/.git/"* ]] || fail "$output"
}

@test "the tutorial's team on a hub prints no line over 80 columns on a terminal" {
	run -0 python3 "$AMP_SRC/test/doc-claims.py" blocks "$AMP_SRC/share/man/amp-tutorial.7.scd" "; hub" "; /hub"
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/hub.sh"
	git config --global user.name tester
	git config --global user.email tester@example.invalid
	cd "$BATS_TEST_TMPDIR"
	on_tty 80 "bash -euo pipefail $BATS_TEST_TMPDIR/hub.sh 2>&1"
	[ "$status" -eq 0 ] || fail "$output"
	[[ $output == *"task_dispatch-T-2026-001-"*"  from coordinator  "* ]] || fail "$output"
	[ "$(widest_line)" -le 80 ] || fail "$(widest_line) columns: $output"
}

# A task with a dispatch, its ACK, a result and an escalation, at T0 + 60 s.
conversation() {
	make_ssot
	send_dispatch
	amp ack "$D" --from executor > /dev/null
	at 30
	R=$(amp send task_result --task $T --from executor --payload "$BATS_TEST_TMPDIR/p/result.json")
	at 60
}

@test "--wide on a terminal prints what a pipe gets: the absolute times and every column" {
	conversation
	for cmd in "log" "status $T" "inbox coordinator" "show $R" "ready"; do
		run -0 amp $cmd
		piped=$output
		[[ $piped == *"2026-02-26 14:32:"* ]] || fail "$cmd: $piped"
		on_tty 80 "amp $cmd --wide"
		assert_success
		assert_output "$piped"
		# and the 80-column form is another one (amp show, the detail
		# view, has room for absolute times), that fits
		on_tty 80 "amp $cmd"
		assert_success
		[ "$output" != "$piped" ] || [[ $cmd == show* ]] || fail "$cmd: the same on a terminal: $output"
		[ "$(widest_line)" -le 80 ] || fail "$cmd: $(widest_line) columns: $output"
	done
}

@test "a terminal's own width is used: 60 columns fit 60, and the times are relative to AMP_NOW" {
	conversation
	on_tty 60 "amp log; amp status $T; amp inbox coordinator"
	assert_success
	[ "$(widest_line)" -le 60 ] || fail "$(widest_line) columns: $output"
	# what does not fit is cut, with an ellipsis at the 60th column
	assert_line "$(git rev-parse --short=7 refs/amp/messages) 30s ago   executor     msg  task_result-T-2026-044-…"
	assert_line "  $D  1m ago    acked a…"
	assert_line "$R  from executor     30s…"
}

@test "a line too long for the terminal is cut at a character, with an ellipsis, never inside UTF-8 or an escape" {
	make_ssot
	python3 - "$BATS_TEST_TMPDIR/p/dispatch.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["description"] = "héllo wörld " * 20 + "\u001b]0;pwned\u0007 end"
json.dump(d, open(sys.argv[1], "w"))
PY
	send_dispatch
	for cols in 37 38 39 40 41; do
		on_tty $cols "amp show $D --color=always"
		assert_success
		printf '%s' "$output" > "$BATS_TEST_TMPDIR/out"
		run -0 python3 - "$BATS_TEST_TMPDIR/out" "$cols" <<'PY'
import re, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")   # fails on a cut inside UTF-8
cols = int(sys.argv[2])
cut = 0
for line in text.split("\n"):
    # the only escapes are amp's own colours, whole
    assert re.fullmatch(r"(\x1b\[[0-9;]*m|[^\x1b])*", line), repr(line)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", line)
    assert len(plain) <= cols, (len(plain), line)
    if plain.endswith("\u2026"):
        cut += 1
        assert len(plain) == cols, line
        # a cut line with colour ends with a reset
        if "\x1b[" in line:
            assert line.endswith("\x1b[0m"), repr(line)
print(cut)
PY
		[ "$output" -ge 1 ] || fail "$cols columns: nothing was cut"
	done
	# the description, whole, with its escape written as text, in a pipe
	run -0 amp show $D
	assert_output --partial '\\u001B]0;pwned\\u0007 end'
}

@test "one time format: ready, claim, show, status, inbox and log print a time the same way" {
	make_ssot
	send_dispatch
	at 5
	run -0 amp claim $T --agent alice --ttl 600
	assert_output "claimed $T as alice, expires 2026-02-26 14:42:12 +0000 (claim-1772116332000)"
	run -0 amp ready
	refute_output --partial T-
	run -0 amp release $T --agent alice
	run -0 amp ready
	assert_output "$T  P2  dispatched        since 2026-02-26 14:32:07 +0000"
	run -0 amp show $D
	assert_line "sent        2026-02-26 14:32:07 +0000  (5s ago)"
	assert_line "ack         required within 5m: due in 4m, at 2026-02-26 14:37:07 +0000"
	run -0 amp status $T
	assert_line --partial "  2026-02-26 14:32:07 +0000  task_dispatch "
	run -0 amp inbox executor
	assert_line --partial "2026-02-26 14:32:07 +0000  task_dispatch "
	run -0 amp log --task $T -n 1
	assert_output --regexp "^[0-9a-f]{7} 2026-02-26 14:32:12 \+0000  $T    ctl/release "
	# on a terminal the same instants, relative to now
	on_tty 80 "amp ready; amp claim $T --agent bob --ttl 60; amp show $D"
	assert_success
	assert_line "$T  P2  dispatched        since 5s ago"
	assert_line "claimed $T as bob, expires in 1m (claim-1772116332001)"
	# amp show, the detail view, has the room for both
	assert_line "sent        2026-02-26 14:32:07 +0000  (5s ago)"
}

# ---- every --json output has its schema ------------------------------------

# every_json DIR: runs every amp command that takes --json, in a task from
# dispatch to approval, and keeps each one's stdout in DIR/<label>.out.
every_json() {
	local out=$1 p=$BATS_TEST_TMPDIR/p
	mkdir -p "$out"
	j() { local label=$1; shift; "$@" > "$out/$label.out"; }
	j send amp send task_dispatch --task $T --from coordinator --to executor --payload "$p/dispatch.json" --json
	D=$(json_get 'd["msg_id"]' < "$out/send.out")
	j inbox amp inbox executor --json
	j wait amp wait executor --timeout 1 --json
	j ready amp ready --json
	j ack amp ack "$D" --from executor --json
	at 5
	j claim amp claim $T --agent alice --json
	j heartbeat amp heartbeat $T --agent alice --from executor --json
	j progress amp progress $T --agent alice --percent 50 --note half --json
	j ask amp ask $T --agent alice --question "Which API version?" --json
	j answer amp answer $T --question "$(json_get 'd["record"]' < "$out/ask.out")" --answer v2 --from coordinator --json
	j release amp release $T --agent alice --json
	j register amp register --agent alice --role executor --capability c --from admin --json
	j depend amp depend T-2026-045 --on $T --from coordinator --json
	j plan amp plan $T --priority P1 --from coordinator --json
	at 10
	R=$(amp send task_result --task $T --from executor --payload "$p/result.json")
	amp ack "$R" --from coordinator > /dev/null
	Q=$(amp send review_request --task $T --from coordinator --payload "$(review_payload "$D" "$R")")
	amp ack "$Q" --from reviewer > /dev/null
	j escalate amp escalate $T --type unknown --severity info --description "a question" --from reviewer --no-suspend --json
	at 20
	j verdict amp verdict $T --decision approved --confidence 0.9 --payload "$p/verdict.json" --from reviewer --json
	j status amp status $T --json
	j status-list amp status --all --json
	j show-context amp show "$R" --context --json
	j show amp show "$R" --json
	j log amp log --json
	j agents amp agents --json
	j schema amp schema --json
	j validate amp validate --json "$out/show.out"
	j gc amp gc --json
	j fsck amp fsck --json
	amp send task_result --task $T --from executor --payload /dev/null > /dev/null 2>&1 || true
	j errors amp errors --json
	at 100000
	j watch amp watch --once --json
	j dashboard amp dashboard --out "$BATS_TEST_TMPDIR/site" --json
	j import amp import /dev/null --json
	# a dispatch the admin approves, then aborts; another task suspended
	# by a critical escalation, then resumed
	$PY -c 'import json, sys; d = json.load(open(sys.argv[1])); d["risk_level"] = "high"; json.dump(d, open(sys.argv[2], "w"))' \
		"$p/dispatch.json" "$p/high.json"
	amp send task_dispatch --task T-2026-046 --from coordinator --payload "$p/high.json" > /dev/null
	j approve amp approve T-2026-046 --reason checked --from admin --json
	j abort amp abort T-2026-046 --reason "plan changed" --from admin --json
	amp send task_dispatch --task T-2026-047 --from coordinator --payload "$p/dispatch.json" > /dev/null
	amp escalate T-2026-047 --type unknown --severity critical --description stop --from coordinator > /dev/null
	j resume amp resume T-2026-047 --reason "looked at it" --from admin --json
	git init -q --bare "$BATS_TEST_TMPDIR/hub.git"
	git remote add origin "$BATS_TEST_TMPDIR/hub.git"
	j sync amp sync --json
}


@test "every command's --json result is one object (JSON lines: log, watch) naming its format, which its schema under schemas/output accepts" {
	load enforcer
	make_ssot
	every_json "$BATS_TEST_TMPDIR/out"
	cd "$BATS_TEST_TMPDIR/out"
	# every command that takes --json is run, but amp show MSGID, whose
	# --json is the stored record itself (AMP/1.0's message schema)
	run -0 amp validate show.out
	for c in $(grep -l -e '--json' "$AMP_SRC"/cmd/amp-*.c | sed 's|.*/amp-||; s|\.c$||'); do
		[ -s "$c.out" ] || fail "amp $c --json was not run or printed nothing"
	done
	used=()
	for f in *.out; do
		label=${f%.out}
		[ "$label" = show ] && continue
		name=$label
		[ "$label" = wait ] && name=inbox # the same layout as amp inbox
		used+=("$name")
		schema=$AMP_SCHEMAS/output/$name.schema.json
		[ -f "$schema" ] || fail "no schema for amp $label --json: $schema"
		run -0 $PY - "$f" "$schema" "$name" <<'PY'
import json, sys, jsonschema
text, schema, name = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), sys.argv[3]
jsonschema.Draft7Validator.check_schema(schema)
# one object, or for the streams one object a line
docs = [json.loads(l) for l in text.splitlines()] if name in ("log", "watch") else [json.loads(text)]
for d in docs:
    assert isinstance(d, dict) and list(d)[0] == "format", d
    assert d["format"] == {"name": name, "version": 1}, d["format"]
    jsonschema.validate(d, schema, cls=jsonschema.Draft7Validator)
print(len(docs))
PY
		run -0 amp validate --schema "$schema" "$f"
		refute_output --partial 'error:'
	done
	# and no schema is left that no command prints (error: 34-json-output)
	for s in "$AMP_SCHEMAS"/output/*.schema.json; do
		s=${s##*/}; s=${s%.schema.json}
		[ "$s" = error ] || [[ " ${used[*]} " == *" $s "* ]] || fail "schemas/output/$s.schema.json: no command prints it"
	done
}

@test "an output that drifts from its schema is refused: a member renamed, retyped, or another format" {
	load enforcer
	make_ssot
	run -0 amp send task_dispatch --task $T --from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" --json
	printf '%s\n' "$output" > sent.json
	run -0 amp validate --schema "$AMP_SCHEMAS/output/send.schema.json" sent.json
	sed 's/"msg_id"/"id"/' sent.json > renamed.json
	sed 's/"duplicate":false/"duplicate":0/' sent.json > retyped.json
	sed 's/"version":1/"version":2/' sent.json > version.json
	sed 's/"name":"send"/"name":"ack"/' sent.json > other.json
	for f in renamed retyped version other; do
		run -1 amp validate --schema "$AMP_SCHEMAS/output/send.schema.json" $f.json
	done
	run -1 amp validate --schema "$AMP_SCHEMAS/output/send.schema.json" renamed.json
	assert_output 'amp validate: error: renamed.json: missing required property "msg_id"'
}

# ---- amp mcp: cancellation and --signing-key --------------------------------

MCP_DIR=$AMP_SRC/test/mcp
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bats","version":"1"}}}'

@test "amp mcp: the SDK Client's abort of a long wait sends notifications/cancelled; the server ends the wait and answers the next call at once" {
	[ -d "$MCP_DIR/node_modules/@modelcontextprotocol/sdk" ] || fail "test/mcp/node_modules is missing: run make deps"
	make_ssot
	unset AMP_NOW # amp wait polls the real clock
	run -0 timeout 120 node "$MCP_DIR/cancel.mjs" "$PWD"
	# the wait ran (amp wait, the server's child), the abort ended the
	# call, and then the child was gone and the server free
	[ "$(jq -r .running <<< "$output")" = 1 ] || fail "$output"
	[ "$(jq -r .aborted <<< "$output")" = McpError ] || fail "$output"
	[ "$(jq -r .left <<< "$output")" = 0 ] || fail "$output"
	[ "$(jq -c .next <<< "$output")" = '["format","tasks"]' ] || fail "$output"
	[ "$(jq -r .next_ms <<< "$output")" -lt 10000 ] || fail "$output"
}

@test "amp mcp: a read cancelled with its request gets no answer and the next one does; a write is never cut, and answered" {
	make_ssot
	send_dispatch
	printf '%s\n' "$INIT" \
		'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait","arguments":{"timeout":600,"task":"T-2026-099"}}}' \
		'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"moved on"}}' \
		'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}' \
		'{"jsonrpc":"2.0","id":8,"method":"ping"}' \
		'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ack","arguments":{"msg_id":"'"$D"'"}}}' \
		'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}' |
		timeout 60 amp mcp --from executor > "$BATS_TEST_TMPDIR/out"
	# answers to 0, 8 (its cancellation came before it: nothing to
	# cancel) and 9, none to 7
	run -0 jq -c .id "$BATS_TEST_TMPDIR/out"
	assert_output $'0\n8\n9'
	[ "$(jq -r 'select(.id == 9) | .result.structuredContent.ack_for' "$BATS_TEST_TMPDIR/out")" = "$D" ]
	[ "$(amp status $T --json | jq -c '[.messages[].acked]')" = '[true]' ]
}

@test "amp mcp --signing-key: every write of its tools is signed with that key, whatever git config amp.signingKey says" {
	load signing
	load enforcer
	signing_setup
	role_signers
	git config amp.allowedSigners "$K/signers"
	git config amp.requireSigned true
	as admin
	amp init > /dev/null
	as coordinator
	send_dispatch
	# the config names the coordinator's key, the server the executor's
	printf '%s\n' "$INIT" '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ack","arguments":{"msg_id":"'"$D"'"}}}' |
		amp mcp --from executor --signing-key "$K/executor" > "$BATS_TEST_TMPDIR/out"
	[ "$(jq -r 'select(.id == 1) | .result.isError' "$BATS_TEST_TMPDIR/out")" = false ] || fail "$(cat "$BATS_TEST_TMPDIR/out")"
	run -0 git -c gpg.ssh.allowedSignersFile="$K/signers" log -1 --show-signature --format=%s refs/amp/messages
	assert_output --partial 'Good "git" signature for executor with ED25519 key'
	# without it, the coordinator's key of the config may not speak as
	# the executor: refused before anything is written
	tip=$(git rev-parse refs/amp/messages)
	printf '%s\n' "$INIT" '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"heartbeat","arguments":{"task":"'"$T"'"}}}' |
		amp mcp --from executor > "$BATS_TEST_TMPDIR/out" 2> /dev/null || true
	[ "$(git rev-parse refs/amp/messages)" = "$tip" ]
	run -2 amp mcp --from executor --signing-key "$BATS_TEST_TMPDIR/no-such-key" < /dev/null
	assert_output --partial "amp mcp: error: --signing-key $BATS_TEST_TMPDIR/no-such-key: cannot read it"
}

# fits_tty COLS: every line of $output is valid UTF-8 (a cut never falls
# inside a character), holds no escape but amp's own colours, whole, and
# takes at most COLS columns; prints how many lines were cut ("…").
fits_tty() {
	python3 - "$1" <<'PY' 3<<< "$output"
import os, re, sys
text = os.fdopen(3, "rb").read().decode("utf-8")   # fails on a cut inside UTF-8
cols, cut = int(sys.argv[1]), 0
for line in text.split("\n"):
    assert re.fullmatch(r"(\x1b\[[0-9;]*m|[^\x1b\x07])*", line), repr(line)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", line)
    assert len(plain) <= cols, (len(plain), line)
    cut += plain.endswith("\u2026")
print(cut)
PY
}

@test "amp errors on an 80-column terminal: lines fit, times relative, a hostile id cut at a character and escaped; --wide prints what a pipe gets" {
	make_ssot
	python3 -c 'import json; print(json.dumps({"protocol_version": "AMP/1.0", "msg_id": "x\u001b]0;pwned\u0007" + "é漢" * 40 + "\u001b[2J end", "type": "task_dispatch"}))' > env.json
	run amp send --envelope env.json
	assert_failure 1
	at 120
	run -0 amp errors
	piped=$output
	# a pipe: the absolute time and the whole id, its escapes written as text
	assert_line --index 0 --regexp '^2026-02-26 14:32:07 \+0000  send       exit 1  errors/[^ ]+  x\\x1b\]0;pwned\\x07(é漢){40}\\x1b\[2J end$'
	on_tty 80 "amp errors"
	assert_success
	run -0 fits_tty 80 <<< "$output"
	[ "$output" -ge 1 ] || fail "nothing was cut"
	on_tty 80 "amp errors"
	assert_line --index 0 --regexp '^2m ago +send       exit 1  errors/.*…$'
	for cols in 61 62 63 64 65; do
		on_tty $cols "amp errors --color=always"
		assert_success
		run -0 fits_tty $cols
		[ "$output" -ge 1 ] || fail "$cols columns: nothing was cut"
	done
	on_tty 80 "amp errors --wide"
	assert_success
	assert_output "$piped"
}

@test "amp agents on an 80-column terminal: lines fit, the last write is relative; --wide prints what a pipe gets; a planted name is escaped, cut at a character" {
	make_ssot
	send_dispatch
	at 5
	amp ack "$D" --from executor --agent alice > /dev/null
	amp claim $T --agent alice > /dev/null
	caps=()
	for c in rust c go python typescript haskell ocaml sql kubernetes terraform; do caps+=(--capability "$c"); done
	amp register --agent alice --role executor --role reviewer "${caps[@]}" > /dev/null
	at 65
	run -0 amp agents
	piped=$output
	assert_line --index 0 "alice  roles executor  last write 2026-02-26 14:32:12 +0000  holds $T  declared executor,reviewer; capabilities c,go,haskell,kubernetes,ocaml,python,rust,sql,terraform,typescript"
	on_tty 80 "amp agents"
	assert_success
	assert_line --index 0 --regexp "^alice  roles executor  last write 1m ago  holds $T  declared executor,.*…$"
	run -0 fits_tty 80
	[ "$output" -ge 1 ] || fail "nothing was cut"
	on_tty 80 "amp agents --wide"
	assert_success
	assert_output "$piped"
	# a name planted in the cache of the same tip is data: escaped, and cut
	# at a character
	python3 - .git/amp/agents.json <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
a = d["agents"].pop("alice")
name = "\u001b]0;pwned\u0007" + "é漢" * 40
a["agent"] = name
d["agents"][name] = a
json.dump(d, open(p, "w"))
PY
	run -0 amp agents
	assert_output --partial '\x1b]0;pwned\x07é漢'
	for cols in 40 41 42 43; do
		on_tty $cols "amp agents --color=always"
		assert_success
		run -0 fits_tty $cols
		[ "$output" -ge 1 ] || fail "$cols columns: nothing was cut"
	done
}
