# SPDX-License-Identifier: Apache-2.0
"""A wall-clock jump (NTP step, date -s) must not change when sessions expire.

fencelockd runs under libfaketime with a timestamp file (re-read on every call, monotonic
clock not faked). The tests first prove the jump reached the server (held_since_ms, the
leader's wall clock, moves by the offset), then poll SESSION.INFO (which does not reset the
deadline) to bound each session's expiry between ttl after its keepalive was sent and
ttl + 200 ms after the keepalive reply.
"""

import os
import time

from helpers import (RespError, expect_int, lock_info, ms, ok, open_session, session_info)
from server import faketime_env

TTL = 1500
SLACK = 0.200


def _write_offset(path, s):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(s + "\n")
    os.replace(tmp, path)


def _held_since_offset(c, sid, name):
    """Lock `name` now and return held_since_ms minus the real wall clock (ms)."""
    before = time.time() * 1000
    expect_int(c.call("LOCK", name, sid), "LOCK %s" % name)
    after = time.time() * 1000
    held = expect_int(lock_info(c, name)["held_since_ms"], "held_since_ms")
    return held - (before + after) / 2


def _keepalive(c, sid):
    t_send = time.monotonic()
    expect_int(c.call("SESSION.KEEPALIVE", sid), "KEEPALIVE %d" % sid)
    return t_send, time.monotonic()


def _clock_jump(ctx, offset, offset_ms):
    tsfile = ctx.tmp("faketime.txt")
    _write_offset(tsfile, "+0")
    ctx.server(env=faketime_env(tsfile))
    c = ctx.conn()

    anchor = open_session(c, 60000)
    d0 = _held_since_offset(c, anchor, "clock-before")
    assert abs(d0) < 10000, "before the jump held_since_ms is %.0f ms off the real clock" % d0

    ka = {}
    for _ in range(3):
        sid = open_session(c, TTL)
        ka[sid] = _keepalive(c, sid)

    _write_offset(tsfile, offset)

    d1 = _held_since_offset(c, anchor, "clock-after")
    assert abs(d1 - offset_ms) < 60000, (
        "faketime not active in the server: after writing %r held_since_ms is %.0f ms off the "
        "real clock (expected about %d)" % (offset, d1, offset_ms))

    # A session opened and kept alive after the jump.
    sid = open_session(c, TTL)
    ka[sid] = _keepalive(c, sid)

    last_alive_send, dead_reply = {}, {}
    alive = set(ka)
    end = max(t for _, t in ka.values()) + TTL / 1000 + 1.5
    while alive and time.monotonic() < end:
        for sid in sorted(alive):
            t0 = time.monotonic()
            r = session_info(c, sid)
            t1 = time.monotonic()
            if isinstance(r, RespError):
                assert r.code == "NOSESSION", "SESSION.INFO %d -> -%s" % (sid, r.text)
                dead_reply[sid] = t1
                alive.discard(sid)
            else:
                last_alive_send[sid] = t0
                rem = r.get("remaining_ms")
                if rem is not None:
                    assert 0 <= rem <= TTL, "session %d remaining_ms %r after a jump of %s" \
                        % (sid, rem, offset)
        time.sleep(0.01)
    assert not alive, "sessions %s still alive %s after their ttl of %d ms (clock jump %s)" % (
        sorted(alive), ms(end - max(t for _, t in ka.values())), TTL, offset)
    for sid, (t_send, t_reply) in ka.items():
        early = dead_reply[sid] - t_send
        assert early >= TTL / 1000, "session %d gone %s after its keepalive: before its ttl " \
            "of %d ms (clock jump %s)" % (sid, ms(early), TTL, offset)
        if sid in last_alive_send:
            late = last_alive_send[sid] - t_reply
            assert late <= TTL / 1000 + SLACK, "session %d still alive %s after its keepalive " \
                "reply: more than ttl + 200 ms (clock jump %s)" % (sid, ms(late), offset)
    ok(c.call("PING"))


def test_wall_clock_jump_forward_does_not_expire_sessions_early(ctx):
    _clock_jump(ctx, "+1h", 3600 * 1000)


def test_wall_clock_jump_backward_does_not_delay_expiry(ctx):
    _clock_jump(ctx, "-1h", -3600 * 1000)
