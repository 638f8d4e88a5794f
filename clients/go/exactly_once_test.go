// SPDX-License-Identifier: Apache-2.0

package fencelock_test

// Exactly-once and ambiguous outcomes: answers lost in flight (the node SIGSTOPped with the
// command in its socket), redirects from a follower, compacted history, TLS and AUTH.

import (
	"errors"
	"testing"
	"time"

	fencelock "github.com/fencelock/fencelock-go"
)

// A write through a session whose answer is lost is resent with the same REQ sid seq and
// applies once; without a session it is reported as ErrOutcomeUnknown (and did apply); a
// session write whose answer never comes before the deadline is ErrOutcomeUnknown too, never
// ErrUnavailable.
func TestAmbiguousOutcomes(t *testing.T) {
	s := single(t)
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()},
		ConnectTimeout: 500 * time.Millisecond, Timeout: 20 * time.Second})
	ctx := ctxFor(t, 90*time.Second)
	se, err := c.NewSession(ctx, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Abandon() // the node is gone at the end

	// the node stops, the write waits in its socket; the node runs again after the client gave
	// the first connection up (ConnectTimeout) and resent on a new one
	s.sigstop()
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		time.Sleep(1500 * time.Millisecond)
		s.sigcont()
	}()
	t0 := time.Now()
	rev, err := c.Put(ctx, "once", "v", fencelock.WithSession(se))
	<-resumed
	t.Logf("resent write: %v", time.Since(t0))
	if err != nil {
		t.Fatalf("session write across a lost answer: %v", err)
	}
	kv, err := c.Get(ctx, "once")
	if err != nil || kv.Version != 1 || kv.ModRev != rev {
		t.Fatalf("applied more than once or not at all: %+v (rev %d) %v", kv, rev, err)
	}

	t0 = time.Now()
	// without a session: sent once, the lost answer is an unknown outcome
	s.sigstop()
	_, err = c.Put(ctx, "maybe", "v")
	s.sigcont()
	if !errors.Is(err, fencelock.ErrOutcomeUnknown) {
		t.Fatalf("sessionless write with a lost answer: %v, want ErrOutcomeUnknown", err)
	}
	waitFor(t, "the write that was in the socket applied", 20*time.Second, func() bool {
		kv, err := c.Get(ctx, "maybe")
		return err == nil && kv.Version == 1
	})

	t.Logf("sessionless: %v", time.Since(t0))
	t0 = time.Now()
	// through a session, the deadline passes with the node stopped: unknown, not unavailable
	s.sigstop()
	short := ctxFor(t, 2*time.Second)
	_, err = c.Put(short, "late", "v", fencelock.WithSession(se))
	s.sigcont()
	if !errors.Is(err, fencelock.ErrOutcomeUnknown) || errors.Is(err, fencelock.ErrUnavailable) {
		t.Fatalf("session write past its deadline: %v, want ErrOutcomeUnknown", err)
	}
	t.Logf("late: %v", time.Since(t0))
	// nothing listens: nothing was sent, so unavailable
	s.kill()
	_, err = c.Put(ctxFor(t, 2*time.Second), "none", "v", fencelock.WithSession(se))
	if !errors.Is(err, fencelock.ErrUnavailable) {
		t.Fatalf("write to a dead node: %v, want ErrUnavailable", err)
	}
}

// A client given only a follower follows -NOTLEADER to the leader.
func TestFollowsNotLeader(t *testing.T) {
	ss := cluster(t, 3)
	lead := waitLeader(t, ss)
	var follower *server
	for _, s := range ss {
		if s != lead {
			follower = s
			break
		}
	}
	c := newClient(t, fencelock.Options{Endpoints: []string{follower.addr()}})
	ctx := ctxFor(t, 60*time.Second)
	se, err := c.NewSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close(ctx)
	if _, _, err := se.Lock(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if c.LeaderAddress() != lead.addr() {
		t.Fatalf("leader %q, want %q", c.LeaderAddress(), lead.addr())
	}
}

// A watcher whose next event is no longer retained ends with a *CompactedError naming the
// oldest retained id; a watcher from the id before it goes on with no gap.
func TestWatchCompacted(t *testing.T) {
	s := single(t, "--event-history", "8")
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	ctx := ctxFor(t, 60*time.Second)
	for i := 0; i < 20; i++ {
		if _, err := c.Put(ctx, "k", "v"); err != nil {
			t.Fatal(err)
		}
	}
	w, err := c.Watch(ctx, "", "1-0")
	if err != nil {
		t.Fatal(err)
	}
	for range w.Events() {
		t.Fatal("an event after a compacted id")
	}
	var ce *fencelock.CompactedError
	if !errors.As(w.Err(), &ce) || !errors.Is(w.Err(), fencelock.ErrCompacted) || ce.Oldest == "" {
		t.Fatalf("watcher end: %v", w.Err())
	}
	w2, err := c.Watch(ctx, "", ce.After)
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w2.Events()
	if ev.ID != ce.Oldest {
		t.Fatalf("resumed at %s, want the oldest retained %s", ev.ID, ce.Oldest)
	}
	w2.Stop()
}
