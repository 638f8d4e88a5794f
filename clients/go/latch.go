// SPDX-License-Identifier: Apache-2.0

package fencelock

// Countdown latches and double barriers bound to sessions (docs/protocol.md "Latches and
// barriers"): a joined session that ends before it counted down, or a session that ends
// inside a barrier, breaks it, and every waiter gets ErrBroken at once instead of waiting
// forever. Joins, count-downs, enters and leaves go through a Session (exactly once); the
// latch's creation, wait, info and deletion need none.

import (
	"context"
	"errors"
	"time"
)

// LatchCreate makes a countdown latch of count (1..1048576) counts. The same count again
// changes nothing (so a resend is harmless); another count is a *ServerError (word ERR); a
// broken latch is ErrBroken (LatchDelete it first).
func (c *Client) LatchCreate(ctx context.Context, name string, count int) error {
	if count < 1 {
		return errors.New("fencelock: a latch's count must be at least 1")
	}
	cm := newCmd("LATCH.CREATE", name, u64(uint64(count)))
	cm.write = true
	_, err := c.do(ctx, cm)
	return err
}

// LatchWait waits up to wait (0: checks once) for the latch to reach zero: nil then,
// ErrTimeout when the wait ran out, ErrBroken when a joined session ended before counting
// down, a *ServerError (word ERR) when there is no such latch. A waiter is released only by
// the commit of the last count-down. A fail-over during the wait is asked again of the new
// leader.
func (c *Client) LatchWait(ctx context.Context, name string, wait time.Duration) error {
	cm := newCmd("LATCH.WAIT", name)
	end := time.Now().Add(wait)
	deadline := c.deadline(ctx)
	if wait > 0 {
		cm.wait(end)
		deadline = end.Add(c.opts.Timeout)
		if cd, ok := ctx.Deadline(); ok && cd.Before(deadline) {
			deadline = cd
		}
	}
	stop, cause := ctxStop(ctx)
	r, err := c.p.call(cm, deadline, stop, cause)
	if err != nil {
		return err
	}
	if r == nil {
		return ErrTimeout
	}
	return nil
}

// LatchInfo is a latch's or a barrier's state (LATCH.INFO).
type LatchInfo struct {
	Type      string   // "latch" or "barrier"
	State     string   // a latch: counting, zero, broken; a barrier: filling, full, broken
	Count     uint64   // its count
	Remaining uint64   // a latch: counts left; a barrier: sessions to come (filling) or inside (full)
	Joiners   []uint64 // the participants' sids, ascending
	Counted   []bool   // per joiner: it counted down (a latch)
	BrokenSID uint64   // the session whose end broke it, 0 if not broken
}

// LatchInfo reads a latch or barrier; ErrNotFound if there is none of that name.
func (c *Client) LatchInfo(ctx context.Context, name string) (*LatchInfo, error) {
	r, err := c.do(ctx, newCmd("LATCH.INFO", name))
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
	li := &LatchInfo{Type: asString(m["type"]), State: asString(m["state"]),
		Count: fieldUint(m, "count"), Remaining: fieldUint(m, "remaining"),
		BrokenSID: fieldUint(m, "broken_sid")}
	if a, ok := m["joiners"].([]any); ok {
		for _, x := range a {
			n, _ := asUint(x)
			li.Joiners = append(li.Joiners, n)
		}
	}
	if a, ok := m["counted"].([]any); ok {
		for _, x := range a {
			n, _ := asUint(x)
			li.Counted = append(li.Counted, n == 1)
		}
	}
	return li, nil
}

// LatchDelete deletes a latch or a barrier in any state (a broken one too: LatchCreate then
// starts afresh); its waiters get a *ServerError. True if one existed. Sent once: a lost
// answer is ErrOutcomeUnknown.
func (c *Client) LatchDelete(ctx context.Context, name string) (bool, error) {
	cm := newCmd("LATCH.DELETE", name)
	cm.write, cm.retry = true, false
	r, err := c.do(ctx, cm)
	if err != nil {
		return false, err
	}
	n, err := asUint(r)
	return n == 1, err
}

// LatchJoin: this session promises one count-down of the latch; if the session ends before
// it counted down, the latch breaks. A *ServerError (word ERR) when every count left is
// promised already, or the latch is at zero.
func (s *Session) LatchJoin(ctx context.Context, name string) error {
	_, err := s.mutate(ctx, newCmd("LATCH.JOIN", name, u64(s.sid)))
	return err
}

// LatchCountdown counts the latch down once (a joined session once; a session that did not
// join only with a count nobody promised) and returns the counts left.
func (s *Session) LatchCountdown(ctx context.Context, name string) (uint64, error) {
	r, err := s.mutate(ctx, newCmd("LATCH.COUNTDOWN", name, u64(s.sid)))
	if err != nil {
		return 0, err
	}
	return asUint(r)
}

// BarrierEnter enters the double barrier name of count sessions (the first enter creates it)
// and waits up to wait (0: once) until count are inside: nil then, ErrTimeout when the wait
// ran out (the session stays inside: enter again to wait again, or leave), ErrBroken when a
// session ended inside.
func (s *Session) BarrierEnter(ctx context.Context, name string, count int, wait time.Duration) error {
	if count < 1 {
		return errors.New("fencelock: a barrier's count must be at least 1")
	}
	return s.waitStep(ctx, newCmd("BARRIER.ENTER", name, u64(s.sid), u64(uint64(count))), wait)
}

// BarrierLeave leaves the barrier and waits up to wait (0: once) until every session that
// entered has left: nil then, ErrTimeout when the wait ran out (this session has left all the
// same), ErrBroken. Leaving a barrier that is still filling withdraws at once.
func (s *Session) BarrierLeave(ctx context.Context, name string, wait time.Duration) error {
	return s.waitStep(ctx, newCmd("BARRIER.LEAVE", name, u64(s.sid)), wait)
}

// waitStep sends a mutation that then waits on the servers (BARRIER.ENTER/LEAVE ... WAIT)
// with the next REQ sid seq: nil for +OK, ErrTimeout for nil. Its step stands whatever the
// wait's outcome, so nothing is given back when the answer is lost.
func (s *Session) waitStep(ctx context.Context, cm *cmd, wait time.Duration) error {
	end := time.Now().Add(wait)
	deadline := s.c.deadline(ctx)
	if wait > 0 {
		cm.wait(end)
		deadline = end.Add(s.c.opts.Timeout)
		if cd, ok := ctx.Deadline(); ok && cd.Before(deadline) {
			deadline = cd
		}
	}
	seq, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer s.end()
	stop, cause := ctxStop(ctx)
	r, err := s.send(cm, seq, deadline, stop, cause)
	if err != nil {
		return err
	}
	if r == nil {
		return ErrTimeout
	}
	return nil
}
