// SPDX-License-Identifier: Apache-2.0

package fencelock

// Locks (exclusive and shared) and semaphores held by a Session. Each grant returns its
// fencing token and a context derived from the session's: cancelled when the session is lost
// (so the holder's work stops before the lease can have lapsed on the servers), closed, or
// when this hold is released through the session.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// LockOption changes how a lock is taken.
type LockOption func(*lockOpts)

type lockOpts struct {
	shared, notify bool
	value          *string
	maxHold        time.Duration
}

// Shared takes the lock in shared mode (a read lock: any number of shared holders, or one
// exclusive holder). Fenced writes accept only an exclusive holder's token.
func Shared() LockOption { return func(o *lockOpts) { o.shared = true } }

// Notify (LOCK ... NOTIFY): when the request queues behind an exclusive holder, that holder
// is told someone waits (Session.OnWaiter), once per waiting session. Not with Shared.
func Notify() LockOption { return func(o *lockOpts) { o.notify = true } }

// WithValue (LOCK ... VALUE v): the grant carries v (who holds it, on which host, for which
// job), shown by LockInfo, LOCKS and the grant event. A retry by the holder changes nothing:
// Unlock and Lock again for a new value. Not with Shared.
func WithValue(v string) LockOption { return func(o *lockOpts) { o.value = &v } }

// MaxHold (LOCK ... MAXHOLD ms): the servers end the grant d after they made it, even if the
// session lives on, as an expiry would (its token is stale from then on). The context Lock
// returns is cancelled (cause ErrMaxHold) at the local deadline, measured from before the
// LOCK was sent less the session's safety margins (Session.MaxHoldDeadline), so never after
// the servers end it. At least 1 ms (the servers' --min-max-hold, 1 s by default, is checked
// there). Not with Shared.
func MaxHold(d time.Duration) LockOption { return func(o *lockOpts) { o.maxHold = d } }

// maxHoldMark is the local max-hold deadline of one grant, by its token.
type maxHoldMark struct {
	token    uint64
	deadline time.Time
}

// errNotifyShared: NOTIFY tells an exclusive holder; a shared request has none to tell.
var errNotifyShared = errors.New("fencelock: Notify is for an exclusive lock, not with Shared")

// errMetaShared: a value and a max hold belong to an exclusive grant.
var errMetaShared = errors.New("fencelock: WithValue and MaxHold are for an exclusive lock, not with Shared")

func (s *Session) lockCmd(name string, opts []LockOption) (*cmd, lockOpts, error) {
	var o lockOpts
	for _, f := range opts {
		f(&o)
	}
	cm := newCmd("LOCK", name, u64(s.sid))
	switch {
	case o.shared && o.notify:
		return nil, o, errNotifyShared
	case o.shared && (o.value != nil || o.maxHold != 0):
		return nil, o, errMetaShared
	case o.maxHold < 0 || (o.maxHold > 0 && o.maxHold < time.Millisecond):
		return nil, o, errors.New("fencelock: MaxHold below 1 ms")
	case o.shared:
		cm.add("SHARED")
	case o.notify:
		cm.add("NOTIFY")
	}
	if o.value != nil && *o.value != "" {
		cm.add("VALUE", *o.value)
	}
	if o.maxHold > 0 {
		cm.add("MAXHOLD", u64(uint64(o.maxHold.Milliseconds())))
	}
	return cm, o, nil
}

// granted makes the context of a lock just granted with token: its max-hold deadline is the
// first ask's when the grant is the one already held (a retry, or a reentrant re-lock), else
// sent + the max hold less the session's margins.
func (s *Session) granted(name string, token uint64, o lockOpts, sent time.Time) context.Context {
	s.mu.Lock()
	m, ok := s.maxHold[name]
	switch {
	case ok && m.token == token:
	case o.maxHold > 0:
		m = maxHoldMark{token, sent.Add(s.span(uint64(o.maxHold.Milliseconds())))}
		s.maxHold[name] = m
	default:
		m = maxHoldMark{}
		delete(s.maxHold, name)
	}
	s.mu.Unlock()
	return s.holdUntil("lock\x00"+name, m.deadline, s.reentrant && !o.shared)
}

// MaxHoldDeadline is the local time before which the MaxHold of this session's last grant of
// lock name cannot have ended it on the servers (false without a max hold). Act on the
// resource only while time.Now() is before both it and SafeUntil.
func (s *Session) MaxHoldDeadline(name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.maxHold[name]
	return m.deadline, ok
}

// Lock takes the lock name, waiting in its FIFO queue until ctx's deadline (ErrTimeout then;
// without a deadline until it is granted, see Options.MaxWait), and returns the fencing token and a context that is
// cancelled when the lease can no longer be trusted (the session is lost or closed) or the
// lock is unlocked through this session. Granted once, however many fail-overs the request
// crosses. Cancelling ctx abandons the wait (the session leaves the queue).
func (s *Session) Lock(ctx context.Context, name string, opts ...LockOption) (uint64, context.Context, error) {
	cm, o, err := s.lockCmd(name, opts)
	if err != nil {
		return 0, nil, err
	}
	sent := time.Now() // before the first LOCK: the grant can only come later
	token, err := s.waitGrant(ctx, cm, "UNLOCK", false)
	if err != nil {
		return 0, nil, err
	}
	return token, s.granted(name, token, o, sent), nil
}

