#!/usr/bin/env bats
# amp mcp: the Model Context Protocol server, driven by clients nobody here
# wrote (the official TypeScript SDK, the MCP Inspector's CLI, from
# test/mcp/package-lock.json: make deps installs them) and by raw JSON-RPC
# lines for what a well-behaved client never sends.

load helpers
load conversation

MCP_DIR=$AMP_SRC/test/mcp
export NPM_CONFIG_UPDATE_NOTIFIER=false

setup() {
	[ -d "$MCP_DIR/node_modules/@modelcontextprotocol/sdk" ] ||
		fail "test/mcp/node_modules is missing: run make deps"
	make_ssot
}

teardown() {
	fsck_teardown
}

INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bats","version":"1"}}}'

# mcp ROLE LINE...: one session of `amp mcp --from ROLE` on the SSOT, the
# lines its input; its responses, one a line, in $BATS_TEST_TMPDIR/out.
mcp() {
	local role=$1
	shift
	printf '%s\n' "$@" | amp mcp --from "$role" > "$BATS_TEST_TMPDIR/out"
}

# call NAME ARGS_JSON: a tools/call request line.
call() {
	jq -nc --arg n "$1" --argjson a "$2" '{jsonrpc:"2.0",id:1,method:"tools/call",params:{name:$n,arguments:$a}}'
}

# record ID [KIND]: the record ID (a message, or the KIND "ack" of one) on
# the messages ref, as JSON.
record() {
	local path
	path=$(git ls-tree -r --name-only refs/amp/messages | grep -F ".${2:-msg}.$1.json") || return 1
	git show "refs/amp/messages:$path"
}

@test "the MCP SDK's Client drives dispatch, ACK, result, review request and verdict through four amp mcp servers, one per role" {
	before=$(commit_count)
	run node "$MCP_DIR/flow.mjs" "$PWD" "$BATS_TEST_TMPDIR/p" "$T"
	assert_success
	out=$output
	# Each role had its own server, and the same tools.
	for role in admin coordinator executor reviewer; do
		[ "$(jq -r ".servers.$role.name" <<< "$out")" = amp ]
		[ "$(jq -r ".servers.$role.tools" <<< "$out")" = 16 ]
	done
	D=$(jq -r .msg_ids.dispatch <<< "$out")
	R=$(jq -r .msg_ids.result <<< "$out")
	Q=$(jq -r .msg_ids.review_request <<< "$out")
	V=$(jq -r .msg_ids.verdict <<< "$out")
	# The executor's long poll returned the dispatch written after it began.
	[ "$(jq -r '.steps.wait.messages[0].msg_id' <<< "$out")" = "$D" ]
	[ "$(jq -r '.steps.coordinator_wait.messages[0].msg_id' <<< "$out")" = "$R" ]
	[ "$(jq -r '.steps.status.state' <<< "$out")" = approved ]
	[ "$(jq -r '.steps.resource.state' <<< "$out")" = approved ]
	[ "$(jq -r '.steps.message.msg_id' <<< "$out")" = "$V" ]
	[ "$(jq -r '.steps.resources[0]' <<< "$out")" = "amp://task/$T" ]
	# The git objects: each message by the role that sent it, to the role
	# it names, each ACK by its addressee, the claim by the named executor.
	[ "$(record "$D" | jq -r '[.from,.to] | join(">")')" = "coordinator>executor" ]
	[ "$(record "$R" | jq -r '[.from,.to] | join(">")')" = "executor>coordinator" ]
	[ "$(record "$R" | jq -r '.context_ref[0]')" = "$D" ]
	[ "$(record "$Q" | jq -r '[.from,.to] | join(">")')" = "coordinator>reviewer" ]
	[ "$(record "$V" | jq -r '[.from,.to,.payload.decision] | join(">")')" = "reviewer>coordinator>approved" ]
	[ "$(record "$D" ack | jq -r '[.from,.to] | join(">")')" = "executor>coordinator" ]
	[ "$(record "$R" ack | jq -r '[.from,.to] | join(">")')" = "coordinator>executor" ]
	[ "$(record "$Q" ack | jq -r '[.from,.to] | join(">")')" = "reviewer>coordinator" ]
	git ls-tree -r --name-only refs/amp/messages | grep -q '\.ctl\.claim-'
	[ "$(amp log --task "$T" --json | jq -r 'select(.type=="claim") | .agent')" = executor-1 ]
	[ "$(amp status "$T" --json | jq -r .state)" = approved ]
	# dispatch, ack, claim, result, ack, review_request, ack, verdict.
	[ "$(commit_count)" -eq $((before + 8)) ]
}

