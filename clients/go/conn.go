// SPDX-License-Identifier: Apache-2.0

package fencelock

// The call path: endpoints, the known leader, a pool of connections per address, redirects,
// reconnects and retries. The rules are libfencelock's (docs/client.md "Fail-over, retries
// and exactly-once"):
//
//   - a call has a deadline; within it -NOTLEADER is followed, -NOLEADER waited out, other
//     endpoints tried, with a short backoff once every try failed in a row;
//   - a command marked retry (reads, and writes that carry REQ sid seq) is resent after a lost
//     answer or -UNKNOWN: the servers answer a repeated (sid, seq) from their cache;
//   - a write not marked retry (no session) is sent once: a lost answer or -UNKNOWN is
//     ErrOutcomeUnknown;
//   - a write marked retry whose outcome was never learned by the deadline is
//     ErrOutcomeUnknown too, never ErrUnavailable (it may have applied);
//   - a server that does not answer within ConnectTimeout (plus the time the command may
//     legitimately block) is treated as gone: a SIGSTOPped leader accepts connections but
//     never answers; a blocked wait is abandoned as soon as another goroutine learns of a
//     different leader.
//
// Concurrency: the pool and the leader are guarded by pool.mu; a connection is used by one
// goroutine at a time (taken out of the pool for a call, put back after a complete reply, and
// closed instead after any error that may have left a reply half read).

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	backoffMin = 10 * time.Millisecond
	backoffMax = 200 * time.Millisecond // Observe's pause after an error
	// the longest pause between a call's rounds over the endpoints; short, so that a call
	// reaches a follower waiting for the new leader soon after the dead one is given up
	// (docs/client.md), ~20 rounds a second
	retryMax       = 50 * time.Millisecond
	waitSlice      = 100 * time.Millisecond // how often a waiting read checks for a moved leader
	quickRedirects = 3                      // redirects followed without a pause
	poolMax        = 16                     // idle connections kept per address
)

// cmd is one command to send. A command with a WAIT (LOCK, SEM.ACQUIRE, ELECT.CAMPAIGN,
// ELECT.OBSERVE) asks, on every resend, for the wait that is left, never the whole wait again.
type cmd struct {
	argv     []string
	waitIdx  int       // index of the WAIT argument's value, or -1
	waitEnd  time.Time // end of the wait (monotonic)
	blockEnd time.Time // end of a server-side block (XREAD BLOCK); zero: none
	write    bool      // it may change state: a lost answer leaves its outcome unknown
	retry    bool      // it may be resent (reads; writes carrying REQ sid seq)
	anyNode  bool      // any node answers it (not a sign of leadership)
}

func newCmd(args ...string) *cmd { return &cmd{argv: args, waitIdx: -1, retry: true} }

func (c *cmd) add(args ...string) *cmd { c.argv = append(c.argv, args...); return c }

// wait appends WAIT for a wait that ends at end.
func (c *cmd) wait(end time.Time) *cmd {
	c.argv = append(c.argv, "WAIT", "1")
	c.waitIdx = len(c.argv) - 1
	c.waitEnd = end
	return c
}

// render fills in the wait that is left; block is how long the server may hold the reply.
func (c *cmd) render(now time.Time) (argv []string, block time.Duration) {
	if c.waitIdx >= 0 {
		left := c.waitEnd.Sub(now)
		c.argv[c.waitIdx] = strconv.FormatInt(max(1, left.Milliseconds()), 10)
		return c.argv, max(0, left)
	}
	if !c.blockEnd.IsZero() {
		return c.argv, max(0, c.blockEnd.Sub(now))
	}
	return c.argv, 0
}

func u64(n uint64) string { return strconv.FormatUint(n, 10) }

type conn struct {
	nc   net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	addr string
}

func (c *conn) close() { c.nc.Close() }

// errLost: the connection failed after the command was (maybe) sent.
type errLost struct{ why string }

func (e *errLost) Error() string { return e.why }

