# SPDX-License-Identifier: Apache-2.0
"""The scenarios every fencing adapter runs (run.py), in order. A scenario is a function of an
Env: it takes locks from a real fencelockd, writes to the adapter's resource through the
adapter's client, and states what the resource must have accepted or refused.

Adapter kinds (adapters.py), which decide what "stale" means:
  online     the resource asks fencelockd (FENCE.CHECK's rule): only the current holder's
             token passes, even before a newer holder wrote anything;
  monotonic  the resource remembers the highest token it accepted per lock and refuses lower
             ones (equal passes: one holder's concurrent requests); with keys it also checks
             FENCE.SIGN's signature, so a token of another lock or a forged one is refused.
A scenario an adapter cannot run by its nature is `n/a` (not_applicable says why).
"""

import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import threading
import time

from helpers import eq, expect_int, ok
from resp import Conn, RespError, text

HERE = os.path.dirname(os.path.abspath(__file__))

KEY1 = b"fencing-suite key one 0123456789"  # fencelockd's --token-key; the resources' key
KEY2 = b"fencing-suite key two 9876543210"  # the second key of a rotation
KEY_OTHER = b"a key nobody configured, 32 bytes"


def sign(key, name, token):
    """docs/fencing.md "The encoding"."""
    nb = name.encode()
    return hmac.new(key, b"fencelock-token-v1:%d:%s:%d" % (len(nb), nb, token),
                    hashlib.sha256).hexdigest()


class Holder:
    """A session holding a lock: its token and (signed adapters) FENCE.SIGN's signature."""

    def __init__(self, env, lock, ttl=60000):
        self.env, self.lock = env, lock
        c = env.conn
        self.sid = expect_int(c.call("SESSION.OPEN", ttl), "SESSION.OPEN")
        self.token = expect_int(c.call("LOCK", lock, self.sid, "WAIT", 20000), "LOCK " + lock)
        self.sig = text(ok(c.call("FENCE.SIGN", lock, self.token))) if env.adapter.signed \
            else None

    def release(self):
        ok(self.env.conn.call("SESSION.CLOSE", self.sid), "SESSION.CLOSE")


class Env:
    """One adapter's fencelockd and resource, shared by its scenarios; for_scenario() gives a
    scenario its own names and clean-ups."""

    def __init__(self, ctx, adapter, scenario=None, sctx=None):
        self.ctx, self.adapter, self.scenario, self.sctx = ctx, adapter, scenario, sctx
        if scenario is None:
            key = ctx.tmp("token.key")
            with open(key, "wb") as f:
                f.write(KEY1 + b"\n")
            os.chmod(key, 0o600)
            self.srv = ctx.server("--token-key", key)
            self.conn = ctx.conn(timeout=30.0)

    def for_scenario(self, sctx, name):
        e = Env(self.ctx, self.adapter, name, sctx)
        e.srv, e.conn = self.srv, self.srv.conn(timeout=30.0)
        sctx.defer(e.conn.close)
        return e

    def name(self, what):
        return "%s-%s" % (self.scenario, what)

    def hold(self, lock, ttl=60000):
        return Holder(self, lock, ttl)

    def client(self):
        cl = self.adapter.client()
        self.sctx.defer(cl.close)
        return cl


def not_applicable(sc, adapter):
    """Why adapter cannot run scenario sc by its nature, or None."""
    need = getattr(sc, "needs", ())
    if "signed" in need and not adapter.signed:
        return "%s asks fencelockd itself: there is no signature to check" % adapter.name
    if "signed-or-online" in need and not (adapter.signed or adapter.online):
        return "an unsigned monotonic guard cannot tell locks' tokens apart"
    if "atomic" in need and not adapter.atomic:
        return "%s checks the token and forwards the write in two steps" % adapter.name
    if "isolation" in need and not adapter.isolations:
        return "%s has no transactions whose reads could predate the fence" % adapter.name
    return None


def stale_token_refused(env):
    """A holder whose lock passed on is refused once the new holder wrote (online resources:
    as soon as the lock passed on), and its refused write changed nothing."""
    lock = env.name("inv")
    cl = env.client()
    a = env.hold(lock)
    eq(cl.write(lock, a.token, a.sig, "a1"), True, "the holder's write")
    a.release()
    b = env.hold(lock)
    assert b.token > a.token, (a.token, b.token)
    if env.adapter.online:
        eq(cl.write(lock, a.token, a.sig, "a2"), False, "the old holder, before B wrote")
    eq(cl.write(lock, b.token, b.sig, "b1"), True, "the new holder's write")
    eq(cl.write(lock, a.token, a.sig, "a3"), False, "the old holder, after B wrote")
    eq(env.adapter.value(lock), "b1", "the resource's value")


