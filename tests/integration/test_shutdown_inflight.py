# SPDX-License-Identifier: Apache-2.0
"""SIGTERM in the loop turn that proposed commands: the server exits cleanly, fails those
commands as not applied, and LeakSanitizer finds nothing.

Why: rn_close closes libraft at once, but a batch still open then (commands proposed earlier in
the same loop turn as the signal) used to be handed to libraft by the next loop turn's prepare
handle, while libraft's close waited for a disk write in flight. libraft 0.22.1 neither applies
nor frees an entry submitted after raft_close (its event loop stops before the submit, and
raft_apply may still return 0), so the entry's buffer leaked (rn_batch_submit_open's).

The window is one loop turn: the commands must be read and proposed in the turn that handles the
signal, before the prepare handle submits them. The test makes that turn instead of hoping a
write flood lands in it: it freezes the server (SIGSTOP), puts pipelined PUTs into its sockets'
receive queues (and sees them there, in /proc/net/tcp), then sends SIGTERM and SIGCONT. On
waking, the signal handler writes libuv's signal pipe before the loop polls again, so one epoll
wake-up reports the sockets and the pipe together, and libuv runs the signal watcher after that
wake-up's other I/O (uv__io_poll): the PUTs are read and proposed, then the signal stops the
server, all in one turn. The proof it did: rn_close logs "raft: closing with N command(s)
proposed but not yet in the log" only when it finds an open batch; a round without that line
missed the window and fails."""

import os
import re
import signal
import socket
import subprocess
import time

from resp import encode_command

ROUNDS = 3    # servers stopped with commands in the window (bounded); each must hit it
WRITERS = 4   # connections, each with a burst of pipelined PUTs
PUTS = 40     # per connection: more than one batch (64) in all, so some are submitted too
WINDOW_LINE = re.compile(r"raft: closing with (\d+) command\(s\) proposed but not yet in the log")


def _rx_queue(server_port, client_port):
    """Bytes in the receive queue of the server's end of the connection from client_port
    (/proc/net/tcp: local 127.0.0.1:server_port, remote client_port), or None if not listed."""
    want_local = "0100007F:%04X" % server_port
    want_remote = ":%04X" % client_port
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            if fields[1] == want_local and fields[2].endswith(want_remote):
                return int(fields[4].split(":")[1], 16)
    return None


def _queued_everywhere(s, socks, nbytes, timeout=30.0):
    """Wait (bounded) until the frozen server has every byte sent to it in its receive queues."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(_rx_queue(s.port, so.getsockname()[1]) == nbytes for so in socks):
            return
        time.sleep(0.01)
    raise AssertionError("the PUTs did not reach the frozen server's receive queues: %r" %
                         [_rx_queue(s.port, so.getsockname()[1]) for so in socks])


def _one_round(ctx, rnd):
    s = ctx.server()
    c = s.conn()
    assert c.call("PUT", "ready", "1") is not None  # a leader that takes writes
    socks = []
    for w in range(WRITERS):
        so = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        so.sendall(encode_command("PING"))
        assert so.recv(64).startswith(b"+PONG"), "connection %d not served" % w
        socks.append(so)
    burst = [b"".join(encode_command("PUT", "k%d-%d" % (w, i), "v") for i in range(PUTS))
             for w in range(WRITERS)]
    s.sigstop()  # returns once the kernel reports it stopped
    for so, b in zip(socks, burst):
        so.sendall(b)
    _queued_everywhere(s, socks, len(burst[0]))
    os.kill(s.proc.pid, signal.SIGTERM)  # pending while frozen: handled on waking
    s.sigcont()
    try:
        rc = s.proc.wait(60)
    except subprocess.TimeoutExpired:
        rc = s.stop()  # records the problem and kills it
    s.proc._fl_reaped = True
    for so in socks:
        so.close()
    rep = s.sanitizer_report()
    assert rep is None, "round %d: sanitizer report at SIGTERM:\n%s" % (rnd, rep)
    assert rc == 0, "round %d: fencelockd exited with %r after SIGTERM" % (rnd, rc)
    m = WINDOW_LINE.search(s.log_text())
    assert m and int(m.group(1)) >= 1, (
        "round %d: the shutdown did not land with commands proposed and not yet in the log "
        "(the window was missed):\n%s" % (rnd, s.log_tail(15)))


def test_sigterm_in_the_turn_that_proposed_fails_them_and_leaks_nothing(ctx):
    for rnd in range(1, ROUNDS + 1):
        _one_round(ctx, rnd)


test_sigterm_in_the_turn_that_proposed_fails_them_and_leaks_nothing.timeout = 300
