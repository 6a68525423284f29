#!/usr/bin/env bats
# Human output: one time zone at one width, relative times, time order,
# colour only when wanted, and a pager like git's on a terminal.

load helpers
load conversation
load enforcer

setup() {
	make_ssot
	git config amp.checkRepo false
}

# Runs "$@" with stdin, stdout and stderr on a pseudo-terminal; prints what
# it wrote there (CR LF as LF) and exits with its exit code.
on_tty() {
	python3 -c '
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    out += data
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(out.replace(b"\r\n", b"\n"))
sys.exit(os.waitstatus_to_exitcode(status))
' "$@"
}

# A dispatch at 14:32:07Z, an escalation at 14:33:07Z, then, committed
# last as a fetch would, an escalation sent at 14:32:20.5Z and written in
# another zone with milliseconds: E_LATE.
mixed_zones() {
	send_dispatch
	at 60
	E=$(amp escalate "$T" --from executor --severity info --type unknown --description first --no-suspend)
	E_LATE=escalation-$T-1772116340500
	git show "refs/amp/messages:$(git ls-tree -r --name-only refs/amp/messages | grep "$E")" |
		python3 -c 'import json, sys
d = json.load(sys.stdin)
d["msg_id"] = sys.argv[1]
d["timestamp"] = "2026-02-26T15:32:20.500+01:00"
d["payload"]["description"] = "fetched late"
print(json.dumps(d, indent=2))' "$E_LATE" | plant "$(next_path "$T" "$E_LATE")"
}

@test "status TASK shows every time in one zone (TZ) at one width, in time order, whatever the sender wrote" {
	mixed_zones
	at 120
	run env TZ=Asia/Kolkata amp status "$T"
	assert_success
	# 14:32:07Z is 20:02:07 in Kolkata; 15:32:20.500+01:00 is 20:02:20
	assert_line --index 2 "  2026-02-26 20:02:07 +0530  task_dispatch   coordinator -> executor     $D  ACK due in 3m"
	assert_line --index 3 "  2026-02-26 20:02:20 +0530  escalation      executor    -> admin        $E_LATE     no ACK required"
	assert_line --index 4 "  2026-02-26 20:03:07 +0530  escalation      executor    -> admin        $E     no ACK required"
	assert_line --index 6 "  2026-02-26 20:02:20 +0530  info     unknown            $E_LATE  fetched late"
	assert_line --index 7 "  2026-02-26 20:03:07 +0530  info     unknown            $E  first"
	# --utc, whatever TZ says
	run env TZ=Asia/Kolkata amp status "$T" --utc
	assert_line --index 3 --partial "  2026-02-26 14:32:20 +0000  escalation "
	run env TZ=America/New_York amp status "$T"
	assert_line --index 3 --partial "  2026-02-26 09:32:20 -0500  escalation "
}

@test "--json keeps the raw timestamps and its bytes, whatever --utc, TZ and --color say" {
	mixed_zones
	amp status "$T" --json > plain.json
	run env TZ=Asia/Kolkata amp status "$T" --json --utc --color=always
	assert_success
	assert_equal "$output" "$(cat plain.json)"
	assert_output --partial '"timestamp": "2026-02-26T15:32:20.500+01:00"'
	amp log --json > log.json
	run env TZ=Asia/Kolkata amp log --json --utc --no-color --no-pager
	assert_equal "$output" "$(cat log.json)"
	assert_output --partial '"time":"2026-02-26T15:32:20.500+01:00"'
}

@test "log lists records newest first by their timestamps, not in commit order, in one zone" {
	mixed_zones
	run amp log
	assert_success
	assert_equal "${#lines[@]}" 3
	[[ ${lines[0]} =~ ^[0-9a-f]{7}\ 2026-02-26\ 14:33:07\ \+0000\ \ $T\ +msg/escalation\ +executor\ +-\>\ admin\ +$E\ +info\ unknown$ ]] || fail "${lines[0]}"
	# committed last, sent in between: listed in between
	[[ ${lines[1]} =~ ^$(git rev-parse --short=7 refs/amp/messages)\ 2026-02-26\ 14:32:20\ \+0000\ \ $T\ +msg/escalation\ .*\ $E_LATE\ +info\ unknown$ ]] || fail "${lines[1]}"
	[[ ${lines[2]} =~ ^[0-9a-f]{7}\ 2026-02-26\ 14:32:07\ \+0000\ \ $T\ +msg/task_dispatch\ +coordinator\ -\>\ executor\ +$D$ ]] || fail "${lines[2]}"
	# the columns line up: "from -> to" starts at the same place on each
	[ "$(printf '%s\n' "${lines[@]}" | awk '{ print index($0, "->") }' | sort -u | wc -l)" -eq 1 ]
	run env TZ=Asia/Kolkata amp log
	assert_line --index 1 --regexp "^[0-9a-f]{7} 2026-02-26 20:02:20 \+0530  "
}

