// SPDX-License-Identifier: Apache-2.0

// Package fencelock is the Go client of fencelock, a distributed lock service with fencing
// tokens (Raft-replicated, spoken over RESP).
//
// It keeps the contract every fencelock client keeps (docs/clients.md):
//
//   - a Session is a lease the library keeps alive by itself (SESSION.KEEPALIVE every TTL/3,
//     on the leader). Its safe deadline (Session.SafeUntil) is measured on the monotonic clock
//     from the send time of the last acknowledged keepalive, less a margin, so it is never
//     later than the servers' own deadline. When it passes without a new acknowledgement, or
//     a server says the session is gone, the session is lost: Session.Context is cancelled
//     at that moment, and with it every context a Lock, Acquire or Campaign returned. Work
//     done under a lock selects on that context and stops.
//   - Session.Lock returns the lock's fencing token and that context; writes to a resource
//     carry the token (Fence), and the servers refuse a write with a token that is no
//     longer the holder's (ErrStale). Session.Locker is a sync.Locker; Shared takes a read
//     lock; Acquire a semaphore's permit; Election campaigns, observes, proclaims and resigns
//     as etcd's concurrency.Election does.
//   - every mutating call through a session carries REQ sid seq, so a resend after a lost
//     answer or a fail-over applies once; a lock is granted once however many times its
//     request crossed a fail-over. A write whose outcome cannot be learned before the
//     deadline is ErrOutcomeUnknown, never a plain failure. Writes without a session are sent
//     once.
//   - the client follows -NOTLEADER across its endpoints (and the members it learns), waits
//     out -NOLEADER, and treats a member that does not answer within ConnectTimeout as gone.
//   - Watch delivers each event once, in order, across fail-overs, and ends with ErrCompacted
//     (never a silent gap) when the history it needs is gone.
//   - TLS checks the server's name; AUTH is sent on every new connection.
//   - errors are sentinels named after the protocol's words (ErrStale, ErrNoSpace, ...) for
//     errors.Is; a server's reply is a *ServerError with its word and text.
//
// Every call takes a context.Context: its deadline bounds the call (Options.Timeout when it
// has none earlier); for Lock, Acquire and Campaign the deadline is the wait.
package fencelock
