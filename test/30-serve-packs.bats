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
	assert_line --index 0 'nul: HTTP/1.1 400 Bad Request in 0.0 s'
	assert_line --index 1 'nul, no version: HTTP/1.1 400 Bad Request in 0.0 s'
	assert_line --index 2 'nul in a name: HTTP/1.1 400 Bad Request in 0.0 s'
	assert_line --index 3 'nul in the query: HTTP/1.1 400 Bad Request in 0.0 s'
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
