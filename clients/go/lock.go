// SPDX-License-Identifier: Apache-2.0

package fencelock

// Locks (exclusive and shared) and semaphores held by a Session. Each grant returns its
// fencing token and a context derived from the session's: cancelled when the session is lost
// (so the holder's work stops before the lease can have lapsed on the servers), closed, or
// when this hold is released through the session.

import (
	"context"
	"errors"
	"sync"
)

// LockOption changes how a lock is taken.
type LockOption func(*lockOpts)

type lockOpts struct{ shared bool }

// Shared takes the lock in shared mode (a read lock: any number of shared holders, or one
// exclusive holder). Fenced writes accept only an exclusive holder's token.
func Shared() LockOption { return func(o *lockOpts) { o.shared = true } }

func (s *Session) lockCmd(name string, opts []LockOption) *cmd {
	var o lockOpts
	for _, f := range opts {
		f(&o)
	}
	cm := newCmd("LOCK", name, u64(s.sid))
	if o.shared {
		cm.add("SHARED")
	}
	return cm
}

// Lock takes the lock name, waiting in its FIFO queue until ctx's deadline (ErrTimeout then;
// without a deadline until it is granted, see Options.MaxWait), and returns the fencing token and a context that is
// cancelled when the lease can no longer be trusted (the session is lost or closed) or the
// lock is unlocked through this session. Granted once, however many fail-overs the request
// crosses. Cancelling ctx abandons the wait (the session leaves the queue).
func (s *Session) Lock(ctx context.Context, name string, opts ...LockOption) (uint64, context.Context, error) {
	token, err := s.waitGrant(ctx, s.lockCmd(name, opts), "UNLOCK", false)
	if err != nil {
		return 0, nil, err
	}
	return token, s.hold("lock\x00" + name), nil
}

// TryLock is Lock without waiting: ErrBusy when the lock is held or in lock-delay.
func (s *Session) TryLock(ctx context.Context, name string, opts ...LockOption) (uint64, context.Context, error) {
	token, err := s.waitGrant(ctx, s.lockCmd(name, opts), "UNLOCK", true)
	if err != nil {
		return 0, nil, err
	}
	return token, s.hold("lock\x00" + name), nil
}

// Unlock releases the lock, or leaves its queue (ErrNotHolder if neither). The context Lock
// returned is cancelled.
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

// Acquire takes one of at most limit permits of the semaphore name, waiting FIFO until
// ctx's deadline (ErrTimeout); the permit's token and its context (as Lock's).
func (s *Session) Acquire(ctx context.Context, name string, limit int) (uint64, context.Context, error) {
	cm := newCmd("SEM.ACQUIRE", name, u64(s.sid), u64(uint64(limit)))
	token, err := s.waitGrant(ctx, cm, "SEM.RELEASE", false)
	if err != nil {
		return 0, nil, err
	}
	return token, s.hold("sem\x00" + name), nil
}

// TryAcquire is Acquire without waiting: ErrBusy when no permit is free.
func (s *Session) TryAcquire(ctx context.Context, name string, limit int) (uint64, context.Context, error) {
	cm := newCmd("SEM.ACQUIRE", name, u64(s.sid), u64(uint64(limit)))
	token, err := s.waitGrant(ctx, cm, "SEM.RELEASE", true)
	if err != nil {
		return 0, nil, err
	}
	return token, s.hold("sem\x00" + name), nil
}

// Release gives the permit back, or leaves the queue (ErrNotHolder if neither).
func (s *Session) Release(ctx context.Context, name string) error {
	s.unhold("sem\x00" + name)
	_, err := s.mutate(ctx, newCmd("SEM.RELEASE", name, u64(s.sid)))
	return err
}
