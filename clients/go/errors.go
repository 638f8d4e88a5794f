// SPDX-License-Identifier: Apache-2.0

package fencelock

// Errors: one sentinel per error word of the contract (docs/clients.md, the table "Error
// words" of tests/conformance/PROTOCOL.md), tested with errors.Is. A server's error reply is
// a *ServerError carrying the word and the server's text; it matches the sentinel of its word.

import (
	"errors"
	"strings"
)

var (
	// ErrTimeout: a lock, permit or candidacy was not granted within the wait (the session left
	// the queue on the servers).
	ErrTimeout = errors.New("fencelock: TIMEOUT: not granted within the wait")
	// ErrBusy: a try (TryLock, TryAcquire, TryCampaign) found it held or in lock-delay.
	ErrBusy = errors.New("fencelock: BUSY: held by another session or in lock-delay")
	// ErrUnavailable: no leader answered before the call's deadline; nothing was applied.
	ErrUnavailable = errors.New("fencelock: UNAVAILABLE: no leader reached before the deadline")
	// ErrOutcomeUnknown: a write was sent and its answer lost: it may have applied.
	ErrOutcomeUnknown = errors.New("fencelock: UNKNOWN: the outcome of the write is unknown")
	// ErrSession: the session is lost, closed, expired or unknown (-NOSESSION).
	ErrSession = errors.New("fencelock: SESSION: the session is lost")
	// ErrNotHolder: unlock, release or resign by a session that neither holds nor waits.
	ErrNotHolder = errors.New("fencelock: NOTHOLDER")
	// ErrStale: a fenced write, FENCE.CHECK or PROCLAIM with a token that is not the current one.
	ErrStale = errors.New("fencelock: STALE")
	// ErrIfRev: an IfRev condition did not hold; nothing changed.
	ErrIfRev = errors.New("fencelock: IFREV")
	// ErrNotFound: no such key; no leader of that election.
	ErrNotFound = errors.New("fencelock: NOTFOUND")
	// ErrNoSpace: a server quota is full (-NOSPACE); nothing applied.
	ErrNoSpace = errors.New("fencelock: NOSPACE")
	// ErrPerm: -NOPERM: the user may not run that command or name that key, lock or session.
	ErrPerm = errors.New("fencelock: PERM")
	// ErrWrongType: the name is a lock, semaphore or election of another kind.
	ErrWrongType = errors.New("fencelock: WRONGTYPE")
	// ErrAuth: -WRONGPASS / -NOAUTH: the credentials were refused or missing. Not retried.
	ErrAuth = errors.New("fencelock: AUTH")
	// ErrTLS: the TLS handshake failed (an untrusted certificate, a wrong name).
	ErrTLS = errors.New("fencelock: TLS")
	// ErrCompacted: a watcher's next event is no longer retained (see *CompactedError).
	ErrCompacted = errors.New("fencelock: COMPACTED")
	// ErrTooLarge: a key, name or value over the servers' limit; a TXN of more compares and
	// ops, or bytes, than the servers take (--max-txn-ops, --max-txn-bytes).
	ErrTooLarge = errors.New("fencelock: TOOLARGE")
	// ErrDeadlock: a wait would have closed a cycle of sessions waiting for each other; it
	// was refused and not queued (the session keeps what it holds). See *DeadlockError.
	ErrDeadlock = errors.New("fencelock: DEADLOCK")
	// ErrBroken: a latch a joined session can no longer count down (its session ended before
	// it did), or a barrier a session ended inside (-BROKEN; the message names both). Every
	// waiter and every later step gets it until the latch or barrier is deleted (LatchDelete):
	// nobody waits forever for a participant that is gone.
	ErrBroken = errors.New("fencelock: BROKEN")
	// ErrMaxHold is the cause of a held context's cancellation when the lock's MaxHold passed:
	// the servers end the grant then (its token is stale), even if the session lives on.
	ErrMaxHold = errors.New("fencelock: the lock's max hold passed")
	// ErrClientClosed: a call on a Client after its Close.
	ErrClientClosed = errors.New("fencelock: the client is closed")
	// ErrProtocol: a reply of a shape this package does not expect.
	ErrProtocol = errors.New("fencelock: malformed reply")
)

// ServerError is an error reply of a server: Word is its first word (STALE, NOSESSION, ERR,
// ...), Message the whole text. errors.Is(err, ErrStale) and the like match by the word.
type ServerError struct {
	Word    string
	Message string
}

func (e *ServerError) Error() string { return "fencelock: " + e.Message }

