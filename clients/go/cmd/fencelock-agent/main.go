// SPDX-License-Identifier: Apache-2.0

// Command fencelock-agent is the Go client's conformance agent: it speaks
// tests/conformance/PROTOCOL.md on stdin and stdout (one JSON object per line), with one
// fencelock.Client made from the environment, using nothing but the package's public API.
// Each request runs on a goroutine of its own; replies and events are written whole, one per
// line, under one lock.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	fencelock "github.com/fencelock/fencelock-go"
)

const version = "0.1.0"

type agent struct {
	c *fencelock.Client

	outMu sync.Mutex
	out   *bufio.Writer

	mu       sync.Mutex
	n        int
	sessions map[string]*fencelock.Session
	elects   map[string]*fencelock.Election // by session handle + "\x00" + name
	watchers map[string]*fencelock.Watcher
	// ended[h] is closed once watcher h's watch_end line is written: watch.stop answers after
	// it (PROTOCOL.md: the end comes before the reply).
	ended map[string]chan struct{}
	// revokes[h]: the on_revoke and on_waiter registrations of session h, stopped before it
	// closes
	revokes map[string][]*fencelock.RevokeWatch
	wg      sync.WaitGroup
}

// afterReply is a result key (never written) holding a func run once the reply is out.
const afterReply = "\x00after"

func (a *agent) emit(v map[string]any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"event": "agent_error", "message": err.Error()})
	}
	a.outMu.Lock()
	a.out.Write(b)
	a.out.WriteByte('\n')
	a.out.Flush()
	a.outMu.Unlock()
}

func monoMs() int64 { return time.Since(start).Milliseconds() }

var start = time.Now()

func seconds(v any, def time.Duration) time.Duration {
	f, ok := v.(float64)
	if !ok {
		return def
	}
	return time.Duration(f * float64(time.Second))
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func strs(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		out = append(out, str(x))
	}
	return out
}

func num(v any) uint64 {
	f, _ := v.(float64)
	return uint64(f)
}

func (a *agent) session(req map[string]any) (*fencelock.Session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[str(req["session"])]
	if s == nil {
		return nil, fmt.Errorf("%w: no session %q in this agent", fencelock.ErrSession, str(req["session"]))
	}
	return s, nil
}

// waitCtx: a context whose deadline is the wait.
func waitCtx(req map[string]any) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), seconds(req["wait"], 0))
}

