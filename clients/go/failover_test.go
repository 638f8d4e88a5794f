// SPDX-License-Identifier: Apache-2.0

package fencelock_test

// Fail-over, exactly-once and the lost-lease contract against real processes: kill -9 of the
// leader of 3 nodes while a lock waits and while a watcher reads, SIGSTOP of a node until the
// safe deadline passes, answers lost in flight.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	fencelock "github.com/fencelock/fencelock-go"
)

func leaderOf(t *testing.T, ss []*server) *server { return waitLeader(t, ss) }

// grants counts the grant events of lock name to session sid in the event history.
func grants(t *testing.T, c *fencelock.Client, name string, sid uint64) int {
	return countEvents(t, c, name, "grant", sid)
}

// countEvents counts the events of a type for lock name and session sid in the history.
func countEvents(t *testing.T, c *fencelock.Client, name, typ string, sid uint64) int {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	r, err := c.Do(ctx, "XREAD", "COUNT", "100000", "STREAMS", "fencelock:events:"+name, "0")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	streams, _ := r.([]any)
	for _, st := range streams {
		entries, _ := st.([]any)[1].([]any)
		for _, e := range entries {
			kv, _ := e.([]any)[1].([]any)
			f := map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				f[fmt.Sprint(kv[i])] = fmt.Sprint(kv[i+1])
			}
			if f["type"] == typ && f["name"] == name && f["sid"] == strconv.FormatUint(sid, 10) {
				n++
			}
		}
	}
	return n
}

// A lock waited for across a kill -9 of the leader is granted once, with a higher token.
func TestLockWaitAcrossLeaderKill(t *testing.T) {
	ss := cluster(t, 3)
	c := newClient(t, fencelock.Options{Endpoints: endpoints(ss)})
	ctx := ctxFor(t, 120*time.Second)
	a, err := c.NewSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.NewSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ta, _, err := a.Lock(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		tok uint64
		err error
	}
	got := make(chan res, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		tok, _, err := b.Lock(wctx, "job")
		got <- res{tok, err}
	}()
	// b is queued once its wait event is in the log
	lead := leaderOf(t, ss)
	waitFor(t, "b queued", 20*time.Second, func() bool {
		r, err := c.Do(ctx, "LOCK.INFO", "job")
		return err == nil && fmt.Sprint(r) != "" && containsSid(r, b.ID())
	})
	lead.kill()
	if err := a.Unlock(ctx, "job"); err != nil {
		t.Fatalf("Unlock through the new leader: %v", err)
	}
	r := <-got
	if r.err != nil || r.tok <= ta {
		t.Fatalf("the waiting Lock: token %d (holder's was %d), %v", r.tok, ta, r.err)
	}
	var alive []*server
	for _, s := range ss {
		if s != lead {
			alive = append(alive, s)
		}
	}
	nl := leaderOf(t, alive)
	dc := nl.direct()
	defer dc.Close()
	if n := grants(t, dc, "job", b.ID()); n != 1 {
		t.Fatalf("grants of job to the waiting session: %d, want 1", n)
	}
	if err := c.FenceCheck(ctx, "job", r.tok); err != nil {
		t.Fatalf("the granted token is not current: %v", err)
	}
	a.Close(ctx)
	b.Close(ctx)
}