var words = map[string]error{
	"NOSESSION": ErrSession,
	"NOTHOLDER": ErrNotHolder,
	"STALE":     ErrStale,
	"IFREV":     ErrIfRev,
	"TOOLARGE":  ErrTooLarge,
	"NOSPACE":   ErrNoSpace,
	"WRONGPASS": ErrAuth,
	"NOAUTH":    ErrAuth,
	"NOPERM":    ErrPerm,
	"WRONGTYPE": ErrWrongType,
	"UNKNOWN":   ErrOutcomeUnknown,
	"COMPACTED": ErrCompacted,
	"DEADLOCK":  ErrDeadlock,
	"BROKEN":    ErrBroken,
}

// Is makes a server error match the sentinel of its word.
func (e *ServerError) Is(target error) bool {
	s, ok := words[e.Word]
	return ok && s == target
}

func serverError(text string) *ServerError {
	w, _, _ := strings.Cut(text, " ")
	return &ServerError{Word: w, Message: text}
}

// DeadlockError is the cycle a refused wait would have closed, from a -DEADLOCK reply:
// errors.As(err, &de) on an error that matches ErrDeadlock. Cycle is the server's text,
// "cycle of 2: 5 -a-> 7 -b-> 5" (session 5 waits for lock a, which session 7 holds or is
// queued for first, ...; names over 24 bytes are cut).
type DeadlockError struct{ Cycle string }

func (e *DeadlockError) Error() string { return "fencelock: DEADLOCK " + e.Cycle }

// Is matches ErrDeadlock.
func (e *DeadlockError) Is(target error) bool { return target == ErrDeadlock }

// As makes a -DEADLOCK server error usable as a *DeadlockError, and a TXN's failing op
// (-ERR TXN op N: ...) as a *TxnOpError.
func (e *ServerError) As(target any) bool {
	if d, ok := target.(**DeadlockError); ok && e.Word == "DEADLOCK" {
		*d = &DeadlockError{Cycle: strings.TrimPrefix(e.Message, "DEADLOCK ")}
		return true
	}
	if o, ok := target.(**TxnOpError); ok && e.Word == "ERR" {
		if n := txnOp(e.Message); n > 0 {
			*o = &TxnOpError{Op: n, Message: e.Message}
			return true
		}
	}
	return false
}

// CompactedError ends a watcher whose next event is gone (-COMPACTED oldest=<id>). Oldest is
// the oldest retained id; After the id just before it: reload the state, then watch again
// from After. Not from "0": a new leader may retain more history, and "0" there would start
// before events already delivered. It matches ErrCompacted.
type CompactedError struct {
	Oldest string
	After  string
	Text   string
}

func (e *CompactedError) Error() string { return "fencelock: " + e.Text }

// Is matches ErrCompacted.
func (e *CompactedError) Is(target error) bool { return target == ErrCompacted }

// callError is what a call ends with when it gave up: kind is ErrUnavailable or
// ErrOutcomeUnknown, cause the last reason (a context's error, a TLS failure, a socket error).
type callError struct {
	kind  error
	cause error
	why   string
}

func (e *callError) Error() string {
	return e.kind.Error() + ": " + e.why
}

func (e *callError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.kind, e.cause}
	}
	return []error{e.kind}
}

// Is: a call that failed on a TLS handshake matches ErrTLS as well.
func (e *callError) Is(target error) bool {
	return target == ErrTLS && isTLSError(e.cause)
}

// Word is the contract's error word for err (TIMEOUT, STALE, ...: the table "Error words" of
// the conformance protocol), OTHER for anything else. Used by the conformance agent and by
// programs that log the vocabulary every client shares.
func Word(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrTLS):
		return "TLS"
	case errors.Is(err, ErrAuth):
		return "AUTH"
	case errors.Is(err, ErrTimeout):
		return "TIMEOUT"
	case errors.Is(err, ErrBusy):
		return "BUSY"
	case errors.Is(err, ErrOutcomeUnknown):
		return "UNKNOWN"
	case errors.Is(err, ErrUnavailable):
		return "UNAVAILABLE"
	case errors.Is(err, ErrSession):
		return "SESSION"
	case errors.Is(err, ErrNotHolder):
		return "NOTHOLDER"
	case errors.Is(err, ErrStale):
		return "STALE"
	case errors.Is(err, ErrIfRev):
		return "IFREV"
	case errors.Is(err, ErrNotFound):
		return "NOTFOUND"
	case errors.Is(err, ErrNoSpace):
		return "NOSPACE"
	case errors.Is(err, ErrPerm):
		return "PERM"
	case errors.Is(err, ErrWrongType):
		return "WRONGTYPE"
	case errors.Is(err, ErrCompacted):
		return "COMPACTED"
	case errors.Is(err, ErrDeadlock):
		return "DEADLOCK"
	case errors.Is(err, ErrBroken):
		return "BROKEN"
	case errors.Is(err, ErrTooLarge):
		return "TOOLARGE"
	}
	return "OTHER"
}
