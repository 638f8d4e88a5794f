#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Client A of the inventory scenario (test_postgres.py), a process of its own so that the test
can SIGSTOP it like a long GC pause.

    pg_seller.py PORT TTL_MS LOCK ITEM BUYER -- PSQL-ARGV...

Opens a session (kept alive by a thread, as a real client does), waits for LOCK, reads the
stock of ITEM through a fenced transaction, prints `token N` and `read Q`, then waits for a line
on stdin (the test freezes it meanwhile). Then it tries to sell one item based on what it read:
prints `sold` or `refused SQLSTATE`, and exits 0. Anything unexpected: exit status 1.
"""

import os
import subprocess
import sys
import threading

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from resp import Conn, RespError  # noqa: E402
from pg import sqlstate_of  # noqa: E402


def psql(argv, script):
    r = subprocess.run(argv + ["-f", "-"], input=script, capture_output=True, text=True,
                       timeout=30)
    return r.returncode, r.stdout.strip(), r.stderr


def keepalive(port, sid, ttl_ms, stop):
    c = Conn(port)
    while not stop.wait(ttl_ms / 4000.0):
        try:
            c.call("SESSION.KEEPALIVE", sid)
        except Exception:  # noqa: BLE001 (the session may be gone: nothing to keep alive)
            return


def main():
    sep = sys.argv.index("--")
    port, ttl_ms, lock, item, buyer = sys.argv[1:sep]
    port, ttl_ms = int(port), int(ttl_ms)
    psql_argv = sys.argv[sep + 1:]

    c = Conn(port)
    sid = c.call("SESSION.OPEN", ttl_ms)
    if isinstance(sid, RespError):
        print("error %s" % sid.text, flush=True)
        return 1
    stop = threading.Event()
    threading.Thread(target=keepalive, args=(port, sid, ttl_ms, stop), daemon=True).start()
    token = c.call("LOCK", lock, sid, "WAIT", 10000)
    if not isinstance(token, int):
        print("error lock: %r" % (token,), flush=True)
        return 1
    print("token %d" % token, flush=True)

    rc, out, err = psql(psql_argv, "BEGIN; SELECT fencelock.fence('%s', %d) \\g /dev/null\n"
                        "SELECT qty FROM stock WHERE item = '%s'; COMMIT;" % (lock, token, item))
    if rc != 0:
        print("error read: %s" % err.strip(), flush=True)
        return 1
    qty = int(out)
    print("read %d" % qty, flush=True)

    sys.stdin.readline()  # the pause: the test SIGSTOPs this process around here

    rc, out, err = psql(psql_argv,
                        "BEGIN;\nSELECT fencelock.fence('%s', %d) \\g /dev/null\n"
                        "UPDATE stock SET qty = %d WHERE item = '%s';\n"
                        "INSERT INTO sales (item, buyer, token) VALUES ('%s', '%s', %d);\n"
                        "COMMIT;\n" % (lock, token, qty - 1, item, item, buyer, token))
    stop.set()
    if rc == 0:
        print("sold", flush=True)
    else:
        state = sqlstate_of(err)
        print("refused %s" % state, flush=True)
        sys.stderr.write(err)
        if state is None:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
