// SPDX-License-Identifier: Apache-2.0

package fencelock_test

// Cooperative revocation on one node: Client.Revoke asks the holder, Session.OnRevoke tells
// it (name, token, session, deadline, reason, who asked), and a deadline takes the grant from
// a holder that does not let go: the next waiter gets a larger token, the old one is stale,
// the holder's session lives on.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	fencelock "github.com/fencelock/fencelock-go"
)

func TestRevoke(t *testing.T) {
	s := single(t)
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	ctx := ctxFor(t, 60*time.Second)
	if _, err := c.Revoke(ctx, "rv/none", 0, ""); err != nil && strings.Contains(err.Error(), "unknown command") {
		t.Skip("this fencelockd has no LOCK.REVOKE")
	} else if !errors.Is(err, fencelock.ErrNotHolder) {
		t.Fatalf("Revoke of a free lock: %v, want ErrNotHolder", err)
	}
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

	tok, _, err := a.Lock(ctx, "rv/job")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan fencelock.Revoke, 4)
	rw := a.OnRevoke("rv/job", tok, func(r fencelock.Revoke) { got <- r })
	defer rw.Stop()
	// Another lock whose name starts with this one's is not this grant's business.
	otok, _, err := a.Lock(ctx, "rv/job2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Revoke(ctx, "rv/job2", 0, "other"); err != nil {
		t.Fatal(err)
	}
	if rt, err := c.Revoke(ctx, "rv/job", 0, "please"); err != nil || rt != tok {
		t.Fatalf("Revoke: %d %v, want the grant's token %d", rt, err, tok)
	}
	var r fencelock.Revoke
	select {
	case r = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no revoke request delivered")
	}
	if r.Name != "rv/job" || r.Token != tok || r.SID != a.ID() || r.Deadline != 0 || r.Reason != "please" || r.By == "" {
		t.Fatalf("the request delivered: %+v", r)
	}
	_ = otok

	// With a deadline: b waits; a does not let go; the servers take the grant then.
	if _, err := c.Revoke(ctx, "rv/job", 500*time.Millisecond, "deploy"); err != nil {
		t.Fatal(err)
	}
	select {
	case r = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no second revoke request delivered")
	}
	if r.Deadline != 500*time.Millisecond || r.Reason != "deploy" {
		t.Fatalf("the second request: %+v", r)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	bt, _, err := b.Lock(wctx, "rv/job")
	cancel()
	if err != nil || bt <= tok {
		t.Fatalf("the waiter after the deadline: %d %v (holder's token %d)", bt, err, tok)
	}
	if err := c.FenceCheck(ctx, "rv/job", tok); !errors.Is(err, fencelock.ErrStale) {
		t.Fatalf("the revoked token: %v, want ErrStale", err)
	}
	if a.Lost() {
		t.Fatal("the revoked holder's session ended")
	}
	if err := c.FenceCheck(ctx, "rv/job2", otok); err != nil {
		t.Fatalf("a's other lock: %v", err)
	}
	select {
	case r = <-got:
		t.Fatalf("a request of another lock delivered: %+v", r)
	default:
	}
}
