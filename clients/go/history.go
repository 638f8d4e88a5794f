// SPDX-License-Identifier: Apache-2.0

package fencelock

// What the servers know of one lock: its state now (LOCK.INFO, with the grant's value, max
// hold, transitions and a reentrant holder's count) and its past grants (LOCK.HISTORY,
// docs/protocol.md "Lock history"). Reads: resent freely, answered by the leader.

import (
	"context"
	"time"
)

// LockInfo is a lock's state (LOCK.INFO).
type LockInfo struct {
	Holder      uint64   // the exclusive holder's sid, 0 if none (free, shared or lock-delay)
	Token       uint64   // the exclusive holder's token
	HeldSinceMs uint64   // the leader's wall clock at the grant (informational)
	LockDelay   bool     // in lock-delay
	Mode        string   // exclusive, shared, or none (lock-delay with no holder)
	Waiters     []uint64 // sids in queue order (both modes)
	Value       string   // the exclusive grant's value (WithValue), "" if none
	MaxHold     time.Duration
	Transitions uint64 // exclusive grants of this lock record that ended (0 for its first holder)
	// Count is the exclusive holder's holds: a Reentrant session's count, 1 for any other
	// holder, 0 without an exclusive holder.
	Count uint64
}

// LockInfo reads lock name; ErrNotFound if it is free and nobody waits.
func (c *Client) LockInfo(ctx context.Context, name string) (*LockInfo, error) {
	r, err := c.do(ctx, newCmd("LOCK.INFO", name))
	if err != nil {
		return nil, err
	}
	m, err := asMap(r)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, ErrNotFound
	}
	li := &LockInfo{Holder: fieldUint(m, "holder"), Token: fieldUint(m, "token"),
		HeldSinceMs: fieldUint(m, "held_since_ms"), LockDelay: fieldUint(m, "lockdelay") == 1,
		Mode: asString(m["mode"]), Value: asString(m["value"]),
		MaxHold:     time.Duration(fieldUint(m, "max_hold_ms")) * time.Millisecond,
		Transitions: fieldUint(m, "transitions"), Count: fieldUint(m, "count")}
	if a, ok := m["waiters"].([]any); ok {
		for _, x := range a {
			n, _ := asUint(x)
			li.Waiters = append(li.Waiters, n)
		}
	}
	if _, counted := m["count"]; !counted && li.Holder != 0 {
		li.Count = 1 // only a reentrant holder's count is sent
	}
	return li, nil
}

// HistoryWaiter is a session that was queued when a grant was made, and how long it had
// waited by then.
type HistoryWaiter struct {
	SID    uint64
	Waited time.Duration
}

// HistoryEntry is one grant of a lock, semaphore or election (LOCK.HISTORY). Times are the
// leaders' wall clocks (ms since the epoch) as the log entries carry them.
type HistoryEntry struct {
	Kind         string // lock, semaphore or election
	SID          uint64 // the grantee
	SessionName  string // its session's name at the grant
	User         string // its owner (the ACL user), "" without --acl-file
	Value        string // the lock's value at the grant
	Token        uint64 // the grant's token (the revision it was granted at)
	Permits      uint64 // a semaphore acquisition's permits; 1 otherwise
	GrantedMs    uint64
	Waited       time.Duration   // how long the grantee had queued (0: granted at once)
	EndedRev     uint64          // 0 while held
	EndedMs      uint64          // 0 while held
	EndedBy      string          // "" while held; unlock, release, resign, expiry, session-close, ...
	Held         time.Duration   // EndedMs - GrantedMs (0 while held)
	WaitersTotal uint64          // the sessions queued at the grant
	Waiters      []HistoryWaiter // the first few of them, in the order they queued
}

// LockHistory reads the grants of lock (semaphore, election) name, newest first: at most
// count (0: the servers' default, 100), only tokens below before (0: from the newest; the
// next page: the last entry's Token). ErrCompacted when the range asked was dropped (the
// oldest grants go first).
func (c *Client) LockHistory(ctx context.Context, name string, count int, before uint64) ([]HistoryEntry, error) {
	cm := newCmd("LOCK.HISTORY", name)
	if count > 0 {
		cm.add("COUNT", u64(uint64(count)))
	}
	if before > 0 {
		cm.add("BEFORE", u64(before))
	}
	r, err := c.do(ctx, cm)
	if err != nil {
		return nil, err
	}
	a, ok := r.([]any)
	if !ok && r != nil {
		return nil, errProto
	}
	out := make([]HistoryEntry, 0, len(a))
	for _, x := range a {
		m, err := asMap(x)
		if err != nil || m == nil {
			return nil, errProto
		}
		e := HistoryEntry{Kind: asString(m["kind"]), SID: fieldUint(m, "session"),
			SessionName: asString(m["session_name"]), User: asString(m["user"]),
			Value: asString(m["value"]), Token: fieldUint(m, "token"),
			Permits: fieldUint(m, "permits"), GrantedMs: fieldUint(m, "granted_ms"),
			Waited:   time.Duration(fieldUint(m, "waited_ms")) * time.Millisecond,
			EndedRev: fieldUint(m, "ended_rev"), EndedMs: fieldUint(m, "ended_ms"),
			EndedBy:      asString(m["ended_by"]),
			Held:         time.Duration(fieldUint(m, "held_ms")) * time.Millisecond,
			WaitersTotal: fieldUint(m, "waiters_total")}
		if ws, ok := m["waiters"].([]any); ok {
			for _, w := range ws {
				wm, err := asMap(w)
				if err != nil || wm == nil {
					return nil, errProto
				}
				e.Waiters = append(e.Waiters, HistoryWaiter{SID: fieldUint(wm, "session"),
					Waited: time.Duration(fieldUint(wm, "waited_ms")) * time.Millisecond})
			}
		}
		out = append(out, e)
	}
	return out, nil
}
