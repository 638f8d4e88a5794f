// SPDX-License-Identifier: Apache-2.0

package fencelock_test

// The API on one node: locks (exclusive, shared, try, wait), their contexts, fenced and
// conditional writes, semaphores, elections, sync.Locker, typed errors.

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	fencelock "github.com/fencelock/fencelock-go"
)

func TestLocksFencingAndKeys(t *testing.T) {
	s := single(t)
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	ctx := ctxFor(t, 60*time.Second)
	a, err := c.NewSession(ctx, 10*time.Second, fencelock.WithName("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := c.NewSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)

	tok, held, err := a.Lock(ctx, "inv")
	if err != nil || tok == 0 || held.Err() != nil {
		t.Fatalf("Lock: %d %v", tok, err)
	}
	if _, _, err := b.TryLock(ctx, "inv"); !errors.Is(err, fencelock.ErrBusy) {
		t.Fatalf("TryLock of a held lock: %v, want ErrBusy", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, _, err = b.Lock(wctx, "inv")
	cancel()
	if !errors.Is(err, fencelock.ErrTimeout) {
		t.Fatalf("Lock past its wait: %v, want ErrTimeout", err)
	}
	if err := c.FenceCheck(ctx, "inv", tok); err != nil {
		t.Fatalf("FenceCheck of the holder's token: %v", err)
	}
	rev, err := c.Put(ctx, "stock", "10", fencelock.Fence("inv", tok), fencelock.WithSession(a))
	if err != nil || rev == 0 {
		t.Fatalf("fenced Put: %d %v", rev, err)
	}
	if _, err := c.Put(ctx, "stock", "9", fencelock.IfRev(rev+1000)); !errors.Is(err, fencelock.ErrIfRev) {
		t.Fatalf("Put IfRev wrong: %v, want ErrIfRev", err)
	}
	if _, err := c.Put(ctx, "stock", "9", fencelock.IfRev(rev)); err != nil {
		t.Fatalf("Put IfRev right: %v", err)
	}
	kv, err := c.Get(ctx, "stock")
	if err != nil || kv.Value != "9" || kv.Version != 2 {
		t.Fatalf("Get: %+v %v", kv, err)
	}
	if err := a.Unlock(ctx, "inv"); err != nil {
		t.Fatal(err)
	}
	if held.Err() == nil || !errors.Is(context.Cause(held), fencelock.ErrReleased) {
		t.Fatalf("the lock's context after Unlock: %v", context.Cause(held))
	}
	if _, err := c.Put(ctx, "stock", "8", fencelock.Fence("inv", tok)); !errors.Is(err, fencelock.ErrStale) {
		t.Fatalf("Put with a released token: %v, want ErrStale", err)
	}
	if err := c.FenceCheck(ctx, "inv", tok); !errors.Is(err, fencelock.ErrStale) {
		t.Fatalf("FenceCheck of a released token: %v", err)
	}
	if err := a.Unlock(ctx, "inv"); !errors.Is(err, fencelock.ErrNotHolder) {
		t.Fatalf("second Unlock: %v, want ErrNotHolder", err)
	}
	tok2, _, err := b.Lock(ctx, "inv")
	if err != nil || tok2 <= tok {
		t.Fatalf("next holder's token %d after %d: %v", tok2, tok, err)
	}
	b.Unlock(ctx, "inv")

	// shared: two readers at once, a writer busy
	r1, _, err1 := a.Lock(ctx, "cat", fencelock.Shared())
	r2, _, err2 := b.Lock(ctx, "cat", fencelock.Shared())
	if err1 != nil || err2 != nil || r1 == r2 {
		t.Fatalf("two shared holders: %d %v, %d %v", r1, err1, r2, err2)
	}
	if _, err := c.Put(ctx, "x", "1", fencelock.Fence("cat", r1)); !errors.Is(err, fencelock.ErrStale) {
		t.Fatalf("fenced write with a reader's token: %v, want ErrStale", err)
	}
	a.Unlock(ctx, "cat")
	b.Unlock(ctx, "cat")

	// keys
	if _, err := c.Get(ctx, "nope"); !errors.Is(err, fencelock.ErrNotFound) {
		t.Fatalf("Get of a missing key: %v", err)
	}
	if ok, err := c.Delete(ctx, "stock"); !ok || err != nil {
		t.Fatalf("Delete: %v %v", ok, err)
	}
	if _, err := c.Put(ctx, "leased", "v", fencelock.Lease(b)); err != nil {
		t.Fatal(err)
	}
	b.Close(ctx)
	if _, err := c.Get(ctx, "leased"); !errors.Is(err, fencelock.ErrNotFound) {
		t.Fatalf("a leased key after its session closed: %v", err)
	}
	if _, _, err := b.Lock(ctx, "inv"); !errors.Is(err, fencelock.ErrSession) {
		t.Fatalf("Lock on a closed session: %v, want ErrSession", err)
	}
	if b.Context().Err() == nil || !b.Lost() || !b.SafeUntil().IsZero() {
		t.Fatal("a closed session's context is not cancelled")
	}

	// sync.Locker
	var l interface {
		Lock()
		Unlock()
	} = a.Locker("mu")
	l.Lock()
	if _, _, err := a.TryLock(ctx, "mu"); err != nil { // the holder asking again gets its token
		t.Fatal(err)
	}
	l.Unlock()

	closed := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	closed.Close()
	if _, err := closed.Get(ctx, "k"); !errors.Is(err, fencelock.ErrClientClosed) {
		t.Fatalf("a call after Close: %v", err)
	}
}

func TestSemaphoresAndElections(t *testing.T) {
	s := single(t)
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	ctx := ctxFor(t, 60*time.Second)
	var ss []*fencelock.Session
	for i := 0; i < 3; i++ {
		x, err := c.NewSession(ctx, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close(ctx)
		ss = append(ss, x)
	}
	t1, _, err := ss[0].Acquire(ctx, "pool", 2)
	if err != nil {
		t.Fatal(err)
	}
	t2, _, err := ss[1].TryAcquire(ctx, "pool", 2)
	if err != nil || t2 == t1 {
		t.Fatalf("second permit: %d %v", t2, err)
	}
	if _, _, err := ss[2].TryAcquire(ctx, "pool", 2); !errors.Is(err, fencelock.ErrBusy) {
		t.Fatalf("third permit of 2: %v, want ErrBusy", err)
	}
	if _, _, err := ss[2].TryLock(ctx, "pool"); !errors.Is(err, fencelock.ErrWrongType) {
		t.Fatalf("LOCK on a semaphore: %v, want ErrWrongType", err)
	}
	got := make(chan error, 1)
	go func() {
		_, _, err := ss[2].Acquire(ctx, "pool", 2)
		got <- err
	}()
	time.Sleep(100 * time.Millisecond) // not a bound: the acquire may queue before or after
	if err := ss[0].Release(ctx, "pool"); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting permit: %v", err)
	}

	e1 := fencelock.NewElection(ss[0], "sched")
	e2 := fencelock.NewElection(ss[1], "sched")
	if err := e1.Campaign(ctx, "host-a"); err != nil {
		t.Fatal(err)
	}
	li, err := e1.Leader(ctx)
	if err != nil || li.Sid != ss[0].ID() || li.Value != "host-a" || li.Token != e1.Token() {
		t.Fatalf("Leader: %+v %v", li, err)
	}
	if err := e2.TryCampaign(ctx, "host-b"); !errors.Is(err, fencelock.ErrBusy) {
		t.Fatalf("TryCampaign while led: %v", err)
	}
	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	obs := e2.Observe(octx)
	if first := <-obs; first.Value != "host-a" {
		t.Fatalf("first observed state: %+v", first)
	}
	if err := e1.Proclaim(ctx, "host-a2"); err != nil {
		t.Fatal(err)
	}
	if next := <-obs; next.Value != "host-a2" || next.Sid != ss[0].ID() || next.Rev != e1.Rev() {
		t.Fatalf("observed proclaim: %+v", next)
	}
	lead := e1.Context()
	done := make(chan error, 1)
	go func() { done <- e2.Campaign(ctx, "host-b") }()
	time.Sleep(100 * time.Millisecond)
	if err := e1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if lead.Err() == nil {
		t.Fatal("the leadership's context after Resign is not cancelled")
	}
	if err := <-done; err != nil {
		t.Fatalf("candidate after the resign: %v", err)
	}
	for ev := range obs {
		if ev.Sid == ss[1].ID() {
			if ev.Value != "host-b" || ev.Token != e2.Token() {
				t.Fatalf("observed new leader: %+v", ev)
			}
			break
		}
	}
	if err := e1.Proclaim(ctx, "x"); !errors.Is(err, fencelock.ErrNotHolder) {
		t.Fatalf("Proclaim after Resign: %v", err)
	}
}

// A Lock whose context has no deadline waits until granted, asking the servers for MaxWait
// at a time: here after two waits that ran out (seen as two wait events of the session).
func TestLockWithoutDeadlineOutlastsMaxWait(t *testing.T) {
	s := single(t)
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}, MaxWait: 200 * time.Millisecond})
	ctx := ctxFor(t, 60*time.Second)
	a, err := c.NewSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := c.NewSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if _, _, err := a.Lock(ctx, "mw"); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, _, err := b.Lock(context.Background(), "mw")
		got <- err
	}()
	waitFor(t, "two waits of the second session", 30*time.Second, func() bool {
		return countEvents(t, c, "mw", "wait", b.ID()) >= 2
	})
	select {
	case err := <-got:
		t.Fatalf("Lock without a deadline returned while the lock was held: %v", err)
	default:
	}
	if err := a.Unlock(ctx, "mw"); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Lock without a deadline: %v", err)
	}
}

// A session the servers say is gone (revoked) is lost at once: its context is cancelled with
// the server's -NOSESSION as the cause, not when the safe deadline passes.
func TestSessionGoneOnTheServers(t *testing.T) {
	s := single(t)
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	ctx := ctxFor(t, 60*time.Second)
	se, err := c.NewSession(ctx, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, held, err := se.Lock(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "SESSION.REVOKE", strconv.FormatUint(se.ID(), 10)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the lock's context was not cancelled after the session was revoked")
	}
	var sv *fencelock.ServerError
	cause := context.Cause(held)
	if !errors.Is(cause, fencelock.ErrSession) || !errors.As(cause, &sv) || sv.Word != "NOSESSION" {
		t.Fatalf("cause %v, want the servers' NOSESSION", cause)
	}
}