func (a *agent) handle(req map[string]any) (map[string]any, error) {
	ctx := context.Background()
	op := str(req["op"])
	switch op {
	case "session.open":
		var opts []fencelock.SessionOption
		if d := seconds(req["lock_delay"], 0); d > 0 {
			opts = append(opts, fencelock.WithLockDelay(d))
		}
		if n := str(req["name"]); n != "" {
			opts = append(opts, fencelock.WithName(n))
		}
		if b, _ := req["reentrant"].(bool); b {
			opts = append(opts, fencelock.Reentrant(int(num(req["max_count"]))))
		}
		s, err := a.c.NewSession(ctx, seconds(req["ttl"], 10*time.Second), opts...)
		if err != nil {
			return nil, err
		}
		a.mu.Lock()
		a.n++
		h := "s" + strconv.Itoa(a.n)
		a.sessions[h] = s
		a.mu.Unlock()
		go func() {
			<-s.Done()
			if errors.Is(context.Cause(s.Context()), fencelock.ErrClosed) {
				return // closed by a request, not lost
			}
			a.emit(map[string]any{"event": "lost", "session": h, "mono_ms": monoMs(),
				"wall_ms": time.Now().UnixMilli()})
		}()
		return map[string]any{"session": h, "sid": s.ID()}, nil
	case "session.close":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		a.stopRevokes(str(req["session"]))
		return nil, s.Close(ctx)
	case "session.safe":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		return map[string]any{"remaining_ms": s.Remaining().Milliseconds(), "lost": s.Lost()}, nil
	case "lock":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		var opts []fencelock.LockOption
		if b, _ := req["shared"].(bool); b {
			opts = append(opts, fencelock.Shared())
		}
		if b, _ := req["notify"].(bool); b {
			opts = append(opts, fencelock.Notify())
		}
		if v, ok := req["value"].(string); ok {
			opts = append(opts, fencelock.WithValue(v))
		}
		if d := seconds(req["max_hold"], 0); d > 0 {
			opts = append(opts, fencelock.MaxHold(d))
		}
		var token uint64
		if seconds(req["wait"], 0) <= 0 {
			token, _, err = s.TryLock(ctx, str(req["name"]), opts...)
		} else {
			wctx, cancel := waitCtx(req)
			token, _, err = s.Lock(wctx, str(req["name"]), opts...)
			cancel()
		}
		if err != nil {
			return nil, err
		}
		return map[string]any{"token": token}, nil
	case "unlock":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		return nil, s.Unlock(ctx, str(req["name"]))
	case "lock.multi":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		names, shared := strs(req["names"]), strs(req["shared"])
		var tokens []uint64
		if seconds(req["wait"], 0) <= 0 {
			tokens, _, err = s.TryLockMulti(ctx, names, fencelock.SharedNames(shared...))
		} else {
			wctx, cancel := waitCtx(req)
			tokens, _, err = s.LockMulti(wctx, names, fencelock.SharedNames(shared...))
			cancel()
		}
		if err != nil {
			return nil, err
		}
		return map[string]any{"tokens": tokens}, nil
	case "unlock.multi":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		return nil, s.UnlockMulti(ctx, strs(req["names"]))
	case "sem.acquire":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		var token uint64
		limit := int(num(req["limit"]))
		var opts []fencelock.SemOption
		if p, ok := req["permits"].(float64); ok {
			opts = append(opts, fencelock.Permits(int(p)))
		}
		if seconds(req["wait"], 0) <= 0 {
			token, _, err = s.TryAcquire(ctx, str(req["name"]), limit, opts...)
		} else {
			wctx, cancel := waitCtx(req)
			token, _, err = s.Acquire(wctx, str(req["name"]), limit, opts...)
			cancel()
		}
		if err != nil {
			return nil, err
		}
		return map[string]any{"token": token}, nil
	case "sem.release":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		return nil, s.Release(ctx, str(req["name"]))
	case "elect.campaign":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		e := a.election(str(req["session"]), s, str(req["name"]))
		if seconds(req["wait"], 0) <= 0 {
			err = e.TryCampaign(ctx, str(req["value"]))
		} else {
			wctx, cancel := waitCtx(req)
			err = e.Campaign(wctx, str(req["value"]))
			cancel()
		}
		if err != nil {
			return nil, err
		}
		return map[string]any{"token": e.Token()}, nil
	case "elect.resign":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		return nil, a.election(str(req["session"]), s, str(req["name"])).Resign(ctx)
	case "elect.leader":
		li, err := a.c.Leader(ctx, str(req["name"]))
		if err != nil {
			return nil, err
		}
		return map[string]any{"sid": li.Sid, "value": li.Value, "token": li.Token}, nil
	case "elect.observe":
		li, err := a.c.ObserveOnce(ctx, str(req["name"]), num(req["after_rev"]), seconds(req["wait"], 0))
		if err != nil {
			return nil, err
		}
		return map[string]any{"sid": li.Sid, "value": li.Value, "rev": li.Rev}, nil
	case "put", "del":
		opts, err := a.writeOpts(req)
		if err != nil {
			return nil, err
		}
		if op == "put" {
			rev, err := a.c.Put(ctx, str(req["key"]), str(req["value"]), opts...)
			if err != nil {
				return nil, err
			}
			return map[string]any{"rev": rev}, nil
		}
		_, err = a.c.Delete(ctx, str(req["key"]), opts...)
		return nil, err
	case "incr":
		opts, err := a.writeOpts(req)
		if err != nil {
			return nil, err
		}
		by := int64(1)
		if f, ok := req["by"].(float64); ok {
			by = int64(f)
		}
		v, err := a.c.Incr(ctx, str(req["key"]), by, opts...)
		if err != nil {
			return nil, err
		}
		return map[string]any{"value": v}, nil
	case "txn":
		t, err := a.txn(req)
		if err != nil {
			return nil, err
		}
		r, err := t.Commit(ctx)
		if err != nil {
			return nil, err
		}
		var results any // null: a resend answered without them
		if r.ResultsKnown {
			results = r.Results
		}
		return map[string]any{"succeeded": r.Succeeded, "rev": r.Revision, "results": results}, nil
	case "get":
		kv, err := a.c.Get(ctx, str(req["key"]))
		if err != nil {
			return nil, err
		}
		return map[string]any{"value": kv.Value, "mod_rev": kv.ModRev, "version": kv.Version}, nil
	case "fence.check":
		return nil, a.c.FenceCheck(ctx, str(req["name"]), num(req["token"]))
	case "watch.start":
		from, _ := req["from"].(string)
		w, err := a.c.Watch(ctx, str(req["prefix"]), from)
		if err != nil {
			return nil, err
		}
		a.mu.Lock()
		a.n++
		h := "w" + strconv.Itoa(a.n)
		a.watchers[h] = w
		done := make(chan struct{})
		a.ended[h] = done
		a.mu.Unlock()
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			defer close(done)
			for ev := range w.Events() {
				a.emit(map[string]any{"event": "watch", "watch": h, "id": ev.ID,
					"type": ev.Type, "name": ev.Name})
			}
			var word any
			if err := w.Err(); err != nil {
				word = fencelock.Word(err)
			}
			a.emit(map[string]any{"event": "watch_end", "watch": h, "error": word,
				"last": w.Last()})
		}()
		return map[string]any{"watch": h}, nil
	case "watch.stop":
		a.mu.Lock()
		w, done := a.watchers[str(req["watch"])], a.ended[str(req["watch"])]
		a.mu.Unlock()
		if w == nil {
			return nil, fmt.Errorf("no watcher %q", str(req["watch"]))
		}
		last := w.Stop()
		<-done // its watch_end line is out before this reply
		return map[string]any{"last": last}, nil
	case "lock.info":
		li, err := a.c.LockInfo(ctx, str(req["name"]))
		if err != nil {
			return nil, err
		}
		return map[string]any{"holder": li.Holder, "token": li.Token, "value": li.Value,
			"max_hold_ms": li.MaxHold.Milliseconds(), "transitions": li.Transitions,
			"count": li.Count}, nil
	case "lock.history":
		hs, err := a.c.LockHistory(ctx, str(req["name"]), int(num(req["count"])), num(req["before"]))
		if err != nil {
			return nil, err
		}
		entries := make([]map[string]any, 0, len(hs))
		for _, h := range hs {
			ws := make([]map[string]any, 0, len(h.Waiters))
			for _, w := range h.Waiters {
				ws = append(ws, map[string]any{"session": w.SID, "waited_ms": w.Waited.Milliseconds()})
			}
			entries = append(entries, map[string]any{"session": h.SID,
				"session_name": h.SessionName, "value": h.Value, "token": h.Token,
				"ended_by": h.EndedBy, "granted_ms": h.GrantedMs, "ended_ms": h.EndedMs,
				"held_ms": h.Held.Milliseconds(), "waited_ms": h.Waited.Milliseconds(),
				"waiters_total": h.WaitersTotal, "waiters": ws})
		}
		return map[string]any{"entries": entries}, nil
	case "latch.create":
		return nil, a.c.LatchCreate(ctx, str(req["name"]), int(num(req["count"])))
	case "latch.join":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		return nil, s.LatchJoin(ctx, str(req["name"]))
	case "latch.countdown":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		left, err := s.LatchCountdown(ctx, str(req["name"]))
		if err != nil {
			return nil, err
		}
		return map[string]any{"remaining": left}, nil
	case "latch.wait":
		return nil, a.c.LatchWait(ctx, str(req["name"]), seconds(req["wait"], 0))
	case "latch.info":
		li, err := a.c.LatchInfo(ctx, str(req["name"]))
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": li.Type, "state": li.State, "count": li.Count,
			"remaining": li.Remaining, "broken_sid": li.BrokenSID}, nil
	case "latch.delete":
		deleted, err := a.c.LatchDelete(ctx, str(req["name"]))
		if err != nil {
			return nil, err
		}
		return map[string]any{"deleted": deleted}, nil
	case "barrier.enter", "barrier.leave":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		if op == "barrier.enter" {
			return nil, s.BarrierEnter(ctx, str(req["name"]), int(num(req["count"])), seconds(req["wait"], 0))
		}
		return nil, s.BarrierLeave(ctx, str(req["name"]), seconds(req["wait"], 0))
	case "revoke":
		var reason string
		if r, ok := req["reason"].(string); ok {
			reason = r
		}
		dl := time.Duration(num(req["deadline_ms"])) * time.Millisecond
		t, err := a.c.Revoke(ctx, str(req["name"]), dl, reason)
		if err != nil {
			return nil, err
		}
		return map[string]any{"token": t}, nil
	case "on_revoke":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		h := str(req["session"])
		// The callback's lines wait for the reply to be out (PROTOCOL.md's order rule).
		answered := make(chan struct{})
		rw := s.OnRevoke(str(req["name"]), num(req["token"]), func(r fencelock.Revoke) {
			<-answered
			a.emit(map[string]any{"event": "revoke", "session": h, "name": r.Name,
				"token": r.Token, "deadline_ms": r.Deadline.Milliseconds(), "reason": r.Reason,
				"by": r.By})
		})
		a.mu.Lock()
		a.revokes[h] = append(a.revokes[h], rw)
		a.mu.Unlock()
		return map[string]any{afterReply: func() { close(answered) }}, nil
	case "on_waiter":
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		h := str(req["session"])
		answered := make(chan struct{}) // as on_revoke: no line before the reply
		ww := s.OnWaiter(str(req["name"]), num(req["token"]), func(w fencelock.Waiter) {
			<-answered
			a.emit(map[string]any{"event": "waiter", "session": h, "name": w.Name,
				"token": w.Token, "sid": w.SID, "wait_ms": w.Wait.Milliseconds()})
		})
		a.mu.Lock()
		a.revokes[h] = append(a.revokes[h], ww)
		a.mu.Unlock()
		return map[string]any{afterReply: func() { close(answered) }}, nil
	}
	return nil, fmt.Errorf("unknown op %q", op)
}