@test "npx @modelcontextprotocol/inspector --cli lists amp mcp's tools and calls send_task_dispatch, which writes the dispatch" {
	cd "$MCP_DIR"
	run npx --no-install @modelcontextprotocol/inspector --cli amp mcp --from coordinator \
		--repo "$BATS_TEST_TMPDIR/repo" --method tools/list
	assert_success
	names=$(jq -r '[.tools[].name] | join(" ")' <<< "$output")
	assert_equal "$names" "inbox show send_task_dispatch send_task_result send_review_request send_review_verdict send_escalation ack verdict escalate claim release heartbeat wait status log"
	run npx --no-install @modelcontextprotocol/inspector --cli amp mcp --from coordinator \
		--repo "$BATS_TEST_TMPDIR/repo" --method tools/call --tool-name send_task_dispatch \
		--tool-arg task=$T --tool-arg to=executor --tool-arg "payload=$(cat "$BATS_TEST_TMPDIR/p/dispatch.json")"
	assert_success
	[ "$(jq -r .isError <<< "$output")" = false ]
	D=$(jq -r .structuredContent.msg_id <<< "$output")
	cd "$BATS_TEST_TMPDIR/repo"
	[ "$(record "$D" | jq -r '[.type,.from,.to,.payload.branch] | join(" ")')" = "task_dispatch coordinator executor feature/watch-breath-v2" ]
}

@test "each send tool's payload schema is amp's schema of its type (amp schema), read at start from the schema directory the CLI uses" {
	mcp coordinator "$INIT" '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
	list=$(sed -n 2p "$BATS_TEST_TMPDIR/out")
	for type in task_dispatch task_result review_request review_verdict escalation; do
		diff <(jq -S ".result.tools[] | select(.name == \"send_$type\") | .inputSchema.properties.payload" <<< "$list") \
			<(amp schema "$type" | jq -S .)
		# The file's own words: its properties, required members, title.
		diff <(jq -S "[.result.tools[] | select(.name == \"send_$type\") | .inputSchema.properties.payload | .title, .required, (.properties | keys)]" <<< "$list") \
			<(jq -S '[.title, .required, (.properties | keys)]' "$AMP_SCHEMAS/$type.schema.json")
	done
	# A changed schema file changes the tool's schema: nothing is copied.
	cp -r "$AMP_SCHEMAS" "$BATS_TEST_TMPDIR/schemas"
	jq '.properties.subtask_id.description = "changed for the test"' "$AMP_SCHEMAS/task_result.schema.json" \
		> "$BATS_TEST_TMPDIR/schemas/task_result.schema.json"
	AMP_SCHEMA_DIR=$BATS_TEST_TMPDIR/schemas mcp executor "$INIT" '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/out" | jq -r '.result.tools[] | select(.name == "send_task_result") | .inputSchema.properties.payload.properties.subtask_id.description')" = "changed for the test" ]
}

@test "a rule refusal through amp mcp is a tool error carrying amp's code, exit code, JSON path and message, as the CLI says it" {
	sed 's#"feature/watch-breath-v2"#"main"#' "$BATS_TEST_TMPDIR/p/dispatch.json" > "$BATS_TEST_TMPDIR/p/main.json"
	run amp send task_dispatch --task T-2026-045 --from coordinator --payload "$BATS_TEST_TMPDIR/p/main.json"
	assert_failure 3
	cli=$(grep -m1 'error: /payload/branch' <<< "$output")
	cli_message=${cli#amp send: error: /payload/branch: }
	mcp coordinator "$INIT" "$(call send_task_dispatch "{\"task\":\"T-2026-046\",\"payload\":$(cat "$BATS_TEST_TMPDIR/p/main.json")}")"
	res=$(sed -n 2p "$BATS_TEST_TMPDIR/out")
	[ "$(jq -r .result.isError <<< "$res")" = true ]
	[ "$(jq -r .result.structuredContent.error.code <<< "$res")" = refused ]
	[ "$(jq -r .result.structuredContent.error.exit <<< "$res")" = 3 ]
	[ "$(jq -r .result.structuredContent.error.path <<< "$res")" = /payload/branch ]
	assert_equal "$(jq -r .result.structuredContent.error.message <<< "$res")" "${cli_message//T-2026-045/T-2026-046}"
	# The text content is the same object, for clients that read text.
	[ "$(jq -c '.result.content[0].text | fromjson' <<< "$res")" = "$(jq -c .result.structuredContent <<< "$res")" ]
	# A payload missing five required members: every error amp printed.
	mcp executor "$INIT" "$(call send_task_result "{\"task\":\"$T\",\"payload\":{}}")"
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/out" | jq -c '.result.structuredContent | [.error.code, (.errors | length), (.errors | map(.path) | unique)]')" = '["invalid",5,["/payload"]]' ]
	# A claim held by another instance: exit 6, "claimed".
	send_dispatch
	amp claim "$T" --from executor --agent other > /dev/null
	printf '%s\n' "$INIT" "$(call claim "{\"task\":\"$T\"}")" | amp mcp --from executor --agent mine > "$BATS_TEST_TMPDIR/out"
	res=$(sed -n 2p "$BATS_TEST_TMPDIR/out")
	[ "$(jq -r '.result.structuredContent.error | [.code, .exit] | join(" ")' <<< "$res")" = "claimed 6" ]
}

