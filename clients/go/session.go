// SPDX-License-Identifier: Apache-2.0

package fencelock

// Session: a lease on the servers, renewed by a goroutine of its own every TTL/3, and the
// numbering (REQ sid seq) that makes every mutation through it apply exactly once however
// often it is resent across fail-overs. The rules are libfencelock's (docs/client.md
// "Sessions and the safe deadline"):
//
//   - SafeUntil = send time of the last acknowledged keepalive + TTL − Margin − TTL×drift, on
//     the monotonic clock (time.Now's monotonic reading): never later than the servers'
//     deadline, which they count from the keepalive's arrival on the leader;
//   - the session is LOST when a server answers -NOSESSION, or when SafeUntil is reached
//     without an acknowledged keepalive (a timer set just before SafeUntil cancels the
//     session's context, so the holder's work is told to stop before SafeUntil passes, and
//     so before the servers' own deadline);
//   - lost is terminal: Context() is cancelled with ErrSession as its cause, SafeUntil
//     returns the zero time, every call fails with ErrSession. Close ends it the same way;
//   - mutations are serialized (their seqs must reach the servers in order): use one session
//     per goroutine if goroutines must wait for locks concurrently;
//   - a wait (lock, permit, campaign) whose outcome could not be learned sends the release
//     with a fresh seq before it returns, so no grant the caller never saw outlives the call.
//
// State: open → lost (terminal), by markLost only, under mu.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

const (
	kaPerTTL        = 3
	kaRetriesPerTTL = 10
	kaRetryMin      = 20 * time.Millisecond
	releaseTimeout  = 5 * time.Second
	// lostLead: the session is declared lost this long before SafeUntil, so that the timer
	// that cancels its context fires before SafeUntil passes (timer latency permitting; the
	// margin behind SafeUntil covers the rest).
	lostLead = 2 * time.Millisecond
)

// SessionOption configures NewSession.
type SessionOption func(*sessionOpts)

type sessionOpts struct {
	lockDelay time.Duration
	name      string
	reentrant bool
	maxCount  int
}

// WithLockDelay: when the session expires (rather than closes), each lock it held stays
// unavailable for d.
func WithLockDelay(d time.Duration) SessionOption {
	return func(o *sessionOpts) { o.lockDelay = d }
}

// WithName labels the session (SESSION.INFO shows it).
func WithName(name string) SessionOption { return func(o *sessionOpts) { o.name = name } }

// Reentrant opens a reentrant session (SESSION.OPEN ... REENTRANT [MAXCOUNT maxCount]): a Lock
// of a lock it already holds exclusively counts up and returns the same token, Unlock counts
// down and releases only the last hold (the contexts Lock returned are cancelled then).
// maxCount bounds the holds of one lock (0: the servers' --reentrant-max-count); a Lock over
// it is a *ServerError (word ERR) and changes nothing. Expiry, Close, a revoke and an admin's
// UNLOCK end every hold at once (docs/protocol.md "Reentrant sessions").
func Reentrant(maxCount int) SessionOption {
	return func(o *sessionOpts) { o.reentrant, o.maxCount = true, maxCount }
}

// Session is a lease kept alive by the library. Safe for concurrent use.
type Session struct {
	c      *Client
	sid    uint64
	ttl    time.Duration
	ctx    context.Context
	cancel context.CancelCauseFunc

	op chan struct{} // one slot, held across a mutation: seqs reach the servers in order

	mu        sync.Mutex
	safeUntil time.Time
	lost      bool
	lostErr   error
	seq       uint64
	timer     *time.Timer
	held      map[string]context.CancelCauseFunc // the contexts of what is held, by kind+name
	reentrant bool
	counts    map[string]int         // a reentrant session's holds of each lock, by kind+name
	maxHold   map[string]maxHoldMark // by lock name: the grant a MaxHold deadline belongs to

	stopKA chan struct{}
	kaDone chan struct{}
}

