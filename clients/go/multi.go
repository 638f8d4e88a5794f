// SPDX-License-Identifier: Apache-2.0

package fencelock

// Several locks at once (LOCK.MULTI): every name granted in one log entry, or none; a waiting
// request queues FIFO on every name and holds nothing meanwhile, so two sessions asking for
// overlapping names in any order cannot deadlock. Each name gets its own fencing token (each
// resource fences with its own lock's token), returned in the order the names were given.
// The context returned is one for the whole set: cancelled when the session is lost or
// closed, or when any of the names is unlocked through the session.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MultiOption changes how LockMulti takes its names.
type MultiOption func(*multiOpts)

type multiOpts struct{ shared []string }

// SharedNames takes the given names (among those asked for) in shared mode; the others are
// exclusive.
func SharedNames(names ...string) MultiOption {
	return func(o *multiOpts) { o.shared = append(o.shared, names...) }
}

func (s *Session) multiCmd(names []string, opts []MultiOption) (*cmd, []string, error) {
	if len(names) == 0 {
		return nil, nil, errors.New("fencelock: LockMulti of no names")
	}
	var o multiOpts
	for _, f := range opts {
		f(&o)
	}
	cm := newCmd("LOCK.MULTI", u64(s.sid), strconv.Itoa(len(names)))
	cm.add(names...)
	for _, n := range o.shared {
		cm.add("SHARED", n)
	}
	releases := make([]string, 0, 2*len(names))
	for _, n := range names {
		releases = append(releases, "UNLOCK", n)
	}
	return cm, releases, nil
}

func (s *Session) lockMulti(ctx context.Context, names []string, opts []MultiOption, try bool) ([]uint64, context.Context, error) {
	cm, releases, err := s.multiCmd(names, opts)
	if err != nil {
		return nil, nil, err
	}
	what := "locks " + strings.Join(names, ", ")
	r, err := s.waitReply(ctx, cm, what, releases, try)
	if err != nil {
		return nil, nil, err
	}
	a, ok := r.([]any)
	if !ok || len(a) != len(names) {
		return nil, nil, fmt.Errorf("%w: LOCK.MULTI answered %T, want %d tokens", errProto, r, len(names))
	}
	tokens := make([]uint64, len(a))
	for i, v := range a {
		if tokens[i], err = asUint(v); err != nil {
			return nil, nil, err
		}
	}
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = "lock\x00" + n
	}
	return tokens, s.holdAll(keys), nil
}

// LockMulti takes every name at once (LOCK.MULTI), waiting FIFO on all of them until ctx's
// deadline (ErrTimeout, nothing held; without a deadline until granted, as Lock). It returns
// a token per name in the order given and a context cancelled when the lease can no longer
// be trusted or any of the names is unlocked through this session. Granted once, however
// many fail-overs the request crosses. ErrDeadlock is not possible between multi-requests
// (they hold nothing while they wait) but is when the session already holds other locks.
func (s *Session) LockMulti(ctx context.Context, names []string, opts ...MultiOption) ([]uint64, context.Context, error) {
	return s.lockMulti(ctx, names, opts, false)
}

// TryLockMulti is LockMulti without waiting: ErrBusy (and nothing held) unless every name
// could be granted at once.
func (s *Session) TryLockMulti(ctx context.Context, names []string, opts ...MultiOption) ([]uint64, context.Context, error) {
	return s.lockMulti(ctx, names, opts, true)
}

// UnlockMulti releases every name (one UNLOCK each: each releases that name only, or takes
// the session's waiting request out of all its queues). Every name is tried; the first error
// is returned. The context LockMulti returned is cancelled.
func (s *Session) UnlockMulti(ctx context.Context, names []string) error {
	var first error
	for _, n := range names {
		if err := s.Unlock(ctx, n); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// WithLocks runs fn while holding every name (LockMulti), then unlocks them all, whatever fn
// returned. fn's context is cancelled if the lease can no longer be trusted: fn must stop
// then. The error is fn's, or the lock's or the unlock's.
func (s *Session) WithLocks(ctx context.Context, names []string, fn func(ctx context.Context, tokens []uint64) error, opts ...MultiOption) error {
	tokens, held, err := s.LockMulti(ctx, names, opts...)
	if err != nil {
		return err
	}
	ferr := fn(held, tokens)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	uerr := s.UnlockMulti(rctx, names)
	if ferr != nil {
		return ferr
	}
	if errors.Is(uerr, ErrSession) {
		return nil // the locks went with the session
	}
	return uerr
}

// holdAll makes one context held under every key (cancelled when any is released, or lost).
func (s *Session) holdAll(keys []string) context.Context {
	ctx, cancel := context.WithCancelCause(s.ctx)
	s.addHeld(keys, cancel)
	return ctx
}

func (s *Session) addHeld(keys []string, cancel context.CancelCauseFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range keys {
		if old, ok := s.held[key]; ok {
			s.held[key] = func(err error) { old(err); cancel(err) }
		} else {
			s.held[key] = cancel
		}
	}
}