@test "amp mcp answers the two newest protocol revisions the MCP SDK knows with themselves, any other with the newest, and a missing one with -32602" {
	cd "$MCP_DIR"
	sdk=$(node --input-type=module -e "import { SUPPORTED_PROTOCOL_VERSIONS as v } from '@modelcontextprotocol/sdk/types.js'; console.log(v[0], v[1])")
	cd "$BATS_TEST_TMPDIR/repo"
	read -r newest previous <<< "$sdk"
	for asked in "$newest" "$previous" 2024-11-05 1999-01-01 "not a date"; do
		mcp admin "$(jq -nc --arg v "$asked" '{jsonrpc:"2.0",id:7,method:"initialize",params:{protocolVersion:$v,capabilities:{},clientInfo:{name:"b",version:"1"}}}')"
		got=$(jq -r .result.protocolVersion "$BATS_TEST_TMPDIR/out")
		case $asked in
		"$newest" | "$previous") assert_equal "$got" "$asked" ;;
		*) assert_equal "$got" "$newest" ;;
		esac
	done
	mcp admin '{"jsonrpc":"2.0","id":8,"method":"initialize","params":{}}'
	[ "$(jq -c '[.id, .error.code]' "$BATS_TEST_TMPDIR/out")" = '[8,-32602]' ]
}

@test "malformed JSON-RPC lines get -32700, -32600, -32601 or -32602 with the right id, notifications get nothing, and the server keeps going" {
	long=$(head -c 4194400 /dev/zero | tr '\0' 'a')
	deep=$(printf '%*s' 100000 '' | tr ' ' '[')
	mcp reviewer \
		'not json' \
		'[{"jsonrpc":"2.0","id":1,"method":"ping"}]' \
		'{"jsonrpc":"1.0","id":2,"method":"ping"}' \
		'{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}' \
		'{"jsonrpc":"2.0","id":3}' \
		'{"jsonrpc":"2.0","id":4,"method":"tools/teleport"}' \
		'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1]}' \
		'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"no_such_tool"}}' \
		'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
		"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"params\":{\"x\":\"$long\"}}" \
		"$deep" \
		$'{"jsonrpc":"2.0","id":10,"method":"ping","params":{"x":"\xff\xfe"}}' \
		'{"jsonrpc":"2.0","id":"last","method":"ping"}'
	run jq -c '[.id, (.error.code // "ok")]' "$BATS_TEST_TMPDIR/out"
	assert_output "$(printf '%s\n' '[null,-32700]' '[null,-32600]' '[2,-32600]' '[null,-32600]' '[3,-32600]' \
		'[4,-32601]' '[5,-32602]' '[6,-32602]' '[null,-32700]' '[null,-32700]' '[null,-32700]' '["last","ok"]')"
	grep -q 'longer than 4194304 bytes' "$BATS_TEST_TMPDIR/out"
}

@test "hostile text in tool arguments is data: stored and read back byte for byte, never an option, a shell word or a terminal escape" {
	send_dispatch
	text=$'line one\nline "two" \\ $(touch pwned) `touch pwned2`; --json \e[31m\u202e end'
	args=$(jq -nc --arg t "$T" --arg d "$text" '{task:$t,type:"unknown",severity:"info",description:$d,suggest:["--help"]}')
	mcp executor "$INIT" "$(call escalate "$args")"
	res=$(sed -n 2p "$BATS_TEST_TMPDIR/out")
	[ "$(jq -r .result.isError <<< "$res")" = false ]
	E=$(jq -r .result.structuredContent.msg_id <<< "$res")
	assert_equal "$(record "$E" | jq -r .payload.description)" "$text"
	assert_equal "$(record "$E" | jq -r '.payload.suggested_actions[0]')" "--help"
	mcp executor "$INIT" "$(call show "{\"msg_id\":\"$E\"}")"
	assert_equal "$(sed -n 2p "$BATS_TEST_TMPDIR/out" | jq -r '.result.structuredContent.payload.description // .result.structuredContent.items[0].payload.description')" "$text"
	assert_file_not_exists pwned
	assert_file_not_exists pwned2
	# An operand that looks like an option is refused by the tool's schema,
	# and a NUL (which no command line can carry) is refused, not cut.
	mcp executor "$INIT" "$(call ack '{"msg_id":"--help"}')" \
		"$(call heartbeat "{\"task\":\"$T\",\"note\":\"a\\u0000b\"}")"
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/out" | jq -r '.result.structuredContent.error | [.code, .path] | join(" ")')" = "invalid /msg_id" ]
	[ "$(sed -n 3p "$BATS_TEST_TMPDIR/out" | jq -r '.error.code')" = -32700 ]
	[ "$(git ls-tree -r --name-only refs/amp/messages | grep -c heartbeat || true)" -eq 0 ]
}

