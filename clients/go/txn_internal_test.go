// SPDX-License-Identifier: Apache-2.0

package fencelock

// TXN's encoding without a server: the words the builder lays out (compares, THEN, ELSE,
// FENCE last), the reply read into a TxnResult, and a failing op's error typed.

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func TestTxnArgs(t *testing.T) {
	c := &Client{}
	got := c.Txn().IfRev("cfg", Eq, 7).IfValue("v", Ne, "a b").IfExists("e").IfMissing("m").
		IfToken("L", Eq, 5).IfHolds("L", 12).IfRev("cfg", Lt, 9).IfRev("cfg", Gt, 0).
		ThenPut("cfg", "v2").ThenIncr("n", -3).ThenDelete("old").
		ElsePut("log", "lost").ElseIncr("misses", 1).ElseDelete("x").
		Fence("L", 5).args()
	want := []string{"TXN",
		"IF", "REV", "cfg", "=", "7", "IF", "VALUE", "v", "!=", "a b", "IF", "EXISTS", "e",
		"IF", "MISSING", "m", "IF", "TOKEN", "L", "=", "5", "IF", "HOLDS", "L", "12",
		"IF", "REV", "cfg", "<", "9", "IF", "REV", "cfg", ">", "0",
		"THEN", "PUT", "cfg", "v2", "INCR", "n", "-3", "DEL", "old",
		"ELSE", "PUT", "log", "lost", "INCR", "misses", "1", "DEL", "x",
		"FENCE", "L", "5"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("args\n got %q\nwant %q", got, want)
	}
	// No compare, no ELSE: THEN alone (an empty ELSE is not sent).
	if got := c.Txn().ThenPut("k", "v").args(); !reflect.DeepEqual(got, []string{"TXN", "THEN", "PUT", "k", "v"}) {
		t.Fatalf("args %q", got)
	}
	// ELSE only: THEN is still sent, empty.
	if got := c.Txn().IfMissing("k").ElsePut("k", "v").args(); !reflect.DeepEqual(got,
		[]string{"TXN", "IF", "MISSING", "k", "THEN", "ELSE", "PUT", "k", "v"}) {
		t.Fatalf("args %q", got)
	}
}

func TestTxnBuilderRefuses(t *testing.T) {
	c := &Client{}
	if _, err := c.Txn().IfRev("k", Rel("<="), 1).ThenPut("k", "v").Commit(context.Background()); err == nil {
		t.Fatal("a relation that is none of =, !=, <, > was accepted")
	}
	if _, err := c.Txn().Commit(context.Background()); err == nil {
		t.Fatal("a TXN without compares and ops was accepted")
	}
}

func TestTxnResult(t *testing.T) {
	r, err := txnResult([]any{"THEN", int64(42), []any{int64(40), int64(-2), int64(1)}})
	if err != nil || !reflect.DeepEqual(r, &TxnResult{Succeeded: true, Revision: 42,
		Results: []int64{40, -2, 1}, ResultsKnown: true}) {
		t.Fatalf("THEN: %+v %v", r, err)
	}
	r, err = txnResult([]any{"ELSE", int64(9), []any{}})
	if err != nil || r.Succeeded || r.Revision != 9 || !r.ResultsKnown || len(r.Results) != 0 {
		t.Fatalf("ELSE: %+v %v", r, err)
	}
	// A resend answered by a node that restored the request table from a snapshot.
	r, err = txnResult([]any{"THEN", int64(7), nil})
	if err != nil || !r.Succeeded || r.ResultsKnown || r.Results != nil {
		t.Fatalf("results unknown: %+v %v", r, err)
	}
	for _, bad := range []any{nil, "OK", []any{"THEN", int64(1)}, []any{"MAYBE", int64(1), nil},
		[]any{"THEN", "x", nil}, []any{"THEN", int64(1), "x"}} {
		if _, err := txnResult(bad); !errors.Is(err, errProto) {
			t.Fatalf("%v: %v, want a malformed reply", bad, err)
		}
	}
}

func TestTxnErrorsTyped(t *testing.T) {
	var err error = serverError("ERR TXN op 2: value of key k is not a signed 64-bit decimal integer")
	var oe *TxnOpError
	if !errors.As(err, &oe) || oe.Op != 2 || Word(err) != "OTHER" {
		t.Fatalf("a failing op: %v %+v %s", err, oe, Word(err))
	}
	for _, text := range []string{"ERR key 'k' is written twice in one branch of the TXN",
		"ERR syntax error at 'X': TXN ..."} {
		if errors.As(serverError(text), &oe) {
			t.Fatalf("%q read as a failing op", text)
		}
	}
	for text, want := range map[string]error{
		"TOOLARGE TXN of more than 4 compares and ops (--max-txn-ops)": ErrTooLarge,
		"STALE token 3 is not current":                                 ErrStale,
		"NOSPACE the TXN would grow keys over --max-keys":              ErrNoSpace,
		"NOPERM user u may not write key 'k'":                          ErrPerm,
	} {
		if err := serverError(text); !errors.Is(err, want) {
			t.Fatalf("%q does not match %v", text, want)
		}
	}
	if w := Word(serverError("TOOLARGE x")); w != "TOOLARGE" {
		t.Fatalf("Word of -TOOLARGE: %s", w)
	}
}
