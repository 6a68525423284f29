#!/usr/bin/env bats
# Issue 30, defect 14: amp dashboard --serve serves connections side by
# side, each within one deadline from its accept, whatever it sends; and
# the leftovers of a killed pack roll-up or a failed git gc are swept.

bats_require_minimum_version 1.5.0

load helpers
load conversation
load enforcer

setup() {
	make_ssot
	SERVER=
}

teardown() {
	if [ -n "${SERVER:-}" ]; then
		kill "$SERVER" 2> /dev/null
		wait "$SERVER" 2> /dev/null || true
	fi
}

# serve_at [OPTION...]: starts amp dashboard --serve on a free loopback
# port; sets PORT, URL and SERVER (its pid).
serve_at() {
	amp dashboard --serve --port 0 "$@" > "$BATS_TEST_TMPDIR/serve.out" 2>&1 &
	SERVER=$!
	for _ in $(seq 100); do grep -q '^serving ' "$BATS_TEST_TMPDIR/serve.out" && break; sleep 0.05; done
	URL=$(sed -n 's/^serving //p' "$BATS_TEST_TMPDIR/serve.out")
	PORT=${URL##*:}
	PORT=${PORT%/}
	[ -n "$URL" ]
}

# clients SCRIPT: runs the Python client SCRIPT against PORT; every socket
# it opens times out, and the script itself is killed after 20 s.
clients() {
	timeout 20 $PY -c "
import socket, sys, threading, time
PORT = $PORT
def connect():
    s = socket.create_connection(('127.0.0.1', PORT), timeout=5)
    return s
def answer(s):
    # the status line of the answer, or '' when the server closed without one
    data = b''
    while b'\r\n' not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.split(b'\r\n')[0].decode()
def get(request=b'GET / HTTP/1.0\r\n\r\n'):
    t = time.monotonic()
    s = connect()
    s.sendall(request)
    line = answer(s)
    s.close()
    return line, time.monotonic() - t
$1"
}

@test "--serve: a client sending a byte a second is cut off at the request deadline, and others are served meanwhile" {
	serve_at --request-timeout 2
	run -0 clients '
slow = connect()
slow.sendall(b"GET / HTTP/1.0\r\nX-Slow: ")
start = time.monotonic()
end = {}
def trickle():
    # one byte a second; the server must close the connection at 2 s
    try:
        while time.monotonic() - start < 8:
            time.sleep(1)
            slow.sendall(b"a")
    except OSError:
        pass
    try:
        slow.settimeout(5)
        end["read"] = slow.recv(100)
    except OSError as e:
        end["read"] = repr(e).encode()
    end["at"] = time.monotonic() - start
t = threading.Thread(target=trickle)
t.start()
for _ in range(3):
    time.sleep(0.4)
    line, took = get()
    print("other: %s in %.2f s" % (line, took))
    assert took < 1, took
t.join()
print("slow: closed after %.1f s, read %r" % (end["at"], end["read"]))
assert 1.5 <= end["at"] < 4.5, end
'
	assert_line --index 0 --regexp '^other: HTTP/1.1 200 OK in 0\.'
	assert_line --index 2 --regexp '^other: HTTP/1.1 200 OK in 0\.'
	# closed without an answer: the request never ended
	assert_line --index 3 --regexp "^slow: closed after [1-4]\.[0-9] s, read (b''|b?'ConnectionResetError)"
	# the server is still up and serving
	run -0 curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "$URL"
	assert_output 200
}

@test "--serve: with 30 idle connections open a new client gets its answer at once, and the idle ones are closed at the deadline" {
	serve_at --request-timeout 2
	run -0 clients '
idle = [connect() for _ in range(30)]
idle[0].sendall(b"GET")
time.sleep(0.3)
line, took = get(b"GET /errors.html HTTP/1.0\r\n\r\n")
print("new: %s in %.2f s" % (line, took))
assert took < 1, took
start = time.monotonic()
closed = 0
for s in idle:
    s.settimeout(max(0.1, 4.5 - (time.monotonic() - start)))
    try:
        if s.recv(100) == b"":
            closed += 1
    except OSError:
        pass
print("idle closed: %d after %.1f s" % (closed, time.monotonic() - start))
'
	assert_line --index 0 --regexp '^new: HTTP/1.1 200 OK in 0\.'
	assert_line --index 1 --regexp '^idle closed: 30 after [1-2]\.[0-9] s'
}

@test "--serve: a NUL byte in the request line is a 400, at once; a head over 64 KiB is closed at the deadline" {
	serve_at --request-timeout 2
	run -0 clients '
for name, r in (("nul", b"GET /\0 HTTP/1.0\r\n\r\n"), ("nul, no version", b"GET /\0\r\n\r\n"),
                ("nul in a name", b"GET /index.html\0/../x HTTP/1.0\r\n\r\n"),
                ("nul in the query", b"GET /?a=\0 HTTP/1.1\r\nHost: x\r\n\r\n")):
    line, took = get(r)
    print("%s: %s in %.1f s" % (name, line, took))
line, took = get(b"GET /?a=1&b HTTP/1.1\r\nHost: x\r\n\r\n")
print("query: " + line)
line, took = get(b"GET / HTTP/1.0\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n")
print("70000: %r in %.1f s" % (line, took))
'
	assert_line --index 0 --regexp '^nul: HTTP/1.1 400 Bad Request in 0\.[0-9] s$'
	assert_line --index 1 --regexp '^nul, no version: HTTP/1.1 400 Bad Request in 0\.[0-9] s$'
	assert_line --index 2 --regexp '^nul in a name: HTTP/1.1 400 Bad Request in 0\.[0-9] s$'
	assert_line --index 3 --regexp '^nul in the query: HTTP/1.1 400 Bad Request in 0\.[0-9] s$'
	assert_line --index 4 'query: HTTP/1.1 200 OK'
	# past its connection's memory, the server reads no more of it and
	# closes it at the deadline, unanswered
	assert_line --index 5 --regexp "^70000: '' in [12]\.[0-9] s$"
}

@test "--request-timeout: 1 to 3600 seconds, with --serve only" {
	run -2 amp dashboard --serve --request-timeout 0
	assert_output --partial '0 is out of range (1..3600)'
	run -2 amp dashboard --serve --request-timeout 3601
	assert_output --partial '3601 is out of range (1..3600)'
	run -2 amp dashboard --out "$BATS_TEST_TMPDIR/site" --request-timeout 5
	assert_output --partial '--port, --bind and --request-timeout go with --serve'
	run -0 amp dashboard --help
	assert_output --partial '[--request-timeout <1..3600>]'
}

pack_dir=.git/objects/pack

# garbage: git's own count of the pack directory's garbage.
garbage() { git count-objects -v 2> /dev/null | awk '$1 == "garbage:" { print $2 }'; }

@test "a roll-up killed (SIGKILL) between a pack's index and the pack leaves the pack; amp gc removes it once an hour old, and stops warning" {
	git config amp.autoPack 0
	for ((i = 0; i < 8; i++)); do
		amp send task_dispatch --task "$(printf 'T-2026-%03d' $((100 + i)))" \
			--from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	done
	git config --unset amp.autoPack
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	# the 9th write rolls the 8 packs up; it is killed as it is about to
	# delete the first old pack, whose index it has just deleted
	run -137 strace -f -qq -e trace=unlink -e inject=unlink:signal=KILL:when=2 \
		-o "$BATS_TEST_TMPDIR/trace" amp send task_dispatch --task T-2026-500 \
		--from coordinator --payload "$BATS_TEST_TMPDIR/p/dispatch.json"
	run -0 grep -c 'killed by SIGKILL' "$BATS_TEST_TMPDIR/trace"
	orphan=$(sed -n 's/.*unlink("\(.*\.pack\)") = ?$/\1/p' "$BATS_TEST_TMPDIR/trace")
	assert_file_exists "$orphan"
	assert_file_not_exists "${orphan%.pack}.idx"
	[ "$(garbage)" = 1 ]
	run -0 amp fsck
	# young: it could be a live writer's, between its pack and its index
	run -0 --separate-stderr amp gc
	assert_file_exists "$orphan"
	[[ $stderr == *"warning: no corresponding .idx: "*"${orphan##*/}"* ]]
	# an hour old: nobody's; amp gc removes it, and git finds no garbage
	touch -d '61 minutes ago' "$orphan"
	run -0 --separate-stderr amp gc
	assert_file_not_exists "$orphan"
	[ -z "$stderr" ]
	[ "$(garbage)" = 0 ]
	run -0 amp fsck
	git fsck --full --strict --no-dangling
	run -0 amp status --all --json
	[ "$(echo "$output" | json_get 'len(d["tasks"])')" = 9 ]
}

@test "the hourly sweep after a write removes an hour-old pack without its index, and leaves one with a .keep, a whole pack and a young one" {
	p=$(ls $pack_dir/*.pack | head -1)
	cp "$p" $pack_dir/pack-1111111111111111111111111111111111111111.pack
	cp "$p" $pack_dir/pack-2222222222222222222222222222222222222222.pack
	: > $pack_dir/pack-2222222222222222222222222222222222222222.keep
	cp "$p" $pack_dir/pack-3333333333333333333333333333333333333333.pack
	: > $pack_dir/pack-1111111111111111111111111111111111111111.rev
	touch -d '2 hours ago' $pack_dir/pack-[12]*.* "$p" "${p%.pack}.idx"
	rm -f .git/amp/objects-swept
	amp send task_dispatch --task T-2026-100 --from coordinator \
		--payload "$BATS_TEST_TMPDIR/p/dispatch.json" > /dev/null
	assert_file_not_exists $pack_dir/pack-1111111111111111111111111111111111111111.pack
	assert_file_not_exists $pack_dir/pack-1111111111111111111111111111111111111111.rev
	assert_file_exists $pack_dir/pack-2222222222222222222222222222222222222222.pack
	assert_file_exists $pack_dir/pack-3333333333333333333333333333333333333333.pack
	assert_file_exists "$p"
	assert_file_exists "${p%.pack}.idx"
}

@test "git's tmp_pack_* and tmp_idx_* from a failed amp gc are kept for an hour, then removed by amp gc, which stops warning" {
	for i in 1 2 3; do echo "$i" | git hash-object -w --stdin > /dev/null; done
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	# git pack-objects (amp gc runs it on the packs it chose) killed as it
	# renames its finished pack in
	run -4 strace -f -qq -e trace=rename -e inject=rename:signal=KILL:when=1 \
		-o "$BATS_TEST_TMPDIR/trace" amp gc
	assert_output --partial 'amp gc: error: git pack-objects failed (exit 137)'
	tmp=$(ls $pack_dir | grep '^tmp_' | sort)
	[[ $tmp == tmp_idx_*$'\n'tmp_pack_* ]]
	[ "$(garbage)" = 2 ]
	# 50 minutes old: kept (a live git's could be as old)
	touch -d '50 minutes ago' $pack_dir/tmp_*
	run -0 --separate-stderr amp gc
	[ "$(ls $pack_dir | grep '^tmp_' | sort)" = "$tmp" ]
	[[ $stderr == *"warning: garbage found: "*tmp_pack_* ]]
	# an hour old: removed, no warning, every object still there
	touch -d '61 minutes ago' $pack_dir/tmp_*
	run -0 --separate-stderr amp gc
	[ -z "$(ls $pack_dir | grep '^tmp_')" ]
	[ -z "$stderr" ]
	[ "$(garbage)" = 0 ]
	git fsck --full --strict --no-dangling
}
