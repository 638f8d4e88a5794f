// SPDX-License-Identifier: Apache-2.0

package fencelock_test

// On one node: LOCK ... NOTIFY told to the holder through Session.OnWaiter (once per waiting
// session, never for a waiter that did not ask), INCR (signed, fenced, exactly once through a
// session, an error for a value that is no integer) and weighted semaphores (k permits at
// once, FIFO without overtaking, SEM.SETLIMIT).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	fencelock "github.com/fencelock/fencelock-go"
)

func sessions(t *testing.T, ctx context.Context, c *fencelock.Client, n int) []*fencelock.Session {
	var out []*fencelock.Session
	for i := 0; i < n; i++ {
		s, err := c.NewSession(ctx, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		out = append(out, s)
	}
	return out
}

// waiters is the waiters field of LOCK.INFO / SEM.INFO name (a flat RESP2 array of field,
// value pairs) as "sid,sid,..."; "" if none or on an error.
func waiters(ctx context.Context, c *fencelock.Client, cmd, name string) string {
	r, err := c.Do(ctx, cmd, name)
	m, _ := r.([]any)
	if err != nil {
		return ""
	}
	for i := 0; i+1 < len(m); i += 2 {
		if k, _ := m[i].(string); k == "waiters" {
			w, _ := m[i+1].([]any)
			parts := make([]string, 0, len(w))
			for _, x := range w {
				parts = append(parts, fmt.Sprint(x))
			}
			return strings.Join(parts, ",")
		}
	}
	return ""
}

func u64s(n uint64) string { return strconv.FormatUint(n, 10) }

func TestLockNotifyOnWaiter(t *testing.T) {
	s := single(t)
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	ctx := ctxFor(t, 90*time.Second)
	ss := sessions(t, ctx, c, 4)
	h, quiet, loud, loud2 := ss[0], ss[1], ss[2], ss[3]
	if _, _, err := h.Lock(ctx, "nt/job", fencelock.Shared(), fencelock.Notify()); err == nil {
		t.Fatal("Shared with Notify was sent")
	}
	tok, _, err := h.Lock(ctx, "nt/job")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan fencelock.Waiter, 8)
	ww := h.OnWaiter("nt/job", tok, func(w fencelock.Waiter) { got <- w })
	defer ww.Stop()

	queue := func(s *fencelock.Session, opts ...fencelock.LockOption) chan error {
		done := make(chan error, 1)
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			_, _, err := s.Lock(wctx, "nt/job", opts...)
			done <- err
		}()
		return done
	}
	want := ""
	for i, w := range []*fencelock.Session{quiet, loud, loud2} {
		var opts []fencelock.LockOption
		if i > 0 {
			opts = append(opts, fencelock.Notify())
		}
		queue(w, opts...)
		if want != "" {
			want += ","
		}
		want += u64s(w.ID())
		waitFor(t, "the waiter queued", 30*time.Second, func() bool {
			return waiters(ctx, c, "LOCK.INFO", "nt/job") == want
		})
	}
	// The stream is in order: loud2's notice comes after loud's, and quiet (no Notify) has none.
	var seen []fencelock.Waiter
	for len(seen) < 2 {
		select {
		case w := <-got:
			seen = append(seen, w)
		case <-time.After(30 * time.Second):
			t.Fatalf("waiters told: %+v, want loud's and loud2's", seen)
		}
	}
	for i, s := range []*fencelock.Session{loud, loud2} {
		w := seen[i]
		if w.Name != "nt/job" || w.Token != tok || w.SID != s.ID() || w.Wait <= 0 || w.Wait > 60*time.Second {
			t.Fatalf("waiter %d told: %+v (want sid %d, token %d)", i, w, s.ID(), tok)
		}
	}
	select {
	case w := <-got:
		t.Fatalf("an extra waiter told: %+v", w)
	default:
	}
}

