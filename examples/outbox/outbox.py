#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The outbox recipe: a side effect that cannot check a fencing token ("send an SMS"),
performed at most once, and never by a holder that lost its lock (docs/fencing.md).

    outbox.py [--endpoints E] [--ttl-ms MS] [--hold-ms MS] [--unsafe-skip-local-checks]
              OP_ID MESSAGE SENT_FILE

1. Take the lock of the resource (`sms-gateway`) with a session.
2. Prepare under the lock: if the idempotency record `outbox/<OP_ID>` exists, the operation
   was committed by an earlier run: do nothing.
3. Commit the record with a fenced, create-only write:
   `PUT outbox/<OP_ID> <record> FENCE sms-gateway <token> IFREV 0`. The server applies it only
   while our token is the lock's current one (a holder whose lease ran out while it was paused
   gets -STALE) and only if no run committed this operation before (-IFREV).
4. Only once the record is committed, perform the action: append "<OP_ID> <MESSAGE>" to
   SENT_FILE (the stand-in for the SMS gateway). Then mark the record `sent`.

Exit status: 0 sent, 2 already committed by another run (not sent again), 3 refused: the lock
was lost before the commit (not sent), 1 anything unexpected. --hold-ms sleeps between prepare
and commit (a window for a test to pause the process); --unsafe-skip-local-checks skips the
prepare read and the local safe-deadline check, to show that the server's fencing alone still
refuses a stale commit.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import _path  # noqa: E402,F401 - the package from the source tree if it is not installed
import fencelock  # noqa: E402

LOCK = "sms-gateway"
SENT, ALREADY, REFUSED, UNEXPECTED = 0, 2, 3, 1


def say(op, msg):
    print("outbox: op %s: %s" % (op, msg), flush=True)


def send_sms(sent_file, op, message):
    """The side effect: it cannot check a token, so it must only run after the commit."""
    with open(sent_file, "a") as f:
        f.write("%s %s\n" % (op, message))
        f.flush()
        os.fsync(f.fileno())


def commit(client, session, key, record, token, unsafe):
    """The fenced create-only commit of the idempotency record: its revision."""
    if unsafe:
        # As a client that did not notice its lease ran out would send it; the server's
        # fencing is then the only guard (sent once, without REQ: may be OutcomeUnknown).
        return client.put(key, record, fence=(LOCK, token), ifrev=0)
    return session.put(key, record, fence=(LOCK, token), ifrev=0)


def run(a):
    op, key = a.op_id, "outbox/" + a.op_id
    c = fencelock.Client(a.endpoints)
    s = c.session(ttl=a.ttl_ms / 1000.0, name="outbox-" + op)
    try:
        with s.lock(LOCK, wait=a.wait_s) as token:
            say(op, "lock %s token %d (session %d)" % (LOCK, token, s.sid))
            if not a.unsafe_skip_local_checks and c.get(key) is not None:
                say(op, "already committed by an earlier run: not sent again")
                return ALREADY
            say(op, "prepared")
            if a.hold_ms:
                time.sleep(a.hold_ms / 1000.0)
            if not a.unsafe_skip_local_checks and time.monotonic() >= s.safe_until():
                say(op, "refused: our lease may be gone (safe deadline passed): not sent")
                return REFUSED
            record = json.dumps({"op": op, "message": a.message, "sid": s.sid,
                                 "token": token, "state": "committed"})
            try:
                rev = commit(c, s, key, record, token, a.unsafe_skip_local_checks)
            except fencelock.Stale as e:
                say(op, "refused: -%s: not sent" % e)
                return REFUSED
            except fencelock.IfRevFailed:
                say(op, "already committed by another run (IFREV): not sent again")
                return ALREADY
            say(op, "committed at revision %d" % rev)
            send_sms(a.sent_file, op, a.message)
            say(op, "sent")
            done = json.dumps(dict(json.loads(record), state="sent"))
            try:  # bookkeeping only: the commit above is what prevents a second send
                s.put(key, done, fence=(LOCK, token), ifrev=rev)
            except fencelock.FencelockError as e:
                say(op, "sent, but not marked sent (%s)" % e)
            return SENT
    except fencelock.SessionLost as e:
        say(op, "refused: session lost (%s): not sent" % e)
        return REFUSED
    finally:
        if s.is_lost():
            s.abandon()
        else:
            s.close()
        c.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--endpoints", default=os.environ.get("FENCELOCK_ENDPOINTS",
                                                         "127.0.0.1:7480"))
    p.add_argument("--ttl-ms", type=int, default=10000)
    p.add_argument("--wait-s", type=float, default=30.0)
    p.add_argument("--hold-ms", type=int, default=0)
    p.add_argument("--unsafe-skip-local-checks", action="store_true")
    p.add_argument("op_id")
    p.add_argument("message")
    p.add_argument("sent_file")
    a = p.parse_args()
    try:
        return run(a)
    except fencelock.FencelockError as e:
        print("outbox: unexpected: %r" % e, file=sys.stderr)
        return UNEXPECTED


if __name__ == "__main__":
    sys.exit(main())