def current_token_accepted_concurrently(env):
    """One holder's requests in parallel (8 clients x 5 writes, the same token) all pass: the
    check is "not lower", not "newer than the last seen"."""
    lock = env.name("inv")
    h = env.hold(lock)
    first = env.client()
    eq(first.write(lock, h.token, h.sig, "w0"), True, "the first write")
    results, errors = [], []

    def writer(i):
        try:
            cl = env.adapter.client()
            try:
                for j in range(5):
                    results.append(cl.write(lock, h.token, h.sig, "w%d-%d" % (i, j)))
            finally:
                cl.close()
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    ts = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors
    eq(len(results), 40, "writes done")
    eq(results.count(False), 0, "refused writes of the current holder")


def higher_token_recorded(env):
    """A higher token is accepted and from then on the bar: the lower one is refused, the higher
    one accepted again (equal), and a monotonic resource records exactly it."""
    lock = env.name("inv")
    cl = env.client()
    a = env.hold(lock)
    eq(cl.write(lock, a.token, a.sig, "a"), True)
    a.release()
    b = env.hold(lock)
    eq(cl.write(lock, b.token, b.sig, "b"), True, "a higher token")
    eq(cl.write(lock, a.token, a.sig, "a again"), False, "the lower token after it")
    eq(cl.write(lock, b.token, b.sig, "b again"), True, "the higher token again")
    if not env.adapter.online:
        eq(env.adapter.recorded(lock), b.token, "the token the resource recorded")
    eq(env.adapter.value(lock), "b again")


def other_lock_token_refused(env):
    """A newer token granted for another lock does not open this lock's resource (signed: its
    signature names the other lock; online: it is not this lock's token)."""
    lock, other = env.name("inv"), env.name("other")
    cl = env.client()
    h = env.hold(lock)
    eq(cl.write(lock, h.token, h.sig, "mine"), True)
    o = env.hold(other)
    assert o.token > h.token
    eq(cl.write(lock, o.token, o.sig, "theirs"), False, "another lock's token and signature")
    eq(cl.write(lock, h.token, h.sig, "mine again"), True, "the holder after the refusal")
    eq(env.adapter.value(lock), "mine again")


other_lock_token_refused.needs = ("signed-or-online",)


def forged_and_other_key_signatures_refused(env):
    """A large token with a made-up signature, or signed with a key the resource does not have,
    is refused and records nothing: the real holder still passes."""
    lock = env.name("inv")
    cl = env.client()
    h = env.hold(lock)
    big = h.token + 1000
    eq(cl.write(lock, big, "0" * 64, "forged"), False, "a forged signature")
    eq(cl.write(lock, big, sign(KEY_OTHER, lock, big), "forged"), False, "another key")
    eq(cl.write(lock, h.token, sign(KEY_OTHER, lock, h.token), "x"), False,
       "the real token signed with another key")
    eq(cl.write(lock, h.token, None, "x"), False, "no signature")
    eq(cl.write(lock, big, h.sig, "x"), False, "the holder's signature on a larger token")
    eq(cl.write(lock, h.token, h.sig, "real"), True, "the real holder")
    eq(env.adapter.value(lock), "real")


forged_and_other_key_signatures_refused.needs = ("signed",)


def both_keys_accepted_during_rotation(env):
    """With the new and the old key configured, signatures of either pass; once the old key is
    removed, its signatures are refused."""
    lock = env.name("inv")
    cl = env.client()
    h = env.hold(lock)
    eq(h.sig, sign(KEY1, lock, h.token), "FENCE.SIGN's signature (the old key)")
    try:
        env.adapter.set_keys([KEY2, KEY1])
        eq(cl.write(lock, h.token, h.sig, "old key"), True, "signed with the old key")
        eq(cl.write(lock, h.token, sign(KEY2, lock, h.token), "new key"), True,
           "signed with the new key")
        env.adapter.set_keys([KEY2])
        eq(cl.write(lock, h.token, h.sig, "old key after"), False, "the old key, removed")
        eq(cl.write(lock, h.token, sign(KEY2, lock, h.token), "new key after"), True)
    finally:
        env.adapter.set_keys([KEY1])
    eq(env.adapter.value(lock), "new key after")


both_keys_accepted_during_rotation.needs = ("signed",)


class _Lines:
    def __init__(self, stream):
        self.lines = []
        self.cv = threading.Condition()
        threading.Thread(target=self._run, args=(stream,), daemon=True).start()

    def _run(self, stream):
        for line in stream:
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()
        with self.cv:
            self.lines.append(None)
            self.cv.notify_all()

    def next(self, timeout=30.0):
        with self.cv:
            if not self.cv.wait_for(lambda: self.lines, timeout):
                raise AssertionError("no line from the seller in %.0f s" % timeout)
            line = self.lines.pop(0)
        if line is None:
            raise AssertionError("the seller exited early")
        return line


