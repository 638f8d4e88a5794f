// SPDX-License-Identifier: Apache-2.0

package fencelock

// Cooperative revocation (LOCK.REVOKE in docs/protocol.md): anyone with the
// revoke permission asks a lock's exclusive holder to let go, optionally by a deadline after
// which the servers release that grant as an expiry would (lock-delay, then the next waiter
// with a larger token; the old token is stale). The holder learns of it from the event
// stream: Session.OnRevoke reads the lock's events from its grant on, in a goroutine of its
// own, and calls a function for each revoke request of that grant. Session.OnWaiter reads
// the same stream for the waiters that queued behind the grant with Notify (LOCK ... NOTIFY).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Revoke is a request to a holder to let go of a lock: the lock, the grant's token and
// session, the deadline counted from when the request applied on the leader (0: asked only,
// never forced), the reason and who asked.
type Revoke struct {
	Name     string
	Token    uint64
	SID      uint64
	Deadline time.Duration
	Reason   string
	By       string
}

// Revoke asks the exclusive holder of lock name to let go (LOCK.REVOKE); with deadline > 0
// the servers take the grant from it then if it still holds the lock. reason ("" for none)
// is shown to the holder. The token of the grant asked; ErrNotHolder if nobody holds the lock
// exclusively, ErrPerm without the revoke permission (or admin).
func (c *Client) Revoke(ctx context.Context, name string, deadline time.Duration, reason string) (uint64, error) {
	cm := newCmd("LOCK.REVOKE", name)
	if deadline > 0 {
		cm.add("DEADLINE", u64(uint64(max(1, deadline.Milliseconds()))))
	}
	if reason != "" {
		cm.add("REASON", reason)
	}
	cm.write = true
	cm.retry = false // no REQ: a resend could ask twice (harmless, but not exactly once)
	r, err := c.do(ctx, cm)
	if err != nil {
		return 0, err
	}
	return asUint(r)
}

// RevokeWatch is what OnRevoke (and OnWaiter, as WaiterWatch) returned: Stop ends it; Err
// says why it ended by itself.
type RevokeWatch struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
	mu   sync.Mutex
	err  error
}

// Stop ends the watch (a read in progress is abandoned within about 0.1 s); fn is not called
// after Stop returns.
func (rw *RevokeWatch) Stop() {
	rw.once.Do(func() { close(rw.stop) })
	<-rw.done
}

// Err is why the watch ended by itself (ErrPerm: the user may not read the event stream; a
// malformed reply), nil while it runs, after Stop and once the session ended.
func (rw *RevokeWatch) Err() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.err
}

// OnRevoke calls fn (on a goroutine of its own, one call at a time) for each revoke request
// of the grant token of lock name held through s, until Stop or the end of the session. It
// reads the lock's events from the grant on, so a request made before its first read is not
// missed. It needs the read permission on the event stream (without keys=/locks= globs).
// fn should make the holder's work stop and unlock: the deadline runs on the servers.
func (s *Session) OnRevoke(name string, token uint64, fn func(Revoke)) *RevokeWatch {
	return s.grantWatch(name, token, func(ev Event) {
		if rv, ok := revokeOf(ev, name, s.sid, token); ok {
			fn(rv)
		}
	})
}

// Waiter is a session that queued behind a held lock with Notify (LOCK ... NOTIFY): the lock,
// the holder's grant it queued behind, the waiting session and how long it said it would wait.
type Waiter struct {
	Name  string
	Token uint64
	SID   uint64
	Wait  time.Duration
}

// WaiterWatch is what OnWaiter returned: the same watch of a grant's events as OnRevoke's.
type WaiterWatch = RevokeWatch

// OnWaiter calls fn (on a goroutine of its own, one call at a time) for each session that
// queued with Notify behind the grant token of lock name held through s, once per waiting
// session, until Stop or the end of the session. The holder may let go early, or ignore it.
// It reads the lock's events from the grant on, as OnRevoke, with the same permission.
func (s *Session) OnWaiter(name string, token uint64, fn func(Waiter)) *WaiterWatch {
	return s.grantWatch(name, token, func(ev Event) {
		if wt, ok := waiterOf(ev, name, token); ok {
			fn(wt)
		}
	})
}

// grantWatch reads the events of lock name from grant token on and hands each to deliver.
func (s *Session) grantWatch(name string, token uint64, deliver func(Event)) *RevokeWatch {
	rw := &RevokeWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go s.grantLoop(rw, name, token, deliver)
	return rw
}

func (s *Session) grantLoop(rw *RevokeWatch, name string, token uint64, deliver func(Event)) {
	defer close(rw.done)
	from := fmt.Sprintf("%d-0", max(token, 1)-1)
	for {
		select {
		case <-rw.stop:
			return
		case <-s.ctx.Done():
			return
		default:
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.c.opts.Timeout)
		w, err := s.c.Watch(ctx, name, from)
		cancel()
		if err != nil {
			if errors.Is(err, ErrPerm) || errors.Is(err, ErrProtocol) {
				rw.mu.Lock()
				rw.err = err
				rw.mu.Unlock()
				return
			}
			select { // unreachable: again shortly
			case <-rw.stop:
				return
			case <-s.ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		end := s.readGrantEvents(rw, w, deliver)
		from = w.Stop()
		if end {
			return
		}
		var ce *CompactedError
		if err := w.Err(); errors.As(err, &ce) && ce.After != "" {
			from = ce.After // go on from the oldest retained
		} else if err != nil {
			rw.mu.Lock()
			rw.err = err
			rw.mu.Unlock()
			return
		}
	}
}

// readGrantEvents hands the events of w to deliver until w ends (false) or the watch or
// session stops (true).
func (s *Session) readGrantEvents(rw *RevokeWatch, w *Watcher, deliver func(Event)) bool {
	for {
		select {
		case <-rw.stop:
			return true
		case <-s.ctx.Done():
			return true
		case ev, ok := <-w.Events():
			if !ok {
				return false
			}
			deliver(ev)
		}
	}
}

// revokeOf is the Revoke an event carries for grant token of lock name held by session sid
// (the prefix stream also carries other names and events).
func revokeOf(ev Event, name string, sid, token uint64) (Revoke, bool) {
	f := ev.Fields
	if ev.Type != "revoke-requested" || ev.Name != name || f["sid"] != u64(sid) || f["token"] != u64(token) {
		return Revoke{}, false
	}
	dl, _ := strconv.ParseUint(f["deadline_ms"], 10, 64)
	return Revoke{Name: name, Token: token, SID: sid, Deadline: time.Duration(dl) * time.Millisecond,
		Reason: f["reason"], By: f["by"]}, true
}

// waiterOf is the Waiter a wait-notify event carries for grant token of lock name.
func waiterOf(ev Event, name string, token uint64) (Waiter, bool) {
	f := ev.Fields
	if ev.Type != "wait-notify" || ev.Name != name || f["token"] != u64(token) {
		return Waiter{}, false
	}
	sid, _ := strconv.ParseUint(f["sid"], 10, 64)
	ms, _ := strconv.ParseUint(f["wait_ms"], 10, 64)
	return Waiter{Name: name, Token: token, SID: sid, Wait: time.Duration(ms) * time.Millisecond}, true
}
