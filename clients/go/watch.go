// SPDX-License-Identifier: Apache-2.0

package fencelock

// Watch: the event stream (docs/protocol.md "Watch"), read with XREAD on the leader by a
// goroutine of the Watcher's own. Each event is delivered once, in id order: every read asks
// for the entries after the last id delivered, so a read resent to a new leader after a
// fail-over or a lost connection picks up exactly there, and a Watch from w.Last() resumes
// another's stream on any node. "From now" is turned into the newest id once, before the
// first read, because resending "$" after a lost answer would skip what happened meanwhile.
// When the events after the needed id are gone the watcher ends with a *CompactedError
// (ErrCompacted): never a silent gap, and never back.

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	watchStream = "fencelock:events"
	watchCount  = 1000
	watchBlock  = 500 * time.Millisecond
)

// Event is one entry of the stream: ID "<rev>-<n>", Type (put, del, grant, release, expire,
// leader, session-end, ...), Name ("" for session events), and every field as sent.
type Event struct {
	ID     string
	Type   string
	Name   string
	Fields map[string]string
}

// Rev is the revision part of the event's id.
func (e Event) Rev() uint64 {
	r, _, _ := strings.Cut(e.ID, "-")
	n, _ := strconv.ParseUint(r, 10, 64)
	return n
}

// Watcher delivers the events of a prefix on Events() until Stop, or until an error a retry
// cannot mend (Err then says which).
type Watcher struct {
	c      *Client
	stream string
	ch     chan Event
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once

	mu   sync.Mutex
	last string
	err  error
}

// Watch starts a watcher of the keys and locks whose name starts with prefix ("" for every
// event, session events included), after the id from ("" or "$": from now). The stream's
// newest id is read before Watch returns, so every event after that is delivered.
func (c *Client) Watch(ctx context.Context, prefix, from string) (*Watcher, error) {
	w := &Watcher{c: c, stream: watchStream, ch: make(chan Event), stop: make(chan struct{}),
		done: make(chan struct{}), last: from}
	if prefix != "" {
		w.stream += ":" + prefix
	}
	if from == "" || from == "$" {
		r, err := c.do(ctx, newCmd("XINFO", "STREAM", w.stream))
		if err != nil {
			return nil, err
		}
		m, err := asMap(r)
		if err != nil {
			return nil, err
		}
		w.last = asString(m["last-generated-id"])
		if w.last == "" {
			w.last = "0-0"
		}
	}
	go w.run()
	return w, nil
}

// Events delivers the events in order; it is closed when the watcher ends.
func (w *Watcher) Events() <-chan Event { return w.ch }

// Last is the id of the last event delivered (or the starting id).
func (w *Watcher) Last() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// Err is why the watcher ended by itself (*CompactedError, ErrAuth, ErrPerm, ...); nil while
// it runs and after Stop.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop ends the watcher (a read in progress is abandoned within about 0.1 s) and returns the
// last id delivered: resume later with Watch(ctx, prefix, last).
func (w *Watcher) Stop() string {
	w.once.Do(func() { close(w.stop) })
	<-w.done
	return w.Last()
}

func (w *Watcher) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

var oldestRe = regexp.MustCompile(`oldest=([0-9]+-[0-9]+)`)

// idBefore is the id just before id ("41-0" → "40-18446744073709551615", "41-3" → "41-2").
func idBefore(id string) string {
	r, n, _ := strings.Cut(id, "-")
	rev, err1 := strconv.ParseUint(r, 10, 64)
	seq, err2 := strconv.ParseUint(n, 10, 64)
	if err1 != nil || err2 != nil {
		return ""
	}
	if seq > 0 {
		return fmt.Sprintf("%d-%d", rev, seq-1)
	}
	if rev == 0 {
		return "0-0"
	}
	return fmt.Sprintf("%d-%d", rev-1, uint64(1<<64-1))
}

func (w *Watcher) run() {
	defer close(w.done)
	defer close(w.ch)
	stop := func() bool { return w.stopped() }
	for !w.stopped() {
		last := w.Last()
		cm := newCmd("XREAD", "COUNT", strconv.Itoa(watchCount), "BLOCK",
			strconv.FormatInt(watchBlock.Milliseconds(), 10), "STREAMS", w.stream, last)
		cm.blockEnd = time.Now().Add(watchBlock)
		r, err := w.c.p.call(cm, cm.blockEnd.Add(w.c.opts.Timeout), stop, func() error { return nil })
		if err != nil {
			var se *ServerError
			if errors.As(err, &se) && se.Word == "SLOWREADER" {
				continue // the server closes the connection: read on from the last id
			}
			if errors.As(err, &se) {
				if se.Word == "COMPACTED" {
					m := oldestRe.FindStringSubmatch(se.Message)
					ce := &CompactedError{Text: se.Message}
					if m != nil {
						ce.Oldest, ce.After = m[1], idBefore(m[1])
					}
					err = ce
				}
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				return
			}
			if errors.Is(err, ErrProtocol) {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				return
			}
			continue // unreachable, cancelled: retried from the last id until Stop
		}
		evs, err := parseXread(r)
		if err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		}
		for _, ev := range evs {
			select {
			case w.ch <- ev:
				w.mu.Lock()
				w.last = ev.ID
				w.mu.Unlock()
			case <-w.stop:
				return
			}
		}
	}
}

// parseXread reads XREAD's RESP2 reply: [[stream, [[id, [field, value, ...]], ...]]].
func parseXread(r any) ([]Event, error) {
	if r == nil {
		return nil, nil
	}
	streams, ok := r.([]any)
	if !ok || len(streams) == 0 {
		return nil, fmt.Errorf("%w: XREAD reply %T", ErrProtocol, r)
	}
	pair, ok := streams[0].([]any)
	if !ok || len(pair) != 2 {
		return nil, fmt.Errorf("%w: XREAD stream entry", ErrProtocol)
	}
	entries, ok := pair[1].([]any)
	if !ok {
		return nil, fmt.Errorf("%w: XREAD entries", ErrProtocol)
	}
	out := make([]Event, 0, len(entries))
	for _, e := range entries {
		ent, ok := e.([]any)
		if !ok || len(ent) != 2 {
			return nil, fmt.Errorf("%w: XREAD entry", ErrProtocol)
		}
		id, ok := ent[0].(string)
		kv, ok2 := ent[1].([]any)
		if !ok || !ok2 || len(kv)%2 != 0 {
			return nil, fmt.Errorf("%w: XREAD entry fields", ErrProtocol)
		}
		f := make(map[string]string, len(kv)/2)
		for i := 0; i < len(kv); i += 2 {
			f[asString(kv[i])] = asString(kv[i+1])
		}
		out = append(out, Event{ID: id, Type: f["type"], Name: f["name"], Fields: f})
	}
	return out, nil
}