// A lock waited for while the leader is SIGSTOPped (it accepts connections but never
// answers: no EOF tells the client) is granted once on the new leader, with a higher token,
// and stays the only holder once the old leader runs again.
func TestLockWaitAcrossLeaderPause(t *testing.T) {
	ss := cluster(t, 3)
	c := newClient(t, fencelock.Options{Endpoints: endpoints(ss)})
	ctx := ctxFor(t, 120*time.Second)
	a, err := c.NewSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.NewSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ta, _, err := a.Lock(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		tok uint64
		err error
	}
	got := make(chan res, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		tok, _, err := b.Lock(wctx, "job")
		got <- res{tok, err}
	}()
	lead := leaderOf(t, ss)
	waitFor(t, "b queued", 20*time.Second, func() bool {
		r, err := c.Do(ctx, "LOCK.INFO", "job")
		return err == nil && containsSid(r, b.ID())
	})
	lead.sigstop()
	var alive []*server
	for _, s := range ss {
		if s != lead {
			alive = append(alive, s)
		}
	}
	leaderOf(t, alive)
	if err := a.Unlock(ctx, "job"); err != nil {
		t.Fatalf("Unlock through the new leader: %v", err)
	}
	r := <-got
	if r.err != nil || r.tok <= ta {
		t.Fatalf("the waiting Lock: token %d (holder's was %d), %v", r.tok, ta, r.err)
	}
	lead.sigcont()
	nl := leaderOf(t, ss)
	dc := nl.direct()
	defer dc.Close()
	if n := grants(t, dc, "job", b.ID()); n != 1 {
		t.Fatalf("grants of job to the waiting session: %d, want 1", n)
	}
	if err := c.FenceCheck(ctx, "job", r.tok); err != nil {
		t.Fatalf("the granted token is not current: %v", err)
	}
	if b.Lost() || a.Lost() {
		t.Fatal("a session was lost across the pause")
	}
	a.Close(ctx)
	b.Close(ctx)
}

func containsSid(r any, sid uint64) bool {
	a, _ := r.([]any)
	for i := 0; i+1 < len(a); i += 2 {
		if fmt.Sprint(a[i]) == "waiters" {
			ws, _ := a[i+1].([]any)
			for _, w := range ws {
				if fmt.Sprint(w) == strconv.FormatUint(sid, 10) {
					return true
				}
			}
		}
	}
	return false
}

// A watcher reading across a kill -9 of the leader delivers every acknowledged write, each
// once, in order.
func TestWatchAcrossLeaderKill(t *testing.T) {
	ss := cluster(t, 3)
	c := newClient(t, fencelock.Options{Endpoints: endpoints(ss)})
	ctx := ctxFor(t, 120*time.Second)
	s, err := c.NewSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	w, err := c.Watch(ctx, "w/", "")
	if err != nil {
		t.Fatal(err)
	}
	acked := map[uint64]bool{}
	lead := leaderOf(t, ss)
	for i := 0; i < 40; i++ {
		if i == 15 {
			lead.kill()
		}
		rev, err := c.Put(ctx, "w/"+strconv.Itoa(i), "v", fencelock.WithSession(s))
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		acked[rev] = true
	}
	seen := map[string]bool{}
	var last uint64
	lastID := ""
	timeout := time.After(60 * time.Second)
	for len(acked) > 0 {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watcher ended: %v", w.Err())
			}
			if seen[ev.ID] {
				t.Fatalf("event %s delivered twice", ev.ID)
			}
			seen[ev.ID] = true
			if lastID != "" && !idLess(lastID, ev.ID) {
				t.Fatalf("event %s after %s", ev.ID, lastID)
			}
			lastID = ev.ID
			if ev.Type == "put" {
				rev := ev.Rev()
				if rev < last {
					t.Fatalf("rev %d after %d", rev, last)
				}
				last = rev
				delete(acked, rev)
			}
		case <-timeout:
			t.Fatalf("acknowledged writes never delivered: %v", acked)
		}
	}
	if got := w.Stop(); got != lastID {
		t.Fatalf("Stop's last %q, the last delivered %q", got, lastID)
	}
}

func idLess(a, b string) bool {
	ra, sa := splitID(a)
	rb, sb := splitID(b)
	return ra < rb || (ra == rb && sa < sb)
}

func splitID(id string) (uint64, uint64) {
	var r, s uint64
	fmt.Sscanf(id, "%d-%d", &r, &s)
	return r, s
}