def paused_holder_sells_nothing(env):
    """The article's inventory: A (its own process) holds the lock, reads stock 1, is SIGSTOPped
    past its session's TTL; B gets the lock, reads 1, sells; A resumes and sells on its old read:
    refused. Stock 0, one sale (B's)."""
    lock, shop = env.name("inv"), env.name("shop")
    env.adapter.shop_init(shop, 1)
    spec = json.dumps(env.adapter.client_spec())
    err = open(env.sctx.tmp("seller-a.err"), "w")
    env.sctx.defer(err.close)
    a = subprocess.Popen([sys.executable, os.path.join(HERE, "seller.py"), str(env.srv.port),
                          "1000", lock, shop, "A", spec], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=err, text=True)

    def reap():
        if a.poll() is None:
            a.send_signal(signal.SIGCONT)
            a.kill()
        a.wait(10)
    env.sctx.defer(reap)
    out = _Lines(a.stdout)
    tok_a = int(out.next().split()[1])
    eq(out.next(), "read 1", "A's read")
    os.kill(a.pid, signal.SIGSTOP)  # no keepalives: A's session expires after 1 s
    b = env.hold(lock)
    assert b.token > tok_a, (tok_a, b.token)
    cl = env.client()
    eq(cl.read_stock(lock, b.token, b.sig, shop), 1, "B's read")
    eq(cl.sell(lock, b.token, b.sig, shop, 1, "B"), True, "B's sale")
    os.kill(a.pid, signal.SIGCONT)
    a.stdin.write("go\n")
    a.stdin.flush()
    eq(out.next(), "refused", "A's sale after its pause")
    eq(a.wait(30), 0, "A's exit status")
    eq(env.adapter.shop_state(shop), (0, ["B"]), "stock and sales")


paused_holder_sells_nothing.timeout = 90.0


