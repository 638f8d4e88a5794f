// SPDX-License-Identifier: Apache-2.0

package fencelock

// TXN (docs/protocol.md "TXN"): compares, then all of one branch's writes in one log entry,
// or none. A *Txn is a builder: each method appends one compare or op (in the order given)
// and returns the builder; Commit sends the whole TXN once. Through a Session (Session.Txn)
// it carries REQ sid seq and is resent until its outcome is known, applying once, as the
// session's other writes; without one it is sent once and a lost answer is
// ErrOutcomeUnknown. A builder is not safe for concurrent use; committing it again is a new
// request.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Rel is a compare's relation: Eq, Ne, Lt or Gt. IfValue and IfToken take Eq and Ne only
// (the servers refuse the others with a *ServerError, word ERR).
type Rel string

// The relations of TXN's compares.
const (
	Eq Rel = "="
	Ne Rel = "!="
	Lt Rel = "<"
	Gt Rel = ">"
)

// Txn is a TXN being built: Client.Txn or Session.Txn, then If*, Then*, Else*, Fence, and
// Commit.
type Txn struct {
	c      *Client
	s      *Session
	ifs    []string // "IF ..." words of every compare
	then   []string
	els    []string
	fence  []string // FENCE lock token, or nil
	err    error    // the first malformed compare (returned by Commit)
	nItems int
}

// TxnResult is a committed TXN's outcome: Succeeded when THEN ran (every compare held, or
// none was given), else ELSE ran; Revision is the store's revision after the TXN (unchanged
// when the branch changed nothing); Results one number per op of the branch that ran, in
// order: a put's revision (the key's new mod_rev), a delete's count (0 or 1), an incr's new
// value. ResultsKnown is false (and Results nil) for a resend answered by a node that got the
// session's request table from a snapshot: the branch and revision are still the first ones.
type TxnResult struct {
	Succeeded    bool
	Revision     uint64
	Results      []int64
	ResultsKnown bool
}

// TxnOpError is a TXN refused because an op of the branch that ran cannot apply (an INCR of
// a value that is not a counter, or one that would overflow): Op is its place in the branch
// (1 = the first). Nothing of the TXN applied. errors.As(err, &oe) on the error Commit
// returns; the error is a *ServerError with the word ERR as well.
type TxnOpError struct {
	Op      int
	Message string
}

func (e *TxnOpError) Error() string { return "fencelock: " + e.Message }

// txnOp parses "ERR TXN op N: ..." (the servers' text for a failing op); 0 if it is not one.
func txnOp(msg string) int {
	rest, ok := strings.CutPrefix(msg, "ERR TXN op ")
	if !ok {
		return 0
	}
	n, _, ok := strings.Cut(rest, ":")
	if !ok {
		return 0
	}
	op, err := strconv.Atoi(n)
	if err != nil || op < 1 {
		return 0
	}
	return op
}

// Txn starts a TXN sent without a session (once: a lost answer is ErrOutcomeUnknown).
func (c *Client) Txn() *Txn { return &Txn{c: c} }

// Txn starts a TXN sent through s: REQ sid seq, resent until its outcome is known, applied
// once.
func (s *Session) Txn() *Txn { return &Txn{c: s.c, s: s} }

func (t *Txn) cmp(args ...string) *Txn {
	t.ifs = append(append(t.ifs, "IF"), args...)
	t.nItems++
	return t
}

func (t *Txn) rel(r Rel) string {
	switch r {
	case Eq, Ne, Lt, Gt:
	default:
		if t.err == nil {
			t.err = fmt.Errorf("fencelock: TXN: relation %q is none of =, !=, <, >", string(r))
		}
	}
	return string(r)
}

// IfRev compares the key's mod revision (0 for an absent key) with rev.
func (t *Txn) IfRev(key string, r Rel, rev uint64) *Txn {
	return t.cmp("REV", key, t.rel(r), u64(rev))
}

// IfValue compares the key's value with value (Eq or Ne; an absent key has none: Eq is
// false, Ne true).
func (t *Txn) IfValue(key string, r Rel, value string) *Txn {
	return t.cmp("VALUE", key, t.rel(r), value)
}

// IfExists holds when the key exists.
func (t *Txn) IfExists(key string) *Txn { return t.cmp("EXISTS", key) }

// IfMissing holds when the key does not exist.
func (t *Txn) IfMissing(key string) *Txn { return t.cmp("MISSING", key) }

// IfToken: token is (Eq) or is not (Ne) a current token of lock (FENCE's rule: the exclusive
// holder's token, or one of a semaphore's permits).
func (t *Txn) IfToken(lock string, r Rel, token uint64) *Txn {
	return t.cmp("TOKEN", lock, t.rel(r), u64(token))
}