// infoRemaining reads SESSION.INFO remaining_ms of sid through c (the leader's time left).
func infoRemaining(t *testing.T, c *fencelock.Client, sid uint64) int64 {
	t.Helper()
	r, err := c.Do(ctxFor(t, 10*time.Second), "SESSION.INFO", strconv.FormatUint(sid, 10))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := r.([]any)
	for j := 0; j+1 < len(a); j += 2 {
		if fmt.Sprint(a[j]) == "remaining_ms" {
			n, _ := a[j+1].(int64)
			return n
		}
	}
	t.Fatalf("SESSION.INFO without remaining_ms: %v", r)
	return 0
}

// The session's context is cancelled when the safe deadline passes without an acknowledged
// keepalive, before the servers' own deadline: a partition (a proxy that forwards nothing)
// keeps every keepalive from the node, which runs on and reports its deadline to a direct
// SESSION.INFO; then the node is stopped, so the client cannot reach it another way either.
// The cancellation must come before the leader's deadline as that read bounds it from below
// (the read's send time plus the time left it reported).
func TestLostBeforeTheServersExpire(t *testing.T) {
	s := single(t)
	p := newProxy(t, s.addr())
	// DriftPPM 10 %: what the client keeps back, 300 ms of the 3 s TTL, is the slack for a
	// loaded machine between the leader's answer and the check's send time.
	c := newClient(t, fencelock.Options{Endpoints: []string{p.addr()}, DriftPPM: 100000})
	ctx := ctxFor(t, 60*time.Second)
	se, err := c.NewSession(ctx, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, held, err := se.Lock(ctx, "l")
	if err != nil {
		t.Fatal(err)
	}
	dc := s.direct()
	defer dc.Close()
	p.setBlackhole()
	sent := time.Now()
	rem := infoRemaining(t, dc, se.ID())
	serverDeadline := sent.Add(time.Duration(rem) * time.Millisecond)
	s.sigstop()
	select {
	case <-held.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the lock's context was not cancelled while no keepalive got through")
	}
	lostAt := time.Now()
	if !errors.Is(context.Cause(held), fencelock.ErrSession) || !se.Lost() || !se.SafeUntil().IsZero() {
		t.Fatalf("lost session: cause %v, Lost %v", context.Cause(held), se.Lost())
	}
	if !lostAt.Before(serverDeadline) {
		t.Fatalf("cancelled %v after the leader's deadline", lostAt.Sub(serverDeadline))
	}
	s.sigcont()
	if _, _, err := se.TryLock(ctx, "l"); !errors.Is(err, fencelock.ErrSession) {
		t.Fatalf("a call on a lost session: %v", err)
	}
}

// The safe deadline is counted from the keepalive's send time, not from its answer: with
// every reply delayed by 300 ms on the way back and margin and drift 0, the safe deadline,
// read before a direct SESSION.INFO, is never later than the leader's deadline as that read
// bounds it from above (the read's receive time plus the time left it reported, +1 ms for
// whole milliseconds). A deadline counted from the answer would be 300 ms later.
func TestSafeDeadlineNeverAfterTheServers(t *testing.T) {
	s := single(t)
	p := newProxy(t, s.addr())
	c := newClient(t, fencelock.Options{Endpoints: []string{p.addr()}, Margin: -1, DriftPPM: -1})
	ctx := ctxFor(t, 60*time.Second)
	se, err := c.NewSession(ctx, 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close(ctx)
	p.setDelay(300 * time.Millisecond)
	dc := s.direct()
	defer dc.Close()
	for i := 0; i < 60; i++ {
		su := se.SafeUntil()
		if su.IsZero() {
			t.Fatal("session lost")
		}
		rem := infoRemaining(t, dc, se.ID())
		if srv := time.Now().Add(time.Duration(rem+1) * time.Millisecond); su.After(srv) {
			t.Fatalf("safe deadline %v after the leader's (%d ms left)", su.Sub(srv), rem)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