@test "relative times in human units: due in, overdue, acked late, ago" {
	send_dispatch
	at 60
	run amp status "$T"
	assert_line --index 2 --partial "ACK due in 4m"
	run amp inbox executor
	assert_line --index 0 --regexp "^2026-02-26 14:32:07 \+0000  task_dispatch  coordinator -> executor    $T  $D  due in 4m$"
	run amp show "$D"
	assert_line "sent        2026-02-26 14:32:07 +0000  (1m ago)"
	assert_line "ack         required within 5m: due in 4m, at 2026-02-26 14:37:07 +0000"
	at 3600
	run amp status "$T"
	assert_line --index 2 --partial "ACK overdue 55m"
	run amp inbox executor
	assert_line --index 0 --partial "  overdue 55m"
	run amp show "$D"
	assert_line "sent        2026-02-26 14:32:07 +0000  (1h ago)"
	assert_line "ack         required within 5m: overdue 55m, due at 2026-02-26 14:37:07 +0000"
	at 7800
	run amp show "$D"
	assert_line "sent        2026-02-26 14:32:07 +0000  (2h10m ago)"
	at 480; amp ack "$D" --from executor
	run amp status "$T"
	assert_line --index 2 --partial "acked 3m late (after 8m)"
	run amp show "$D"
	assert_line "ack         required within 5m: acked by executor at 2026-02-26 14:40:07 +0000 (after 8m, 3m late)"
}

@test "colour: only on a TTY, never with NO_COLOR, --no-color or --color=never; --color=always forces it" {
	send_dispatch
	at 3600
	# whatever terminal runs the suite (CI has none, a chroot may say dumb)
	export TERM=xterm
	# a pipe: none
	run env -u NO_COLOR amp status "$T"
	refute_output --partial $'\e'
	# a terminal: colour
	run on_tty env -u NO_COLOR AMP_PAGER=cat amp status "$T"
	assert_success
	assert_output --partial $'\e[31mACK overdue 55m\e[0m'
	# a terminal that says it is dumb: none
	run on_tty env -u NO_COLOR TERM=dumb AMP_PAGER=cat amp status "$T"
	assert_success
	assert_output --partial "ACK overdue 55m"
	refute_output --partial $'\e['
	run on_tty env -u NO_COLOR AMP_PAGER=cat amp inbox executor
	assert_output --partial $'\e[31moverdue 55m\e[0m'
	run on_tty env -u NO_COLOR AMP_PAGER=cat amp log
	assert_output --partial $'\e[33m'
	# ...but not with NO_COLOR (any non-empty value) or --no-color
	for cmd in "status $T" "inbox executor" "log" "show $D" "errors"; do
		# shellcheck disable=SC2086
		run on_tty env NO_COLOR=0 AMP_PAGER=cat amp $cmd
		assert_success
		refute_output --partial $'\e'
		# shellcheck disable=SC2086
		run on_tty env -u NO_COLOR AMP_PAGER=cat amp $cmd --no-color
		assert_success
		refute_output --partial $'\e'
		# shellcheck disable=SC2086
		run on_tty env -u NO_COLOR AMP_PAGER=cat amp $cmd --color=never
		refute_output --partial $'\e'
	done
	run on_tty env -u NO_COLOR amp wait executor --timeout 1 --no-color
	refute_output --partial $'\e'
	# an empty NO_COLOR is no NO_COLOR
	run on_tty env NO_COLOR= AMP_PAGER=cat amp status "$T"
	assert_output --partial $'\e[31m'
	# --color=always and a bare --color, even piped and with NO_COLOR
	run amp status "$T" --color=always
	assert_output --partial $'\e[31mACK overdue 55m\e[0m'
	run amp inbox executor --color
	assert_output --partial $'\e[31moverdue 55m\e[0m'
	run on_tty env -u NO_COLOR AMP_PAGER=cat amp status "$T" --color=auto
	assert_output --partial $'\e[31m'
	run amp status "$T" --color=sometimes
	assert_failure 2
	assert_output --partial "amp status: error: --color: 'sometimes' is not always, never or auto"
}

@test "message text stays data with colour on: a hostile description is escaped" {
	send_dispatch
	at 60
	amp escalate "$T" --from executor --severity info --type unknown --no-suspend \
		--description $'evil \e[2J\e]0;pwned\a end' > /dev/null
	run amp status "$T" --color=always
	assert_success
	assert_output --partial 'evil \x1b[2J\x1b]0;pwned\x07 end'
	refute_output --partial $'\e[2J'
}