func TestIncr(t *testing.T) {
	s := single(t)
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	ctx := ctxFor(t, 60*time.Second)
	if v, err := c.Incr(ctx, "ctr/a", 1); err != nil || v != 1 {
		t.Fatalf("Incr of an absent key: %d %v, want 1", v, err)
	}
	if v, err := c.Incr(ctx, "ctr/a", -5); err != nil || v != -4 {
		t.Fatalf("Incr by -5: %d %v, want -4", v, err)
	}
	ss := sessions(t, ctx, c, 1)
	tok, _, err := ss[0].Lock(ctx, "ctr/lock")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c.Incr(ctx, "ctr/a", 10, fencelock.WithSession(ss[0]), fencelock.Fence("ctr/lock", tok)); err != nil || v != 6 {
		t.Fatalf("a fenced Incr through a session: %d %v, want 6", v, err)
	}
	if _, err := c.Incr(ctx, "ctr/a", 1, fencelock.Fence("ctr/lock", tok+100)); !errors.Is(err, fencelock.ErrStale) {
		t.Fatalf("Incr with a stale token: %v, want ErrStale", err)
	}
	if kv, err := c.Get(ctx, "ctr/a"); err != nil || kv.Value != "6" {
		t.Fatalf("the counter: %+v %v, want 6 (the stale increment changed nothing)", kv, err)
	}
	if _, err := c.Put(ctx, "ctr/text", "abc"); err != nil {
		t.Fatal(err)
	}
	var se *fencelock.ServerError
	if _, err := c.Incr(ctx, "ctr/text", 1); !errors.As(err, &se) {
		t.Fatalf("Incr of a value that is no integer: %v, want a ServerError", err)
	}
}

func TestWeightedSemaphore(t *testing.T) {
	s := single(t)
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	ctx := ctxFor(t, 90*time.Second)
	ss := sessions(t, ctx, c, 3)
	a, b, d := ss[0], ss[1], ss[2]
	if _, _, err := a.Acquire(ctx, "ws/pool", 3, fencelock.Permits(4)); err == nil ||
		!strings.Contains(err.Error(), "permits") {
		t.Fatalf("4 permits of 3: %v, want a local error", err)
	}
	ta, _, err := a.Acquire(ctx, "ws/pool", 3, fencelock.Permits(2))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.TryAcquire(ctx, "ws/pool", 3, fencelock.Permits(2)); !errors.Is(err, fencelock.ErrBusy) {
		t.Fatalf("2 permits with 1 free: %v, want ErrBusy", err)
	}
	got := make(chan uint64, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		tb, _, err := b.Acquire(wctx, "ws/pool", 3, fencelock.Permits(2))
		if err != nil {
			t.Error(err)
		}
		got <- tb
	}()
	waitFor(t, "b queued for 2 permits", 30*time.Second, func() bool {
		return waiters(ctx, c, "SEM.INFO", "ws/pool") == u64s(b.ID())
	})
	// One permit is free, but b asked first for two: d's one does not overtake it.
	if _, _, err := d.TryAcquire(ctx, "ws/pool", 3); !errors.Is(err, fencelock.ErrBusy) {
		t.Fatalf("1 permit behind a queued request for 2: %v, want ErrBusy", err)
	}
	if err := a.Release(ctx, "ws/pool"); err != nil {
		t.Fatal(err)
	}
	var tb uint64
	select {
	case tb = <-got:
	case <-time.After(60 * time.Second):
		t.Fatal("b was not granted after a released its two permits")
	}
	if tb <= ta {
		t.Fatalf("b's token %d not above a's %d", tb, ta)
	}
	if ok, err := c.SemSetLimit(ctx, "ws/pool", 4); err != nil || !ok {
		t.Fatalf("SemSetLimit: %v %v", ok, err)
	}
	// 2 in use of 4 now: a try for 2 fits.
	if _, _, err := d.TryAcquire(ctx, "ws/pool", 4, fencelock.Permits(2)); err != nil {
		t.Fatalf("2 permits after the limit rose to 4: %v", err)
	}
	if ok, err := c.SemSetLimit(ctx, "ws/none", 4); err != nil || !ok {
		t.Fatalf("SemSetLimit before the semaphore exists: %v %v, want true", ok, err)
	}
	// the operator's 4 wins over an acquirer's 3 (accepted, ignored)
	if _, _, err := d.TryAcquire(ctx, "ws/none", 3, fencelock.Permits(3)); err != nil {
		t.Fatalf("3 permits under the operator's 4 with limit 3 passed: %v", err)
	}
	if ok, err := c.SemLimitReset(ctx, "ws/none"); err != nil || !ok {
		t.Fatalf("SemLimitReset: %v %v, want true", ok, err)
	}
	if ok, err := c.SemLimitReset(ctx, "ws/none"); err != nil || ok {
		t.Fatalf("SemLimitReset again: %v %v, want false", ok, err)
	}
}