def concurrent_sellers_never_oversell(env):
    """4 sellers, 20 items, hand-offs by release and by expiry (now and then a seller freezes
    its keepalives between its read and its sale until another holds the lock): never more
    sales than items. Bounded at 25 s of selling; the check holds for what was sold by then."""
    lock, shop, items = env.name("inv"), env.name("shop"), 20
    env.adapter.shop_init(shop, items)
    deadline = time.monotonic() + 25.0
    stats = {"sold": 0, "refused": 0, "pauses": 0}
    errors = []

    def seller(wid):
        c = Conn(env.srv.port, timeout=30.0)
        cl = env.adapter.client()
        n = 0
        try:
            while time.monotonic() < deadline:
                sid = expect_int(c.call("SESSION.OPEN", 1500))
                ka_stop = threading.Event()
                threading.Thread(target=_keepalive, args=(env.srv.port, sid, ka_stop),
                                 daemon=True).start()
                tok = c.call("LOCK", lock, sid, "WAIT", 5000)
                if not isinstance(tok, int):
                    ka_stop.set()
                    c.call("SESSION.CLOSE", sid)
                    continue
                sig = c.call("FENCE.SIGN", lock, tok) if env.adapter.signed else None
                if isinstance(sig, RespError):
                    ka_stop.set()
                    c.call("SESSION.CLOSE", sid)  # the session expired meanwhile
                    continue
                sig = text(sig) if sig is not None else None
                frozen = (n + wid) % 4 == 3
                n += 1
                qty = cl.read_stock(lock, tok, sig, shop)
                if frozen:
                    ka_stop.set()  # a GC pause from here: the session expires
                if qty is None:
                    stats["refused"] += 1
                elif qty == 0:
                    ka_stop.set()
                    c.call("SESSION.CLOSE", sid)
                    return
                else:
                    if frozen:  # wait until the lock passed on (or 5 s)
                        stats["pauses"] += 1
                        until = time.monotonic() + 5.0
                        while time.monotonic() < until:
                            info = c.call("LOCK.INFO", lock)
                            if isinstance(info, list) and dict(zip(info[::2], info[1::2])).get(
                                    b"token", 0) > tok:
                                break
                            time.sleep(0.05)
                    if cl.sell(lock, tok, sig, shop, qty, "w%d" % wid):
                        stats["sold"] += 1
                    else:
                        stats["refused"] += 1
                ka_stop.set()
                c.call("SESSION.CLOSE", sid)
        except Exception as e:  # noqa: BLE001
            errors.append("seller %d: %r" % (wid, e))
        finally:
            cl.close()
            c.close()

    ts = [threading.Thread(target=seller, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors
    assert not any(t.is_alive() for t in ts), "a seller is still running"
    stock, sales = env.adapter.shop_state(shop)
    print("# %s: sold %d, refused %d, pauses %d" % (env.adapter.name, stats["sold"],
                                                    stats["refused"], stats["pauses"]))
    eq(stock + len(sales), items, "stock left + sales (more sales than items: oversold)")
    assert stock >= 0, stock
    eq(len(sales), stats["sold"], "sales recorded vs. sales the sellers saw accepted")
    assert stats["sold"] > 0 and stats["pauses"] > 0, stats


concurrent_sellers_never_oversell.needs = ("atomic",)
concurrent_sellers_never_oversell.timeout = 90.0


def fenced_read_sees_the_write_it_waited_for(env):
    """An older holder A's fenced transaction holds the resource while the lock passes to B; B's
    fenced read waits for A's transaction and then must see A's sale (stock 4, not 5), or be
    told to retry (40001) where its snapshot predates A's commit. Never the stale 5: selling
    from it oversells. Each isolation level the resource offers, with B's first read made after
    the fence, and (where a snapshot lasts the whole transaction) also before it: the guard
    cannot make that read fresh, so it must refuse. A's transaction waits until B's is blocked
    on a lock, so the race is the one the scenario means, every run."""
    lock = env.name("inv")
    cl = env.client()
    ran = []
    for level, per_transaction in env.adapter.isolations:
        for read_first in (False, True) if per_transaction else (False,):
            what = "%s, B reads %s the fence" % (level, "before" if read_first else "after")
            shop = env.name("shop%d" % len(ran))
            env.adapter.shop_init(shop, 5)
            a = env.hold(lock)
            eq(cl.read_stock(lock, a.token, a.sig, shop), 5, "A's read (%s)" % what)
            flag = "fl-suite-%s-%d" % (env.scenario, len(ran))
            done = {}

            def sell_a():
                seller = env.adapter.client()
                try:
                    done["a"] = seller.sell_when_waited(lock, a.token, a.sig, shop, 5, "A", flag)
                except Exception as e:  # noqa: BLE001
                    done["a"] = e
                finally:
                    seller.close()

            t = threading.Thread(target=sell_a)
            t.start()
            until = time.monotonic() + 20.0
            while not env.adapter.flag_held(flag):
                assert t.is_alive(), "A's transaction ended before it held the fence: %r" % done
                assert time.monotonic() < until, "A's transaction did not fence in 20 s"
                time.sleep(0.02)
            a.release()  # A's lease is gone; its transaction is still open (a paused holder)
            b = env.hold(lock)
            assert b.token > a.token, (a.token, b.token)
            got = cl.read_stock_tx(lock, b.token, b.sig, shop, level, read_first)
            t.join(30)
            assert not t.is_alive(), "A's transaction is still open"
            eq(done.get("a"), (True, True), "A's sale, made while B waited (%s)" % what)
            if got != ("retry", None):
                eq(got, ("ok", 4), "B's read after waiting for A's sale (%s)" % what)
            else:
                eq(cl.read_stock_tx(lock, b.token, b.sig, shop, level, read_first), ("ok", 4),
                   "B's retried read (%s)" % what)
            ran.append((what, got[0]))
            eq(cl.sell(lock, b.token, b.sig, shop, 4, "B"), True, "B's sale (%s)" % what)
            eq(env.adapter.shop_state(shop), (3, ["A", "B"]), "stock and sales (%s)" % what)
            b.release()
    print("# %s: %s" % (env.adapter.name, "; ".join("%s: %s" % r for r in ran)))
    eq(ran[0][1], "ok", "at the resource's default level, a read after the fence needs no retry")


fenced_read_sees_the_write_it_waited_for.needs = ("isolation",)
fenced_read_sees_the_write_it_waited_for.timeout = 120.0


def _keepalive(port, sid, stop):
    c = Conn(port, timeout=10.0)
    try:
        while not stop.wait(0.3):
            if isinstance(c.call("SESSION.KEEPALIVE", sid), RespError):
                return
    except Exception:  # noqa: BLE001 (the session or the server may be gone: nothing to keep)
        return
    finally:
        c.close()


SCENARIOS = [
    stale_token_refused,
    current_token_accepted_concurrently,
    higher_token_recorded,
    other_lock_token_refused,
    forged_and_other_key_signatures_refused,
    both_keys_accepted_during_rotation,
    paused_holder_sells_nothing,
    concurrent_sellers_never_oversell,
    fenced_read_sees_the_write_it_waited_for,
]
