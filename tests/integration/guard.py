# SPDX-License-Identifier: Apache-2.0
"""One test body under a time limit, then its clean-up under another: the part the integration
runner (run.py) and the conformance runner (tests/conformance/run.py) share.

guarded(fn, ctx, limit, finish_limit, force) runs fn(ctx) with SIGALRM armed for `limit`
seconds, then ctx.finish() for at most `finish_limit`; if the clean-up overruns, force() kills
what is left. Returns (traceback text or None, the problems ctx.finish() reported, seconds).
A KeyboardInterrupt still cleans up, then propagates.
"""

import signal
import time
import traceback


class TestTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise TestTimeout("exceeded its time limit")


def guarded(fn, ctx, limit, finish_limit, force):
    failure = None
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    t0 = time.monotonic()
    try:
        fn(ctx)
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            signal.setitimer(signal.ITIMER_REAL, 0)
            ctx.finish()
            raise
        failure = traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        signal.setitimer(signal.ITIMER_REAL, finish_limit)
        problems = ctx.finish()
    except TestTimeout:
        problems = ["shutdown exceeded %g s" % finish_limit]
        force()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return failure, problems, time.monotonic() - t0