// IfHolds holds when session sid holds lock (exclusively, shared or a permit): the ownership
// guard, false once the session expired or the lock changed hands.
func (t *Txn) IfHolds(lock string, sid uint64) *Txn {
	return t.cmp("HOLDS", lock, u64(sid))
}

func (t *Txn) op(els bool, args ...string) *Txn {
	if els {
		t.els = append(t.els, args...)
	} else {
		t.then = append(t.then, args...)
	}
	t.nItems++
	return t
}

// ThenPut sets key to value when THEN runs (as Put without options: a lease the key had is
// dropped); its result is the put's revision.
func (t *Txn) ThenPut(key, value string) *Txn { return t.op(false, "PUT", key, value) }

// ThenDelete deletes key when THEN runs; its result is 1 if the key existed, else 0.
func (t *Txn) ThenDelete(key string) *Txn { return t.op(false, "DEL", key) }

// ThenIncr adds by to the counter key when THEN runs; its result is the new value.
func (t *Txn) ThenIncr(key string, by int64) *Txn {
	return t.op(false, "INCR", key, strconv.FormatInt(by, 10))
}

// ElsePut is ThenPut of the ELSE branch.
func (t *Txn) ElsePut(key, value string) *Txn { return t.op(true, "PUT", key, value) }

// ElseDelete is ThenDelete of the ELSE branch.
func (t *Txn) ElseDelete(key string) *Txn { return t.op(true, "DEL", key) }

// ElseIncr is ThenIncr of the ELSE branch.
func (t *Txn) ElseIncr(key string, by int64) *Txn {
	return t.op(true, "INCR", key, strconv.FormatInt(by, 10))
}

// Fence guards the whole TXN with FENCE lock token: unless token is current, Commit is
// ErrStale and nothing applies (whatever the compares say).
func (t *Txn) Fence(lock string, token uint64) *Txn {
	t.fence = []string{"FENCE", lock, u64(token)}
	return t
}

// args is the TXN command without REQ (the session's send adds it).
func (t *Txn) args() []string {
	a := make([]string, 0, 3+len(t.ifs)+len(t.then)+len(t.els)+len(t.fence))
	a = append(append(append(a, "TXN"), t.ifs...), "THEN")
	a = append(a, t.then...)
	if len(t.els) > 0 {
		a = append(append(a, "ELSE"), t.els...)
	}
	return append(a, t.fence...)
}

// Commit sends the TXN. Errors (nothing applied): ErrStale (a stale Fence), ErrTooLarge (more
// compares and ops, or bytes, than the servers take), ErrNoSpace (a quota), ErrPerm, a
// *TxnOpError (an op that cannot apply), a *ServerError with the word ERR (a malformed TXN: a
// key written twice in one branch, a relation the compare does not take), and the errors of
// every write (ErrSession, ErrUnavailable, ErrOutcomeUnknown without a session).
func (t *Txn) Commit(ctx context.Context) (*TxnResult, error) {
	if t.err != nil {
		return nil, t.err
	}
	if t.nItems == 0 {
		return nil, fmt.Errorf("fencelock: TXN: no compare and no op")
	}
	cm := newCmd(t.args()...)
	cm.write = true
	var r any
	var err error
	if t.s != nil {
		r, err = t.s.mutate(ctx, cm)
	} else {
		cm.retry = false
		r, err = t.c.do(ctx, cm)
	}
	if err != nil {
		return nil, err
	}
	return txnResult(r)
}

// txnResult reads [THEN|ELSE, revision, [result, ...] | nil].
func txnResult(r any) (*TxnResult, error) {
	a, ok := r.([]any)
	if !ok || len(a) != 3 {
		return nil, fmt.Errorf("%w: TXN: expected [branch, revision, results], got %T", errProto, r)
	}
	b, _ := a[0].(string)
	if b != "THEN" && b != "ELSE" {
		return nil, fmt.Errorf("%w: TXN: branch %v", errProto, a[0])
	}
	rev, err := asUint(a[1])
	if err != nil {
		return nil, err
	}
	res := &TxnResult{Succeeded: b == "THEN", Revision: rev}
	if a[2] == nil {
		return res, nil
	}
	list, ok := a[2].([]any)
	if !ok {
		return nil, fmt.Errorf("%w: TXN: results %T", errProto, a[2])
	}
	res.Results = make([]int64, len(list))
	for i, x := range list {
		if res.Results[i], err = asInt(x); err != nil {
			return nil, err
		}
	}
	res.ResultsKnown = true
	return res, nil
}