// NewSession opens a session with the given TTL (at least 1 ms). Its keepalive starts at
// once; close it with Close.
func (c *Client) NewSession(ctx context.Context, ttl time.Duration, opts ...SessionOption) (*Session, error) {
	if ttl < time.Millisecond {
		return nil, errors.New("fencelock: session TTL below 1 ms")
	}
	var o sessionOpts
	for _, f := range opts {
		f(&o)
	}
	cm := newCmd("SESSION.OPEN", u64(uint64(ttl.Milliseconds())))
	if o.lockDelay > 0 {
		cm.add("LOCKDELAY", u64(uint64(o.lockDelay.Milliseconds())))
	}
	if o.name != "" {
		cm.add("NAME", o.name)
	}
	if o.maxCount < 0 {
		return nil, errors.New("fencelock: Reentrant's maxCount below 0")
	}
	if o.reentrant {
		cm.add("REENTRANT")
		if o.maxCount > 0 {
			cm.add("MAXCOUNT", u64(uint64(o.maxCount)))
		}
	}
	sent := time.Now()
	// A resend after a lost answer may leave an unused session behind; it expires.
	r, err := c.do(ctx, cm)
	if err != nil {
		return nil, err
	}
	sid, err := asUint(r)
	if err != nil {
		return nil, err
	}
	s := &Session{c: c, sid: sid, ttl: ttl, op: make(chan struct{}, 1),
		held: map[string]context.CancelCauseFunc{}, stopKA: make(chan struct{}),
		kaDone: make(chan struct{}), reentrant: o.reentrant, counts: map[string]int{},
		maxHold: map[string]maxHoldMark{}}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	s.mu.Lock() // checkDeadline may run before AfterFunc returns
	s.safeUntil = sent.Add(s.span(uint64(ttl.Milliseconds())))
	s.timer = time.AfterFunc(time.Until(s.safeUntil.Add(-lostLead)), s.checkDeadline)
	s.mu.Unlock()
	go s.keepalive()
	return s, nil
}

// ID is the session id (sid).
func (s *Session) ID() uint64 { return s.sid }

// TTL is the session's time to live.
func (s *Session) TTL() time.Duration { return s.ttl }

// Context is cancelled when the session is lost or closed (its cause matches ErrSession).
// The contexts Lock, Acquire and Campaign return derive from it.
func (s *Session) Context() context.Context { return s.ctx }

// Done is Context().Done().
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// span is what the servers granted, less the margin for the clocks' rates.
func (s *Session) span(grantedMs uint64) time.Duration {
	o := &s.c.opts
	drift := time.Duration(grantedMs) * time.Millisecond * time.Duration(o.DriftPPM) / 1000000
	return time.Duration(grantedMs)*time.Millisecond - o.Margin - drift
}

// SafeUntil is the time (monotonic) before which the session surely lives on the servers,
// so that what is held through it is still held: act on a resource only while
// time.Now().Before(s.SafeUntil()). The zero time once lost.
func (s *Session) SafeUntil() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lostLocked(time.Now()) {
		return time.Time{}
	}
	return s.safeUntil
}

// Remaining is SafeUntil minus now (0 or less once lost).
func (s *Session) Remaining() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.lostLocked(now) {
		return 0
	}
	return s.safeUntil.Sub(now)
}

// Lost reports whether the session is lost (or closed).
func (s *Session) Lost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostLocked(time.Now())
}

func (s *Session) lostLocked(now time.Time) bool {
	if !s.lost && !now.Before(s.safeUntil.Add(-lostLead)) {
		s.markLostLocked(fmt.Errorf("%w: session %d: the safe deadline passed without an acknowledged keepalive", ErrSession, s.sid))
	}
	return s.lost
}

func (s *Session) markLostLocked(why error) {
	if s.lost {
		return
	}
	s.lost = true
	s.lostErr = why
	s.timer.Stop()
	s.cancel(why) // children (the held contexts) are cancelled before this returns
}

func (s *Session) markLost(why error) {
	s.mu.Lock()
	s.markLostLocked(why)
	s.mu.Unlock()
}

// checkDeadline runs when the timer set at SafeUntil fires: lost unless a keepalive moved it.
func (s *Session) checkDeadline() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if !s.lostLocked(now) {
		s.timer.Reset(s.safeUntil.Add(-lostLead).Sub(now))
	}
}

