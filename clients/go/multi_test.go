// SPDX-License-Identifier: Apache-2.0

package fencelock_test

// Several locks at once and deadlocks, on one node: LockMulti's all-or-nothing grant with a
// token per name in the order given, shared names, a waiting multi-request granted when the
// last of its names is released, UnlockMulti and WithLocks; a two-session cycle refused
// ErrDeadlock with its cycle text.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	fencelock "github.com/fencelock/fencelock-go"
)

func TestLockMulti(t *testing.T) {
	s := single(t)
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
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

	names := []string{"m/z", "m/a", "m/r"}
	toks, held, err := a.LockMulti(ctx, names, fencelock.SharedNames("m/r"))
	if err != nil || len(toks) != 3 || held.Err() != nil {
		t.Fatalf("LockMulti: %v %v", toks, err)
	}
	// One entry: consecutive revisions in the byte order of the names, listed as given.
	if !(toks[1]+1 == toks[2] && toks[2]+1 == toks[0]) {
		t.Fatalf("tokens %v: want consecutive in name order m/a < m/r < m/z", toks)
	}
	for i, n := range names[:2] {
		if err := c.FenceCheck(ctx, n, toks[i]); err != nil {
			t.Fatalf("FenceCheck %s %d: %v", n, toks[i], err)
		}
	}
	// m/r is shared: another session reads it too; the exclusive names are busy, and a try
	// that includes one of them takes nothing.
	if _, _, err := b.TryLock(ctx, "m/r", fencelock.Shared()); err != nil {
		t.Fatalf("shared TryLock of m/r: %v", err)
	}
	if err := b.Unlock(ctx, "m/r"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.TryLockMulti(ctx, []string{"m/free", "m/a"}); !errors.Is(err, fencelock.ErrBusy) {
		t.Fatalf("TryLockMulti over a held name: %v, want ErrBusy", err)
	}
	if _, _, err := b.TryLock(ctx, "m/free"); err != nil {
		t.Fatalf("m/free after a refused TryLockMulti: %v (all or nothing)", err)
	}
	if err := b.Unlock(ctx, "m/free"); err != nil {
		t.Fatal(err)
	}

	// b waits for {m/a, m/z}; it is granted only after both are released, above a's tokens.
	got := make(chan error, 1)
	var btoks []uint64
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var e error
		btoks, _, e = b.LockMulti(wctx, []string{"m/a", "m/z"})
		got <- e
	}()
	waitFor(t, "b queued on m/z", 20*time.Second, func() bool {
		r, err := c.Do(ctx, "LOCK.INFO", "m/z")
		return err == nil && containsSid(r, b.ID())
	})
	if err := a.Unlock(ctx, "m/a"); err != nil {
		t.Fatal(err)
	}
	if held.Err() == nil {
		t.Fatal("the set's context was not cancelled by unlocking one of its names")
	}
	select {
	case e := <-got:
		t.Fatalf("b granted while a still holds m/z: %v", e)
	default:
	}
	if err := a.UnlockMulti(ctx, []string{"m/z", "m/r"}); err != nil {
		t.Fatalf("UnlockMulti: %v", err)
	}
	if e := <-got; e != nil {
		t.Fatalf("b's LockMulti: %v", e)
	}
	if len(btoks) != 2 || btoks[0] <= toks[0] || btoks[1] <= toks[0] {
		t.Fatalf("b's tokens %v not above a's %v", btoks, toks)
	}
	if err := b.UnlockMulti(ctx, []string{"m/a", "m/z"}); err != nil {
		t.Fatal(err)
	}

	// The callback form: held inside, released after, the callback's error returned.
	boom := errors.New("boom")
	err = a.WithLocks(ctx, []string{"w/1", "w/2"}, func(hctx context.Context, tokens []uint64) error {
		if hctx.Err() != nil || len(tokens) != 2 {
			t.Errorf("inside WithLocks: %v %v", hctx.Err(), tokens)
		}
		if _, _, err := b.TryLock(ctx, "w/2"); !errors.Is(err, fencelock.ErrBusy) {
			t.Errorf("w/2 inside WithLocks: %v, want ErrBusy", err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("WithLocks: %v, want the callback's error", err)
	}
	if _, _, err := b.TryLockMulti(ctx, []string{"w/1", "w/2"}); err != nil {
		t.Fatalf("after WithLocks: %v (not released)", err)
	}
}

func TestDeadlockRefused(t *testing.T) {
	s := single(t)
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
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
	if _, _, err := a.Lock(ctx, "d/a"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Lock(ctx, "d/b"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, _, e := a.Lock(wctx, "d/b")
		done <- e
	}()
	waitFor(t, "a queued on d/b", 20*time.Second, func() bool {
		r, err := c.Do(ctx, "LOCK.INFO", "d/b")
		return err == nil && containsSid(r, a.ID())
	})
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	_, _, err = b.Lock(wctx, "d/a")
	cancel()
	var de *fencelock.DeadlockError
	if !errors.Is(err, fencelock.ErrDeadlock) || !errors.As(err, &de) || fencelock.Word(err) != "DEADLOCK" {
		t.Fatalf("the wait closing the cycle: %v, want ErrDeadlock", err)
	}
	if !strings.HasPrefix(de.Cycle, "cycle of 2:") || !strings.Contains(de.Cycle, "-d/a->") ||
		!strings.Contains(de.Cycle, "-d/b->") {
		t.Fatalf("cycle text %q", de.Cycle)
	}
	// Nothing else changed: b still holds d/b, a still waits; b lets go and a is granted.
	if err := b.Unlock(ctx, "d/b"); err != nil {
		t.Fatal(err)
	}
	if e := <-done; e != nil {
		t.Fatalf("a's wait after the cycle was refused: %v", e)
	}
}