@test "amp mcp takes its identity as the writing commands do: no role is exit 2, a role from git config amp.role writes as that role; wait's timeout is a result, a missing resource -32002" {
	run amp mcp < /dev/null
	assert_failure 2
	assert_output --partial "--from is required"
	run amp mcp --from nobody < /dev/null
	assert_failure 2
	send_dispatch
	git config amp.role executor
	D=$(amp inbox executor --json | jq -r '.messages[0].msg_id')
	printf '%s\n' "$INIT" "$(call ack "{\"msg_id\":\"$D\"}")" | amp mcp > "$BATS_TEST_TMPDIR/out"
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/out" | jq -r .result.isError)" = false ]
	[ "$(git ls-tree -r --name-only refs/amp/messages | grep -c '\.ack\.')" -eq 1 ]
	# Nothing waits for the executor any more: wait's timeout is a result.
	mcp executor "$INIT" "$(call wait '{"timeout":1}')"
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/out" | jq -c '[.result.isError, .result.structuredContent]')" = '[false,{"timed_out":true}]' ]
	# resources/read of a message that is not there: -32002 with amp's error.
	mcp executor "$INIT" '{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"amp://message/task_result-T-2026-044-1"}}'
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/out" | jq -r '[.error.code, .error.data.error.message] | join(" ")')" = "-32002 no message task_result-T-2026-044-1 in the SSOT" ]
}

@test "bash completion offers amp mcp, its options from its --help, and roles after --from" {
	complete_bash() {
		bash --norc --noprofile -c '
			source "$1"
			COMP_LINE=$2
			COMP_POINT=${#2}
			read -ra COMP_WORDS <<< "$2"
			[[ $2 == *" " ]] && COMP_WORDS+=("")
			COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
			_amp
			printf "%s\n" "${COMPREPLY[@]}" | sort | paste -sd " "
		' complete "$AMP_BASH_COMPLETION" "$1"
	}
	run complete_bash "amp mc"
	assert_output "mcp"
	run complete_bash "amp mcp --"
	assert_output "--agent --from --help --repo --signing-key"
	run complete_bash "amp mcp --from "
	assert_output "admin coordinator executor reviewer system"
}

@test "a write through amp mcp is signed with git config amp.signingKey and pushed by amp.autoSync, as the CLI's are" {
	git init -q --bare "$BATS_TEST_TMPDIR/hub.git"
	git remote add origin "$BATS_TEST_TMPDIR/hub.git"
	amp sync > /dev/null
	mkdir -p "$BATS_TEST_TMPDIR/keys"
	ssh-keygen -q -t ed25519 -N '' -C coordinator-key -f "$BATS_TEST_TMPDIR/keys/coordinator"
	printf 'coordinator %s\n' "$(cut -d' ' -f1,2 "$BATS_TEST_TMPDIR/keys/coordinator.pub")" > "$BATS_TEST_TMPDIR/keys/signers"
	git config amp.signingKey "$BATS_TEST_TMPDIR/keys/coordinator"
	git config amp.autoSync true
	mcp coordinator "$INIT" "$(call send_task_dispatch "{\"task\":\"$T\",\"payload\":$(cat "$BATS_TEST_TMPDIR/p/dispatch.json")}")"
	D=$(sed -n 2p "$BATS_TEST_TMPDIR/out" | jq -r .result.structuredContent.msg_id)
	[[ $D == task_dispatch-$T-* ]]
	run git -c gpg.ssh.allowedSignersFile="$BATS_TEST_TMPDIR/keys/signers" verify-commit refs/amp/messages
	assert_success
	assert_output --partial 'Good "git" signature for coordinator'
	git -C "$BATS_TEST_TMPDIR/hub.git" ls-tree -r --name-only refs/amp/messages | grep -q "\.msg\.$D\.json$"
}
