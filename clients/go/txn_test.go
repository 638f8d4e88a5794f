// SPDX-License-Identifier: Apache-2.0

package fencelock_test

// TXN against one real node: both branches with each op's result, the ownership compares, a
// stale Fence refused whole, and the servers' refusals typed (ErrTooLarge, *TxnOpError),
// none of which changes a key.

import (
	"errors"
	"testing"
	"time"

	fencelock "github.com/fencelock/fencelock-go"
)

func TestTxn(t *testing.T) {
	s := single(t, "--max-txn-ops", "4")
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	ctx := ctxFor(t, 60*time.Second)
	se, err := c.NewSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close(ctx)
	r1, err := c.Put(ctx, "t/cfg", "v1")
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := se.Lock(ctx, "t/L")
	if err != nil {
		t.Fatal(err)
	}

	r, err := se.Txn().IfRev("t/cfg", fencelock.Eq, r1).IfHolds("t/L", se.ID()).
		ThenPut("t/cfg", "v2").ThenIncr("t/n", 5).
		Fence("t/L", tok).Commit(ctx)
	if err != nil || !r.Succeeded || !r.ResultsKnown || len(r.Results) != 2 ||
		r.Results[1] != 5 || r.Revision != uint64(r.Results[0])+1 {
		t.Fatalf("THEN: %+v %v", r, err)
	}
	kv, err := c.Get(ctx, "t/cfg")
	if err != nil || kv.Value != "v2" || kv.ModRev != uint64(r.Results[0]) {
		t.Fatalf("t/cfg after THEN: %+v %v", kv, err)
	}

	// The same compare now fails: ELSE runs (a del of an absent key: 0, no revision).
	r, err = c.Txn().IfRev("t/cfg", fencelock.Eq, r1).ThenPut("t/cfg", "v3").
		ElseIncr("t/n", -1).ElseDelete("t/none").Commit(ctx)
	if err != nil || r.Succeeded || len(r.Results) != 2 || r.Results[0] != 4 || r.Results[1] != 0 {
		t.Fatalf("ELSE: %+v %v", r, err)
	}

	// A stale fence: nothing applies, whatever the compares say.
	if err := se.Unlock(ctx, "t/L"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := se.Lock(ctx, "t/L"); err != nil {
		t.Fatal(err)
	}
	_, err = se.Txn().ThenPut("t/cfg", "late").Fence("t/L", tok).Commit(ctx)
	if !errors.Is(err, fencelock.ErrStale) {
		t.Fatalf("stale fence: %v, want ErrStale", err)
	}

	// The servers' refusals, typed; none changes t/cfg.
	_, err = c.Txn().ThenPut("a", "1").ThenPut("b", "1").ThenPut("c", "1").ThenPut("d", "1").
		ThenPut("e", "1").Commit(ctx)
	if !errors.Is(err, fencelock.ErrTooLarge) || fencelock.Word(err) != "TOOLARGE" {
		t.Fatalf("5 ops over --max-txn-ops 4: %v", err)
	}
	_, err = se.Txn().ThenPut("t/z", "x").ThenIncr("t/cfg", 1).Commit(ctx)
	var oe *fencelock.TxnOpError
	var se2 *fencelock.ServerError
	if !errors.As(err, &oe) || oe.Op != 2 || !errors.As(err, &se2) || se2.Word != "ERR" {
		t.Fatalf("an INCR of a value that is no counter: %v, want a *TxnOpError of op 2", err)
	}
	_, err = c.Txn().ThenPut("t/cfg", "x").ThenDelete("t/cfg").Commit(ctx)
	if !errors.As(err, &se2) || se2.Word != "ERR" || errors.As(err, &oe) {
		t.Fatalf("a key written twice: %v, want a *ServerError ERR", err)
	}
	if kv, err := c.Get(ctx, "t/cfg"); err != nil || kv.Value != "v2" {
		t.Fatalf("t/cfg after the refusals: %+v %v", kv, err)
	}
	if _, err := c.Get(ctx, "t/z"); !errors.Is(err, fencelock.ErrNotFound) {
		t.Fatalf("t/z, the op before the failing one: %v, want ErrNotFound", err)
	}
}