# A pager that says it ran, with what LESS it got, and shows its input.
fake_pager() {
	cat > "$BATS_TEST_TMPDIR/pager" <<EOF
#!/bin/sh
echo "\${1:-pager} LESS=\$LESS" >> "$BATS_TEST_TMPDIR/pager.ran"
sed 's/^/paged: /'
EOF
	chmod +x "$BATS_TEST_TMPDIR/pager"
}

@test "pager: on a TTY only, AMP_PAGER then core.pager then PAGER, with LESS=FRX; not with --no-pager, --json, cat or empty" {
	send_dispatch
	fake_pager
	P=$BATS_TEST_TMPDIR/pager RAN=$BATS_TEST_TMPDIR/pager.ran
	run on_tty env AMP_PAGER="$P amp" amp status "$T"
	assert_success
	assert_line --partial "paged: T-2026-044  dispatched  rejects 0"
	assert_equal "$(cat "$RAN")" "amp LESS=FRX"
	rm "$RAN"
	# every read command pages
	for cmd in "status" "log" "show $D" "inbox executor" "errors"; do
		# shellcheck disable=SC2086
		run on_tty env AMP_PAGER="$P" amp $cmd
		assert_success
		assert_output --partial "paged: "
	done
	assert_equal "$(wc -l < "$RAN")" 5
	rm "$RAN"
	# a LESS of the user's own is kept
	run on_tty env AMP_PAGER="$P" LESS=S amp status
	assert_equal "$(cat "$RAN")" "pager LESS=S"
	rm "$RAN"
	# core.pager when AMP_PAGER is unset, before PAGER
	git config core.pager "$P config"
	run on_tty env -u AMP_PAGER PAGER="$P env" amp status
	assert_output --partial "paged: "
	git config --unset core.pager
	run on_tty env -u AMP_PAGER PAGER="$P env" amp status
	# AMP_PAGER before core.pager
	git config core.pager "$P config"
	run on_tty env AMP_PAGER="$P amp" PAGER="$P env" amp status
	assert_equal "$(cat "$RAN")" "config LESS=FRX
env LESS=FRX
amp LESS=FRX"
	rm "$RAN"
	# none: not a TTY, --no-pager (on the command or the driver), --json,
	# a wait, an empty AMP_PAGER or "cat"
	run env AMP_PAGER="$P" amp status "$T"
	assert_success
	refute_output --partial "paged: "
	run on_tty env AMP_PAGER="$P" amp status "$T" --no-pager
	assert_line "T-2026-044  dispatched  rejects 0"
	run on_tty env AMP_PAGER="$P" amp --no-pager log
	assert_success
	refute_output --partial "paged: "
	run on_tty env AMP_PAGER="$P" amp status "$T" --json
	refute_output --partial "paged: "
	run on_tty env AMP_PAGER="$P" amp wait executor --timeout 1
	refute_output --partial "paged: "
	run on_tty env AMP_PAGER= PAGER="$P" amp status "$T"
	refute_output --partial "paged: "
	run on_tty env AMP_PAGER=cat PAGER="$P" amp status "$T"
	assert_line "T-2026-044  dispatched  rejects 0"
	[ ! -e "$RAN" ]
}

@test "pager: without AMP_PAGER, core.pager and PAGER it is less, with LESS=FRX unless LESS is set" {
	send_dispatch
	fake_pager
	mkdir -p "$BATS_TEST_TMPDIR/path"
	mv "$BATS_TEST_TMPDIR/pager" "$BATS_TEST_TMPDIR/path/less"
	RAN=$BATS_TEST_TMPDIR/pager.ran
	run on_tty env -u AMP_PAGER -u PAGER -u LESS PATH="$BATS_TEST_TMPDIR/path:$PATH" amp status "$T"
	assert_success
	assert_line "paged: T-2026-044  dispatched  rejects 0"
	assert_equal "$(cat "$RAN")" "pager LESS=FRX"
}

@test "the demos print no escape code with NO_COLOR set on a terminal, nor when piped" {
	run env TMPDIR="$BATS_TEST_TMPDIR" "$AMP_SRC/share/demo.sh"
	assert_success
	refute_output --partial $'\e'
	run on_tty env NO_COLOR=1 TMPDIR="$BATS_TEST_TMPDIR" "$AMP_SRC/share/demo.sh"
	assert_success
	assert_output --partial "approved"
	refute_output --partial $'\e'
	run on_tty env NO_COLOR=1 TMPDIR="$BATS_TEST_TMPDIR" "$AMP_SRC/share/demo-lock.sh"
	assert_success
	assert_output --partial "resume by admin"
	refute_output --partial $'\e'
}