// stopRevokes ends session h's on_revoke registrations: no revoke line after this returns.
func (a *agent) stopRevokes(h string) {
	a.mu.Lock()
	rws := a.revokes[h]
	delete(a.revokes, h)
	a.mu.Unlock()
	for _, rw := range rws {
		rw.Stop()
	}
}

func (a *agent) election(h string, s *fencelock.Session, name string) *fencelock.Election {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := h + "\x00" + name
	if a.elects[k] == nil {
		a.elects[k] = fencelock.NewElection(s, name)
	}
	return a.elects[k]
}

func (a *agent) writeOpts(req map[string]any) ([]fencelock.WriteOption, error) {
	var opts []fencelock.WriteOption
	if _, ok := req["session"]; ok && req["session"] != nil {
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		opts = append(opts, fencelock.WithSession(s))
	}
	if f, ok := req["fence"].([]any); ok && len(f) == 2 {
		opts = append(opts, fencelock.Fence(str(f[0]), num(f[1])))
	}
	if r, ok := req["ifrev"].(float64); ok {
		opts = append(opts, fencelock.IfRev(uint64(r)))
	}
	return opts, nil
}

// txn builds the request's TXN (PROTOCOL.md "txn") with the package's builder.
func (a *agent) txn(req map[string]any) (*fencelock.Txn, error) {
	t := a.c.Txn()
	if req["session"] != nil {
		s, err := a.session(req)
		if err != nil {
			return nil, err
		}
		t = s.Txn()
	}
	cs, _ := req["if"].([]any)
	for _, x := range cs {
		c, _ := x.([]any)
		if len(c) < 2 {
			return nil, fmt.Errorf("a compare is [kind, name, ...]: %v", x)
		}
		kind, name := str(c[0]), str(c[1])
		switch {
		case kind == "exists" && len(c) == 2:
			t.IfExists(name)
		case kind == "missing" && len(c) == 2:
			t.IfMissing(name)
		case kind == "holds" && len(c) == 3:
			t.IfHolds(name, num(c[2]))
		case kind == "rev" && len(c) == 4:
			t.IfRev(name, fencelock.Rel(str(c[2])), num(c[3]))
		case kind == "value" && len(c) == 4:
			t.IfValue(name, fencelock.Rel(str(c[2])), str(c[3]))
		case kind == "token" && len(c) == 4:
			t.IfToken(name, fencelock.Rel(str(c[2])), num(c[3]))
		default:
			return nil, fmt.Errorf("unknown compare %v", x)
		}
	}
	for _, branch := range []string{"then", "else"} {
		ops, _ := req[branch].([]any)
		els := branch == "else"
		for _, x := range ops {
			o, _ := x.([]any)
			if len(o) < 2 {
				return nil, fmt.Errorf("an op is [kind, key, ...]: %v", x)
			}
			kind, key := str(o[0]), str(o[1])
			switch {
			case kind == "put" && len(o) == 3 && !els:
				t.ThenPut(key, str(o[2]))
			case kind == "put" && len(o) == 3:
				t.ElsePut(key, str(o[2]))
			case kind == "del" && len(o) == 2 && !els:
				t.ThenDelete(key)
			case kind == "del" && len(o) == 2:
				t.ElseDelete(key)
			case kind == "incr" && len(o) == 3:
				by, _ := o[2].(float64)
				if els {
					t.ElseIncr(key, int64(by))
				} else {
					t.ThenIncr(key, int64(by))
				}
			default:
				return nil, fmt.Errorf("unknown op %v", x)
			}
		}
	}
	if f, ok := req["fence"].([]any); ok && len(f) == 2 {
		t.Fence(str(f[0]), num(f[1]))
	}
	return t, nil
}

