// SPDX-License-Identifier: Apache-2.0

package fencelock_test

// On one node: countdown latches (released at zero, broken by a joined session's end),
// double barriers, reentrant sessions (the same token, a hold count, the contexts cancelled at
// the last hold only), VALUE and MAXHOLD on a lock (LockInfo, the context cancelled with
// ErrMaxHold, the stale token) and LOCK.HISTORY (newest first, ErrCompacted).

import (
	"context"
	"errors"
	"testing"
	"time"

	fencelock "github.com/fencelock/fencelock-go"
)

func TestLatchZeroAndBroken(t *testing.T) {
	s := single(t)
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	ctx := ctxFor(t, 60*time.Second)
	ss := sessions(t, ctx, c, 3)
	if err := c.LatchCreate(ctx, "lt/a", 2); err != nil {
		t.Fatal(err)
	}
	for _, x := range ss[:2] {
		if err := x.LatchJoin(ctx, "lt/a"); err != nil {
			t.Fatal(err)
		}
	}
	if left, err := ss[0].LatchCountdown(ctx, "lt/a"); err != nil || left != 1 {
		t.Fatalf("countdown: %d, %v; want 1", left, err)
	}
	if err := c.LatchWait(ctx, "lt/a", 0); !errors.Is(err, fencelock.ErrTimeout) {
		t.Fatalf("a wait of 0 at one count left: %v, want ErrTimeout", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.LatchWait(ctx, "lt/a", 30*time.Second) }()
	if left, err := ss[1].LatchCountdown(ctx, "lt/a"); err != nil || left != 0 {
		t.Fatalf("last countdown: %d, %v", left, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the parked wait: %v", err)
	}
	li, err := c.LatchInfo(ctx, "lt/a")
	if err != nil || li.Type != "latch" || li.State != "zero" || li.Count != 2 || li.Remaining != 0 || len(li.Joiners) != 2 {
		t.Fatalf("LatchInfo at zero: %+v, %v", li, err)
	}

	// A joined session that ends before counting down breaks the latch for every waiter.
	if err := c.LatchCreate(ctx, "lt/b", 1); err != nil {
		t.Fatal(err)
	}
	if err := ss[2].LatchJoin(ctx, "lt/b"); err != nil {
		t.Fatal(err)
	}
	go func() { done <- c.LatchWait(ctx, "lt/b", 30*time.Second) }()
	if err := ss[2].Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, fencelock.ErrBroken) || fencelock.Word(err) != "BROKEN" {
		t.Fatalf("the waiter of a broken latch: %v, want ErrBroken", err)
	}
	if err := c.LatchCreate(ctx, "lt/b", 1); !errors.Is(err, fencelock.ErrBroken) {
		t.Fatalf("create of a broken latch: %v", err)
	}
	if li, err := c.LatchInfo(ctx, "lt/b"); err != nil || li.State != "broken" || li.BrokenSID != ss[2].ID() {
		t.Fatalf("LatchInfo of the broken latch: %+v, %v", li, err)
	}
	for _, n := range []string{"lt/a", "lt/b"} {
		if ok, err := c.LatchDelete(ctx, n); err != nil || !ok {
			t.Fatalf("LatchDelete %s: %v, %v", n, ok, err)
		}
	}
	if _, err := c.LatchInfo(ctx, "lt/a"); !errors.Is(err, fencelock.ErrNotFound) {
		t.Fatalf("LatchInfo after delete: %v", err)
	}
}

func TestBarrierEnterLeave(t *testing.T) {
	s := single(t)
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	ctx := ctxFor(t, 60*time.Second)
	ss := sessions(t, ctx, c, 2)
	if err := ss[0].BarrierEnter(ctx, "br/x", 2, 0); !errors.Is(err, fencelock.ErrTimeout) {
		t.Fatalf("an enter of 0 before the barrier is full: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- ss[0].BarrierEnter(ctx, "br/x", 2, 30*time.Second) }()
	if err := ss[1].BarrierEnter(ctx, "br/x", 2, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the first enter: %v", err)
	}
	go func() { done <- ss[0].BarrierLeave(ctx, "br/x", 30*time.Second) }()
	if err := ss[1].BarrierLeave(ctx, "br/x", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the first leave: %v", err)
	}
	if _, err := c.LatchInfo(ctx, "br/x"); !errors.Is(err, fencelock.ErrNotFound) {
		t.Fatalf("the barrier after everybody left: %v", err)
	}
}

func TestReentrantHoldCount(t *testing.T) {
	s := single(t)
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	ctx := ctxFor(t, 60*time.Second)
	r, err := c.NewSession(ctx, 10*time.Second, fencelock.Reentrant(2))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	t1, hctx1, err := r.Lock(ctx, "re/x")
	if err != nil {
		t.Fatal(err)
	}
	t2, _, err := r.Lock(ctx, "re/x")
	if err != nil || t2 != t1 {
		t.Fatalf("re-lock: %d, %v; want the same token %d", t2, err, t1)
	}
	if li, err := c.LockInfo(ctx, "re/x"); err != nil || li.Count != 2 || li.Holder != r.ID() {
		t.Fatalf("LockInfo: %+v, %v; want count 2", li, err)
	}
	var se *fencelock.ServerError
	if _, _, err := r.Lock(ctx, "re/x"); !errors.As(err, &se) || se.Word != "ERR" {
		t.Fatalf("a lock over MAXCOUNT 2: %v", err)
	}
	if err := r.Unlock(ctx, "re/x"); err != nil {
		t.Fatal(err)
	}
	if hctx1.Err() != nil {
		t.Fatal("the lock's context was cancelled while one hold is left")
	}
	if li, err := c.LockInfo(ctx, "re/x"); err != nil || li.Count != 1 {
		t.Fatalf("LockInfo after one unlock: %+v, %v", li, err)
	}
	if err := r.Unlock(ctx, "re/x"); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(context.Cause(hctx1), fencelock.ErrReleased) {
		t.Fatalf("the lock's context after the last unlock: %v", context.Cause(hctx1))
	}
	if _, err := c.LockInfo(ctx, "re/x"); !errors.Is(err, fencelock.ErrNotFound) {
		t.Fatalf("the lock after the last unlock: %v", err)
	}
}

func TestLockValueMaxHoldHistory(t *testing.T) {
	s := single(t, "--history-per-lock", "2")
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	ctx := ctxFor(t, 60*time.Second)
	ss := sessions(t, ctx, c, 2)
	h, w := ss[0], ss[1]
	if _, _, err := h.Lock(ctx, "mv/x", fencelock.Shared(), fencelock.WithValue("v")); err == nil {
		t.Fatal("Shared with a value was sent")
	}
	t1, hctx, err := h.Lock(ctx, "mv/x", fencelock.WithValue("host-a"), fencelock.MaxHold(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	dl, ok := h.MaxHoldDeadline("mv/x")
	if d, has := hctx.Deadline(); !ok || !has || !d.Equal(dl) || time.Until(dl) > time.Second {
		t.Fatalf("the max-hold deadline: %v %v, the context's %v", dl, ok, d)
	}
	li, err := c.LockInfo(ctx, "mv/x")
	if err != nil || li.Value != "host-a" || li.MaxHold != time.Second || li.Transitions != 0 || li.Count != 1 {
		t.Fatalf("LockInfo: %+v, %v", li, err)
	}
	// The servers end the grant at its max hold; the waiter gets it with a larger token.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	t2, _, err := w.Lock(wctx, "mv/x")
	cancel()
	if err != nil || t2 <= t1 {
		t.Fatalf("the waiter: %d, %v (the bounded grant's token %d)", t2, err, t1)
	}
	<-hctx.Done()
	if !errors.Is(context.Cause(hctx), fencelock.ErrMaxHold) {
		t.Fatalf("the bounded lock's context: %v", context.Cause(hctx))
	}
	if _, err := c.Put(ctx, "mv/k", "late", fencelock.Fence("mv/x", t1)); !errors.Is(err, fencelock.ErrStale) {
		t.Fatalf("a write fenced with the ended grant's token: %v", err)
	}
	if err := w.Unlock(ctx, "mv/x"); err != nil {
		t.Fatal(err)
	}
	hs, err := c.LockHistory(ctx, "mv/x", 0, 0)
	if err != nil || len(hs) != 2 {
		t.Fatalf("LockHistory: %+v, %v", hs, err)
	}
	if hs[0].Token != t2 || hs[0].SID != w.ID() || hs[0].EndedBy != "unlock" || hs[0].Kind != "lock" ||
		hs[1].Token != t1 || hs[1].SID != h.ID() || hs[1].EndedBy == "" || hs[1].EndedBy == "unlock" {
		t.Fatalf("LockHistory: %+v", hs)
	}
	if len(hs[1].Waiters) != 0 || hs[0].WaitersTotal != 0 || hs[0].Waited <= 0 {
		t.Fatalf("LockHistory's waits: %+v", hs)
	}
	// One more grant pushes the first out (2 kept per lock): asking before it is ErrCompacted.
	if _, _, err := h.Lock(ctx, "mv/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LockHistory(ctx, "mv/x", 0, t2); !errors.Is(err, fencelock.ErrCompacted) ||
		fencelock.Word(err) != "COMPACTED" {
		t.Fatalf("the history before the kept grants: %v, want ErrCompacted", err)
	}
}