type pool struct {
	opts      *Options
	tls       *tls.Config
	mu        sync.Mutex
	endpoints []string
	leader    string
	next      int
	idle      map[string][]*conn
	learned   bool
	closed    bool
}

func (p *pool) pick() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader != "" {
		return p.leader
	}
	a := p.endpoints[p.next%len(p.endpoints)]
	p.next++
	return a
}

func (p *pool) addEndpoint(a string) {
	for _, e := range p.endpoints {
		if e == a {
			return
		}
	}
	p.endpoints = append(p.endpoints, a)
}

func (p *pool) setLeader(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, _, err := splitAddr(addr); err != nil {
		p.leader = ""
		return
	}
	p.leader = addr
	p.addEndpoint(addr)
}

func (p *pool) leaderFailed(addr string) {
	p.mu.Lock()
	if p.leader == addr {
		p.leader = ""
	}
	p.mu.Unlock()
}

func (p *pool) leaderMoved(addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader != "" && p.leader != addr
}

func (p *pool) knownLeader() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader
}

// splitAddr splits "host:port" or "[v6]:port".
func splitAddr(a string) (string, int, error) {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || host == "" {
		return "", 0, fmt.Errorf("not a host:port: %q", a)
	}
	return host, n, nil
}

// dial opens a connection within budget and authenticates it (AUTH on every new connection).
// The AUTH may take long (the server hashes the password and delays a wrong one), so it is
// bounded by the call's deadline instead.
func (p *pool) dial(addr string, budget time.Duration, deadline time.Time) (*conn, error) {
	d := net.Dialer{Timeout: budget}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if p.tls != nil {
		cfg := p.tls.Clone()
		if cfg.ServerName == "" {
			host, _, _ := splitAddr(addr)
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		tc.SetDeadline(time.Now().Add(budget))
		if err := tc.Handshake(); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	c := &conn{nc: nc, r: bufio.NewReaderSize(nc, 32<<10), w: bufio.NewWriter(nc), addr: addr}
	if p.opts.Password != "" || p.opts.Username != "" {
		argv := []string{"AUTH", p.opts.Password}
		if p.opts.Username != "" {
			argv = []string{"AUTH", p.opts.Username, p.opts.Password}
		}
		nc.SetDeadline(later(time.Now().Add(budget), deadline))
		if err := writeCommand(c.w, argv); err != nil {
			c.close()
			return nil, err
		}
		r, err := readReply(c.r)
		if err != nil {
			c.close()
			return nil, err
		}
		if e, ok := r.(respError); ok {
			c.close()
			se := serverError(string(e))
			if se.Word == "TRYAGAIN" { // too many AUTHs being verified: retried after a pause
				return nil, errors.New(se.Message)
			}
			return nil, se // -WRONGPASS: final
		}
	}
	nc.SetDeadline(time.Time{})
	return c, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// alive: an idle connection that became readable is dead (nothing comes unasked).
func alive(c *conn) bool {
	c.nc.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err := c.r.Peek(1)
	c.nc.SetReadDeadline(time.Time{})
	var ne net.Error
	return err != nil && errors.As(err, &ne) && ne.Timeout()
}

// get returns a pooled connection to addr or a new one (fresh true).
func (p *pool) get(addr string, deadline time.Time) (*conn, bool, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, false, ErrClientClosed
		}
		lst := p.idle[addr]
		var c *conn
		if n := len(lst); n > 0 {
			c = lst[n-1]
			p.idle[addr] = lst[:n-1]
		}
		p.mu.Unlock()
		if c == nil {
			break
		}
		if alive(c) {
			return c, false, nil
		}
		c.close()
	}
	budget := min(p.opts.ConnectTimeout, time.Until(deadline))
	if budget <= 0 {
		budget = time.Millisecond
	}
	c, err := p.dial(addr, budget, deadline)
	return c, err == nil, err
}

func (p *pool) put(c *conn) {
	p.mu.Lock()
	if !p.closed && len(p.idle[c.addr]) < poolMax {
		p.idle[c.addr] = append(p.idle[c.addr], c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	c.close()
}

func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = map[string][]*conn{}
	p.mu.Unlock()
	for _, l := range idle {
		for _, c := range l {
			c.close()
		}
	}
}

// await reads the reply to what was sent on c, waiting in slices: abandoned when until passes,
// when stop says so, or (abandonOnMove) when another goroutine learned of a leader other than
// c's address.
func (p *pool) await(c *conn, until time.Time, stop func() bool, abandonOnMove bool) (any, error) {
	for {
		left := time.Until(until)
		if left <= 0 {
			return nil, &errLost{"no reply in time"}
		}
		c.nc.SetReadDeadline(time.Now().Add(min(left, waitSlice)))
		_, err := c.r.Peek(1)
		if err == nil {
			c.nc.SetReadDeadline(until)
			r, err := readReply(c.r)
			c.nc.SetReadDeadline(time.Time{})
			return r, err
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return nil, err
		}
		if abandonOnMove && p.leaderMoved(c.addr) {
			return nil, &errLost{"abandoned: the leader moved"}
		}
		if stop() {
			return nil, &errLost{"cancelled"}
		}
	}
}

// learnMembers learns the members' client addresses once (best effort), so that losing
// every given endpoint but one still leaves the others reachable. false: c is unusable.
func (p *pool) learnMembers(c *conn, until time.Time) bool {
	p.mu.Lock()
	if p.learned {
		p.mu.Unlock()
		return true
	}
	p.learned = true
	p.mu.Unlock()
	c.nc.SetWriteDeadline(until)
	err := writeCommand(c.w, []string{"CLUSTER.MEMBERS"})
	c.nc.SetWriteDeadline(time.Time{})
	var r any
	if err == nil {
		r, err = p.await(c, until, func() bool { return false }, false)
	}
	if err != nil {
		p.mu.Lock()
		p.learned = false
		p.mu.Unlock()
		return false
	}
	if _, ok := r.(respError); ok { // -NOAUTH, -NOPERM: the command itself will say so
		p.mu.Lock()
		p.learned = false
		p.mu.Unlock()
		return true
	}
	ms, _ := r.([]any)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range ms {
		mm, err := asMap(m)
		if err != nil {
			continue
		}
		if a := asString(mm["client_address"]); a != "" {
			if _, _, err := splitAddr(a); err == nil {
				p.addEndpoint(a)
			}
		}
	}
	return true
}

// attemptState carries what a call learned across its tries.
type attemptState struct {
	why     string
	cause   error
	unknown bool // a write was sent and its outcome never learned (or -UNKNOWN)
}

// attempt is one try against one address. done: the reply (or a final error) is in.
func (p *pool) attempt(c *cmd, deadline time.Time, stop func() bool, st *attemptState) (reply any, done bool, err error) {
	addr := p.pick()
	cn, fresh, err := p.get(addr, deadline)
	if err != nil {
		var se *ServerError
		if errors.As(err, &se) {
			return nil, true, se // -WRONGPASS: retrying cannot help
		}
		if err == ErrClientClosed {
			return nil, true, err
		}
		p.leaderFailed(addr)
		// A certificate refused is the reason the call fails even when a later try only
		// times out (its handshake cut by the call's deadline on a loaded machine): once
		// seen, it stays the cause the caller gets (ErrTLS), unless another TLS error follows.
		if !isTLSError(st.cause) || isTLSError(err) {
			st.why, st.cause = fmt.Sprintf("connect %s: %v", addr, err), err
		}
		return nil, false, nil // nothing was sent
	}
	if fresh && !p.learnMembers(cn, earlier(deadline, time.Now().Add(p.opts.ConnectTimeout))) {
		cn.close()
		p.leaderFailed(addr)
		st.why, st.cause = addr+": CLUSTER.MEMBERS failed", nil
		return nil, false, nil
	}
	now := time.Now()
	argv, block := c.render(now)
	until := earlier(deadline, now.Add(p.opts.ConnectTimeout+block))
	cn.nc.SetWriteDeadline(until)
	err = writeCommand(cn.w, argv)
	cn.nc.SetWriteDeadline(time.Time{})
	if err == nil {
		reply, err = p.await(cn, until, stop, c.retry)
	}
	if err != nil {
		cn.close()
		p.leaderFailed(addr)
		st.why, st.cause = fmt.Sprintf("%s: %v", addr, err), err
		if errors.Is(err, errProto) {
			return nil, true, fmt.Errorf("%w: %s: %v", ErrProtocol, addr, err)
		}
		if c.write {
			if !c.retry {
				return nil, true, &callError{kind: ErrOutcomeUnknown, cause: err,
					why: fmt.Sprintf("%s: no answer to %s: %v", addr, argv[0], err)}
			}
			st.unknown = true
		}
		return nil, false, nil
	}
	p.put(cn)
	if e, ok := reply.(respError); ok {
		return p.onError(addr, string(e), c, st)
	}
	if !c.anyNode {
		p.setLeader(addr) // it answered a leader-only command
	}
	return reply, true, nil
}

func (p *pool) onError(addr, text string, c *cmd, st *attemptState) (any, bool, error) {
	se := serverError(text)
	switch se.Word {
	case "NOTLEADER":
		p.setLeader(strings.TrimSpace(strings.TrimPrefix(text, "NOTLEADER")))
		st.why = addr + ": " + text
		return nil, false, nil
	case "NOLEADER":
		p.leaderFailed(addr)
		st.why = addr + ": " + text
		return nil, false, nil
	case "UNKNOWN":
		st.why, st.cause = addr+": "+text, nil
		if !c.retry {
			return nil, true, &callError{kind: ErrOutcomeUnknown, cause: se, why: text}
		}
		st.unknown = true
		return nil, false, nil
	}
	return nil, true, se
}

// call sends c until a reply by deadline. stop (checked between tries and while waiting)
// abandons the call; cause is what the caller reports then.
func (p *pool) call(c *cmd, deadline time.Time, stop func() bool, cause func() error) (any, error) {
	backoff := backoffMin
	quick := 0
	st := &attemptState{}
	for {
		if stop() {
			return nil, p.giveUp(c, st, cause(), "cancelled")
		}
		if !time.Now().Before(deadline) {
			return nil, p.giveUp(c, st, st.cause, "deadline passed")
		}
		hadLeader := p.knownLeader() != ""
		r, done, err := p.attempt(c, deadline, stop, st)
		if done {
			return r, err
		}
		if !hadLeader && p.knownLeader() != "" && quick < quickRedirects {
			quick++
			continue
		}
		pause(min(backoff, time.Until(deadline)), stop)
		backoff = min(backoff*2, retryMax)
	}
}

func (p *pool) giveUp(c *cmd, st *attemptState, cause error, what string) error {
	why := what
	if st.why != "" {
		why += "; last: " + st.why
	}
	kind := ErrUnavailable
	if st.unknown {
		kind = ErrOutcomeUnknown
	}
	return &callError{kind: kind, cause: cause, why: why}
}

func isTLSError(err error) bool {
	if err == nil {
		return false
	}
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var cv *tls.CertificateVerificationError
	var ae tls.AlertError
	var rh tls.RecordHeaderError
	return errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) ||
		errors.As(err, &cv) || errors.As(err, &ae) || errors.As(err, &rh)
}

// ctxStop: a call that ends when ctx is done.
func ctxStop(ctx context.Context) (func() bool, func() error) {
	return func() bool { return ctx.Err() != nil }, func() error { return context.Cause(ctx) }
}

// pause sleeps d, in slices so that stop cuts it short.
func pause(d time.Duration, stop func() bool) {
	end := time.Now().Add(d)
	for left := d; left > 0 && !stop(); left = time.Until(end) {
		time.Sleep(min(left, waitSlice/4))
	}
}