// keepalive renews every TTL/3; after a failure it retries sooner (TTL/10, at least 20 ms)
// until the safe deadline passes. Each SESSION.KEEPALIVE is bounded by the safe deadline.
func (s *Session) keepalive() {
	defer close(s.kaDone)
	interval := s.ttl / kaPerTTL
	retry := max(kaRetryMin, s.ttl/kaRetriesPerTTL)
	next := time.Now().Add(interval)
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stopKA:
			return
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if d := time.Until(next); d > 0 {
			t.Reset(d)
			continue
		}
		s.mu.Lock()
		deadline := s.safeUntil
		s.mu.Unlock()
		ctx, cancel := context.WithDeadline(s.ctx, deadline)
		sent := time.Now()
		r, err := s.c.do(ctx, newCmd("SESSION.KEEPALIVE", u64(s.sid)))
		cancel()
		var granted uint64
		if err == nil {
			granted, err = asUint(r)
		}
		switch {
		case err == nil:
			granted = min(granted, uint64(s.ttl.Milliseconds()))
			s.mu.Lock()
			if !s.lost {
				if u := sent.Add(s.span(granted)); u.After(s.safeUntil) {
					s.safeUntil = u
				}
			}
			s.mu.Unlock()
			next = sent.Add(interval)
		case errors.Is(err, ErrSession):
			s.markLost(fmt.Errorf("session %d is gone on the servers: %w", s.sid, err))
			return
		default:
			next = time.Now().Add(retry)
		}
		t.Reset(max(0, time.Until(next)))
	}
}

func (s *Session) errLost() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lostLocked(time.Now()) {
		return s.lostErr
	}
	return nil
}