// TryLock is Lock without waiting: ErrBusy when the lock is held or in lock-delay.
func (s *Session) TryLock(ctx context.Context, name string, opts ...LockOption) (uint64, context.Context, error) {
	cm, o, err := s.lockCmd(name, opts)
	if err != nil {
		return 0, nil, err
	}
	sent := time.Now()
	token, err := s.waitGrant(ctx, cm, "UNLOCK", true)
	if err != nil {
		return 0, nil, err
	}
	return token, s.granted(name, token, o, sent), nil
}

// Unlock releases the lock, or leaves its queue (ErrNotHolder if neither). The context Lock
// returned is cancelled. Through a Reentrant session it counts down, and only the last hold's
// Unlock releases (and cancels the contexts).
func (s *Session) Unlock(ctx context.Context, name string) error {
	s.unhold("lock\x00" + name)
	_, err := s.mutate(ctx, newCmd("UNLOCK", name, u64(s.sid)))
	return err
}

// Locker returns a sync.Locker for the lock name held through s, as etcd's
// concurrency.NewLocker: Lock waits without a deadline, Unlock releases. As sync.Locker has
// no way to return an error, both panic on one (an Unlock after the session was lost does
// not: the lock went with the session). Prefer Lock and Unlock, which return errors and the
// context that says when to stop.
func (s *Session) Locker(name string) sync.Locker { return &locker{s: s, name: name} }

type locker struct {
	s    *Session
	name string
}

func (l *locker) Lock() {
	if _, _, err := l.s.Lock(context.Background(), l.name); err != nil {
		panic(err)
	}
}

func (l *locker) Unlock() {
	if err := l.s.Unlock(context.Background(), l.name); err != nil && !errors.Is(err, ErrSession) {
		panic(err)
	}
}

// SemOption changes how permits of a semaphore are taken.
type SemOption func(*semOpts)

type semOpts struct{ permits int }

// Permits takes k permits at once (1..limit): one acquisition with one token, released whole
// by Release. Queued requests are granted in FIFO order only: a later request for fewer
// permits never overtakes this one.
func Permits(k int) SemOption { return func(o *semOpts) { o.permits = k } }

func (s *Session) semCmd(name string, limit int, opts []SemOption) (*cmd, error) {
	o := semOpts{permits: 1}
	for _, f := range opts {
		f(&o)
	}
	if limit < 1 || o.permits < 1 || o.permits > limit {
		return nil, fmt.Errorf("fencelock: permits must be 1..limit (%d), not %d", limit, o.permits)
	}
	cm := newCmd("SEM.ACQUIRE", name, u64(s.sid), u64(uint64(limit)))
	if o.permits > 1 { // without PERMITS the request is the one from before weighted permits
		cm.add("PERMITS", u64(uint64(o.permits)))
	}
	return cm, nil
}

// Acquire takes one of at most limit permits of the semaphore name (Permits(k): k of them at
// once), waiting FIFO until ctx's deadline (ErrTimeout); the acquisition's token and its
// context (as Lock's).
func (s *Session) Acquire(ctx context.Context, name string, limit int, opts ...SemOption) (uint64, context.Context, error) {
	return s.acquire(ctx, name, limit, opts, false)
}

// TryAcquire is Acquire without waiting: ErrBusy when not enough permits are free.
func (s *Session) TryAcquire(ctx context.Context, name string, limit int, opts ...SemOption) (uint64, context.Context, error) {
	return s.acquire(ctx, name, limit, opts, true)
}

func (s *Session) acquire(ctx context.Context, name string, limit int, opts []SemOption, try bool) (uint64, context.Context, error) {
	cm, err := s.semCmd(name, limit, opts)
	if err != nil {
		return 0, nil, err
	}
	token, err := s.waitGrant(ctx, cm, "SEM.RELEASE", try)
	if err != nil {
		return 0, nil, err
	}
	return token, s.hold("sem\x00" + name), nil
}

// Release gives the acquisition back (all its permits), or leaves the queue (ErrNotHolder if neither).
func (s *Session) Release(ctx context.Context, name string) error {
	s.unhold("sem\x00" + name)
	_, err := s.mutate(ctx, newCmd("SEM.RELEASE", name, u64(s.sid)))
	return err
}

// SemSetLimit sets the operator's limit of the semaphore name (SEM.SETLIMIT; admin under
// --acl-file): kept until SemLimitReset whether or not the semaphore exists, and winning over
// the acquirers' limit (an Acquire passing another limit is accepted and the argument
// ignored). True (servers before operators' limits answered false for a semaphore that did
// not exist). Holders above a lower limit keep their permits; nothing is granted until the
// queue's head fits. A *ServerError (ERR) if a queued request asks for more permits than the
// new limit (nothing changes).
func (c *Client) SemSetLimit(ctx context.Context, name string, limit int) (bool, error) {
	cm := newCmd("SEM.SETLIMIT", name, u64(uint64(max(limit, 0))))
	cm.write = true // the same limit again changes nothing: a resend is harmless
	r, err := c.do(ctx, cm)
	if err != nil {
		return false, err
	}
	return r != nil, nil
}

// SemLimitReset removes the operator's limit of the semaphore name (SEM.SETLIMIT name RESET;
// admin under --acl-file): true if there was one (a resend after a lost reply answers false).
// A live semaphore keeps its limit until it is dropped; then the acquirers' limit rules again.
func (c *Client) SemLimitReset(ctx context.Context, name string) (bool, error) {
	cm := newCmd("SEM.SETLIMIT", name, "RESET")
	cm.write = true // removing what is gone changes nothing: a resend is harmless
	r, err := c.do(ctx, cm)
	if err != nil {
		return false, err
	}
	n, ok := r.(int64)
	return ok && n == 1, nil
}
