#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/w8_parts.py - one W8 trial of fencelock broken into its parts, from the client's two
instants (lockbench's kill_epoch_ms, grant_epoch_ms) and the nodes' logs.

    bench/w8_parts.py LOGFILE... < W8-JSON-LINE  > the same line with the parts added

The parts, each ending where the next begins (they add up to failover_ms):
  detect_ms     the kill -> the first surviving node's "raft role follower -> candidate" or
                "raft: starting an election" (its election timeout ran out: pre-vote starts
                here; the killed leader's last heartbeat went at most --heartbeat-ms before)
  elect_ms      -> "raft role candidate -> leader (term T)" on the node that won (or
                "follower -> leader": an election that ended between two looks at the role)
  ready_ms      -> "leader ready in term T" on it (its barrier: the first entry of its term
                committed and applied; it grants from then on)
  reconnect_ms  -> the next grant acknowledged to a client (the clients find the new leader,
                resend, and the waiters' queue is served)
and candidacies (over all nodes, after the kill: more than 1 means both followers timed out, a
split or a lost pre-vote) and terms (distinct terms begun after the kill).
Log lines carry wall-clock ms ("2026-12-06T16:23:29.533Z I [1] ..."); the nodes look at their
role every --tick-ms (5) and on every command, so each instant is late by at most that.
A part that cannot be found (a log line missing) is left out, with "parts_note" saying why.
"""
import datetime
import json
import re
import sys

LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z \S \[\d+\] (.*)$")


def epoch_ms(ts):
    d = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
    return d.timestamp() * 1e3


def events(paths, since, until):
    out = []
    for node, path in enumerate(paths, 1):
        try:
            f = open(path, errors="replace")
        except OSError:
            continue
        with f:
            for raw in f:
                m = LINE.match(raw)
                if not m:
                    continue
                t = epoch_ms(m.group(1))
                if since <= t <= until:
                    out.append((t, node, m.group(2)))
    out.sort()
    return out


def parts(row, paths):
    kill, grant = row.get("kill_epoch_ms"), row.get("grant_epoch_ms")
    if kill is None or grant is None:
        return {"parts_note": "no client instants (failed trial)"}
    # a log line is written to the ms the clock showed; the kill instant was read after the
    # kill returned, so a line 1 ms before it may belong to the trial
    ev = events(paths, kill - 1, grant + 1)
    # a candidacy: the role seen going follower -> candidate, or the election's own line (a
    # quick election can end between two looks at the role: follower -> leader)
    cand = [(t, n) for t, n, msg in ev
            if msg.startswith("raft role follower -> candidate") or msg.startswith("raft: starting an election")]
    per_node = {}
    for t, n in cand:  # both lines of one candidacy count once
        if n not in per_node or t - per_node[n][-1] > 50:
            per_node.setdefault(n, []).append(t)
    n_cand = sum(len(v) for v in per_node.values())
    terms = {int(m.group(1)) for _, _, msg in ev for m in [re.match(r"term (\d+) began", msg)] if m}
    res = {"candidacies": n_cand, "terms": len(terms)}
    lead = next(((t, n, int(m.group(1))) for t, n, msg in ev
                 for m in [re.match(r"raft role (?:candidate|follower) -> leader \(term (\d+)\)", msg)] if m), None)
    if not cand or not lead:
        res["parts_note"] = "no candidacy or no new leader in the logs"
        return res
    t_cand = cand[0][0]
    t_lead, node, term = lead
    ready = next((t for t, n, msg in ev if n == node and msg.startswith(f"leader ready in term {term} ")), None)
    res.update({"new_leader": node, "detect_ms": round(t_cand - kill, 1), "elect_ms": round(t_lead - t_cand, 1)})
    if ready is None:
        res["parts_note"] = "the new leader's ready line not found before the grant"
        res["reconnect_ms"] = round(grant - t_lead, 1)
        return res
    res["ready_ms"] = round(ready - t_lead, 1)
    res["reconnect_ms"] = round(grant - ready, 1)
    return res


def main():
    line = sys.stdin.read().strip()
    try:
        row = json.loads(line)
    except ValueError:
        print(line)
        return
    row.update(parts(row, sys.argv[1:]))
    print(json.dumps(row, separators=(",", ":")))


if __name__ == "__main__":
    main()