// begin takes the mutation slot and the next seq.
func (s *Session) begin(ctx context.Context) (uint64, error) {
	if err := s.errLost(); err != nil {
		return 0, err
	}
	select {
	case s.op <- struct{}{}:
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	return seq, nil
}

func (s *Session) end() { <-s.op }

// send sends cm with REQ sid seq, retried until its outcome is known or the deadline.
func (s *Session) send(cm *cmd, seq uint64, deadline time.Time, stop func() bool, cause func() error) (any, error) {
	cm.add("REQ", u64(s.sid), u64(seq))
	cm.write, cm.retry = true, true
	r, err := s.c.p.call(cm, deadline, stop, cause)
	if errors.Is(err, ErrSession) {
		s.markLost(fmt.Errorf("session %d: %w", s.sid, err))
	}
	return r, err
}

// mutate sends cm with the next REQ sid seq (exactly once).
func (s *Session) mutate(ctx context.Context, cm *cmd) (any, error) {
	seq, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer s.end()
	stop, cause := ctxStop(ctx)
	return s.send(cm, seq, s.c.deadline(ctx), stop, cause)
}

// waitGrant runs LOCK / SEM.ACQUIRE / ELECT.CAMPAIGN: the token. try: without WAIT, nil is
// ErrBusy. Otherwise the wait lasts until ctx's deadline, nil is ErrTimeout; the reply to a
// wait that ran out is still awaited (Timeout more), and the call is abandoned only when ctx
// is cancelled or the session lost. Without a deadline it asks for Options.MaxWait at a
// time, again after each nil. When the outcome could not be learned, release (UNLOCK,
// SEM.RELEASE, ELECT.RESIGN) is sent with a fresh seq first.
func (s *Session) waitGrant(ctx context.Context, cm *cmd, release string, try bool) (uint64, error) {
	name := cm.argv[1]
	r, err := s.waitReply(ctx, cm, name, []string{release, name}, try)
	if err != nil {
		return 0, err
	}
	return asUint(r)
}

// waitReply is waitGrant for any granting command (LOCK, LOCK.MULTI, ...): its non-nil reply.
// what names it in errors; releases holds the release commands' (verb, name) pairs, each sent
// as "verb name sid" when the outcome could not be learned.
func (s *Session) waitReply(ctx context.Context, cm *cmd, what string, releases []string, try bool) (any, error) {
	if _, ok := ctx.Deadline(); try || ok {
		return s.waitReplyOnce(ctx, cm, what, releases, try)
	}
	argv := append([]string(nil), cm.argv...)
	for {
		wctx, cancel := context.WithTimeout(ctx, s.c.opts.MaxWait)
		r, err := s.waitReplyOnce(wctx, &cmd{argv: append([]string(nil), argv...), waitIdx: -1}, what, releases, false)
		cancel()
		if !errors.Is(err, ErrTimeout) || ctx.Err() != nil {
			return r, err
		}
	}
}

func (s *Session) waitReplyOnce(ctx context.Context, cm *cmd, what string, releases []string, try bool) (any, error) {
	var deadline time.Time
	stop := func() bool {
		return s.ctx.Err() != nil || errors.Is(ctx.Err(), context.Canceled)
	}
	if try {
		deadline = s.c.deadline(ctx)
		stop = func() bool { return s.ctx.Err() != nil || ctx.Err() != nil }
	} else {
		end, _ := ctx.Deadline()
		cm.wait(end)
		deadline = end.Add(s.c.opts.Timeout)
	}
	cause := func() error {
		if s.ctx.Err() != nil {
			return context.Cause(s.ctx)
		}
		return context.Cause(ctx)
	}
	seq, err := s.begin(ctx)
	if err != nil {
		if !try && errors.Is(err, context.DeadlineExceeded) { // the wait ran out in line
			return nil, fmt.Errorf("%w: %s (waiting for the session's previous call)", ErrTimeout, what)
		}
		return nil, err
	}
	r, err := s.send(cm, seq, deadline, stop, cause)
	s.end()
	if err != nil {
		var ce *callError
		if errors.As(err, &ce) {
			// The outcome is not known: give back a grant never seen, or leave the queue.
			rctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
			for i := 0; i+1 < len(releases); i += 2 {
				if seq, e := s.begin(rctx); e == nil {
					s.send(newCmd(releases[i], releases[i+1], u64(s.sid)), seq, s.c.deadline(rctx),
						func() bool { return false }, func() error { return nil })
					s.end()
				}
			}
			cancel()
			if lost := s.errLost(); lost != nil {
				return nil, lost
			}
		}
		return nil, err
	}
	if r == nil {
		if lost := s.errLost(); lost != nil {
			return nil, lost
		}
		if try {
			return nil, fmt.Errorf("%w: %s", ErrBusy, what)
		}
		return nil, fmt.Errorf("%w: %s", ErrTimeout, what)
	}
	return r, nil
}

// hold makes the context of what is now held under key (cancelled on release or loss).
func (s *Session) hold(key string) context.Context { return s.holdUntil(key, time.Time{}, false) }

// holdUntil is hold with a deadline (zero: none) at which the context is cancelled with
// ErrMaxHold; counted: one more hold of a reentrant session's lock (unhold counts down).
func (s *Session) holdUntil(key string, deadline time.Time, counted bool) context.Context {
	ctx, cancel := context.WithCancelCause(s.ctx)
	if !deadline.IsZero() {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadlineCause(ctx, deadline, ErrMaxHold)
		inner := cancel
		cancel = func(err error) { inner(err); stop() }
	}
	s.mu.Lock()
	if old, ok := s.held[key]; ok {
		s.held[key] = func(err error) { old(err); cancel(err) }
	} else {
		s.held[key] = cancel
	}
	if counted {
		s.counts[key]++
	}
	s.mu.Unlock()
	return ctx
}

// ErrClosed is the cause (beside ErrSession) of a session's context after Close or Abandon:
// the program ended the session, it was not lost.
var ErrClosed = errors.New("fencelock: session closed")

// ErrReleased is the cause of a held context's cancellation after Unlock, Release or Resign.
var ErrReleased = errors.New("fencelock: released")

func (s *Session) unhold(key string) {
	s.mu.Lock()
	if s.counts[key] > 1 { // a reentrant hold counted down: the lock is still held
		s.counts[key]--
		s.mu.Unlock()
		return
	}
	delete(s.counts, key)
	cancel := s.held[key]
	delete(s.held, key)
	s.mu.Unlock()
	if cancel != nil {
		cancel(ErrReleased)
	}
}

// Close stops the keepalive and closes the session on the servers (its locks, permits,
// leaderships are released at once, without lock-delay). The session's context is cancelled
// first. A session lost locally is still closed on the servers if it lives there.
func (s *Session) Close(ctx context.Context) error {
	// Lost first: a wait in progress is abandoned (and leaves its queue), new calls fail.
	s.markLost(fmt.Errorf("%w: %w: session %d", ErrSession, ErrClosed, s.sid))
	s.stopKeepalive()
	select { // after any mutation in flight: seqs reach the servers in order
	case s.op <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer s.end()
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	cm := newCmd("SESSION.CLOSE", u64(s.sid), "REQ", u64(s.sid), u64(seq))
	cm.write = true
	_, err := s.c.do(ctx, cm)
	if errors.Is(err, ErrSession) {
		return nil // already gone on the servers
	}
	return err
}

// Abandon stops the keepalive without closing the session on the servers: its lease runs
// out there (lock-delay applies). For a process going away abnormally.
func (s *Session) Abandon() {
	s.markLost(fmt.Errorf("%w: %w: session %d (abandoned)", ErrSession, ErrClosed, s.sid))
	s.stopKeepalive()
}

func (s *Session) stopKeepalive() {
	s.mu.Lock()
	select {
	case <-s.stopKA:
	default:
		close(s.stopKA)
	}
	s.mu.Unlock()
	<-s.kaDone
}
