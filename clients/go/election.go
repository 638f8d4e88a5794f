// SPDX-License-Identifier: Apache-2.0

package fencelock

// Election: leader election in the shape of etcd's concurrency.Election (Campaign, Proclaim,
// Resign, Leader, Observe), on ELECT.*. The leader's token (a fresh revision) fences its
// writes, so a deposed leader cannot write whatever it believes.

import (
	"context"
	"fmt"
	"sync"
)

// Election is one session's part in the election name. Safe for concurrent use.
type Election struct {
	s    *Session
	name string

	mu    sync.Mutex
	token uint64
	rev   uint64 // of the last takeover or proclaim by this handle
	ctx   context.Context
}

// NewElection is the session's handle on the election name (as etcd's NewElection).
func NewElection(s *Session, name string) *Election { return &Election{s: s, name: name} }

// Name is the election's name.
func (e *Election) Name() string { return e.name }

// Campaign makes the session a candidate with value and waits, FIFO, until it leads or ctx's
// deadline passes (ErrTimeout: no longer a candidate then). Once leading, Token is the
// leader's fencing token and Context is cancelled when the leadership can no longer be
// trusted (session lost or closed, Resign).
func (e *Election) Campaign(ctx context.Context, value string) error {
	return e.campaign(ctx, value, false)
}

// TryCampaign leads at once or fails with ErrBusy (someone leads, delays or campaigns).
func (e *Election) TryCampaign(ctx context.Context, value string) error {
	return e.campaign(ctx, value, true)
}

func (e *Election) campaign(ctx context.Context, value string, try bool) error {
	cm := newCmd("ELECT.CAMPAIGN", e.name, u64(e.s.sid), value)
	token, err := e.s.waitGrant(ctx, cm, "ELECT.RESIGN", try)
	if err != nil {
		return err
	}
	hctx := e.s.hold("elect\x00" + e.name)
	e.mu.Lock()
	e.token, e.rev, e.ctx = token, token, hctx
	e.mu.Unlock()
	return nil
}

// Token is the leader's fencing token (0 before Campaign succeeded).
func (e *Election) Token() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.token
}

// Context is the leadership's context (nil before Campaign succeeded).
func (e *Election) Context() context.Context {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ctx
}

// Rev is the revision of this handle's last takeover (Campaign) or Proclaim, as etcd's
// Election.Rev: 0 before Campaign succeeded.
func (e *Election) Rev() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rev
}

// Proclaim replaces the leader's value without an election (Rev is then the change's
// revision). ErrStale when this session no longer leads with its token; ErrNotHolder
// before Campaign succeeded.
func (e *Election) Proclaim(ctx context.Context, value string) error {
	token := e.Token()
	if token == 0 {
		return fmt.Errorf("%w: not the leader of %s", ErrNotHolder, e.name)
	}
	r, err := e.s.mutate(ctx, newCmd("ELECT.PROCLAIM", e.name, u64(e.s.sid), u64(token), value))
	if err != nil {
		return err
	}
	rev, err := asUint(r)
	if err != nil {
		return err
	}
	e.mu.Lock()
	if e.token == token {
		e.rev = rev
	}
	e.mu.Unlock()
	return nil
}

// Resign steps down (the next candidate leads) or withdraws a candidacy.
func (e *Election) Resign(ctx context.Context) error {
	e.s.unhold("elect\x00" + e.name)
	e.mu.Lock()
	e.token, e.rev, e.ctx = 0, 0, nil
	e.mu.Unlock()
	_, err := e.s.mutate(ctx, newCmd("ELECT.RESIGN", e.name, u64(e.s.sid)))
	return err
}

// Leader is the current leader (ErrNotFound when nobody leads).
func (e *Election) Leader(ctx context.Context) (*LeaderInfo, error) {
	return e.s.c.Leader(ctx, e.name)
}

// Observe sends every change of the election's leader or value, in order, until ctx is done.
func (e *Election) Observe(ctx context.Context) <-chan LeaderInfo {
	return e.s.c.Observe(ctx, e.name)
}