func (a *agent) quit() {
	a.mu.Lock()
	ws := a.watchers
	ss := a.sessions
	a.watchers, a.sessions = map[string]*fencelock.Watcher{}, map[string]*fencelock.Session{}
	a.mu.Unlock()
	for _, w := range ws {
		w.Stop()
	}
	a.wg.Wait()
	for h := range ss {
		a.stopRevokes(h)
	}
	for _, s := range ss {
		if !s.Lost() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			s.Close(ctx)
			cancel()
		}
	}
	a.c.Close()
}

func main() {
	a := &agent{out: bufio.NewWriter(os.Stdout), sessions: map[string]*fencelock.Session{},
		elects: map[string]*fencelock.Election{}, watchers: map[string]*fencelock.Watcher{},
		ended: map[string]chan struct{}{}, revokes: map[string][]*fencelock.RevokeWatch{}}
	opts := fencelock.Options{Endpoints: strings.Split(os.Getenv("FL_ENDPOINTS"), ","),
		Username: os.Getenv("FL_USER"), Password: os.Getenv("FL_PASSWORD")}
	if t, err := strconv.ParseFloat(os.Getenv("FL_TIMEOUT"), 64); err == nil && t > 0 {
		opts.Timeout = time.Duration(t * float64(time.Second))
	}
	var err error
	if ca := os.Getenv("FL_TLS_CA"); ca != "" {
		opts.TLS, err = fencelock.TLSFiles(ca, os.Getenv("FL_TLS_CERT"), os.Getenv("FL_TLS_KEY"))
	}
	if err == nil {
		a.c, err = fencelock.New(opts)
	}
	if err != nil {
		a.emit(map[string]any{"ready": false, "error": "OTHER", "message": err.Error()})
		return
	}
	a.emit(map[string]any{"ready": true, "client": "go", "version": version})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	var reqs sync.WaitGroup
	for in.Scan() {
		var req map[string]any
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintf(os.Stderr, "fencelock-agent: not a JSON object: %v\n", err)
			continue
		}
		id := req["id"]
		if str(req["op"]) == "quit" {
			a.quit()
			reqs.Wait()
			a.emit(map[string]any{"id": id, "ok": true})
			return
		}
		reqs.Add(1)
		go func() {
			defer reqs.Done()
			res, err := a.handle(req)
			if err != nil {
				rep := map[string]any{"id": id, "ok": false, "error": fencelock.Word(err),
					"message": err.Error()}
				var oe *fencelock.TxnOpError
				if errors.As(err, &oe) { // the TXN's failing op, typed (PROTOCOL.md)
					rep["op"] = oe.Op
				}
				a.emit(rep)
				return
			}
			if res == nil {
				res = map[string]any{}
			}
			after, _ := res[afterReply].(func())
			delete(res, afterReply)
			res["id"], res["ok"] = id, true
			a.emit(res)
			if after != nil {
				after()
			}
		}()
	}
	reqs.Wait()
	a.quit()
}
