// SPDX-License-Identifier: Apache-2.0

package fencelock

// Client: one per process is typical; safe for concurrent use. It holds the endpoints, the
// known leader and a pool of connections (pool), and offers the calls that need no session:
// reads (always safe to resend), writes without a session (sent once: ErrOutcomeUnknown when
// the answer is lost), fence checks, an election's leader and its changes, watch. Writes that
// must apply exactly once go through a Session (WithSession).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Options configure a Client. Only Endpoints is required.
type Options struct {
	// Endpoints: client addresses ("host:port") of any members of the cluster; the others are
	// learned from CLUSTER.MEMBERS and from -NOTLEADER redirects.
	Endpoints []string
	// Username and Password are sent as AUTH on every new connection (servers with
	// --acl-file). Username "" sends AUTH password (the user "default").
	Username, Password string
	// TLS: nil for plain text. The server's name checked is each endpoint's host unless
	// TLS.ServerName is set (then every node's certificate must carry that name). See TLSFiles.
	TLS *tls.Config
	// Timeout is each call's deadline when its context has none earlier (default 5 s); a wait
	// (Lock, Acquire, Campaign, Observe) gets its wait plus Timeout.
	Timeout time.Duration
	// MaxWait is the longest wait one LOCK (SEM.ACQUIRE, ELECT.CAMPAIGN) asks the servers
	// for when its context has no deadline: it is asked again after each (default 24 h, the
	// servers' --max-wait default; set it to theirs if it is lower). A wait asked again goes
	// to the back of the queue.
	MaxWait time.Duration
	// ConnectTimeout: a server that does not connect or answer within it is treated as gone
	// (default 1 s).
	ConnectTimeout time.Duration
	// Margin and DriftPPM are what a session's safe deadline keeps back from the TTL the
	// servers granted: Margin plus TTL×DriftPPM/10⁶ (defaults 10 ms and 10000 = 1 %), for the
	// clock rates of two machines. A negative value means none (tests).
	Margin   time.Duration
	DriftPPM int64
}

// TLSFiles builds a *tls.Config from PEM files: caFile the CA certificates that must have
// signed the servers' certificates ("" for the system's); certFile and keyFile a client
// certificate (both "" for none). TLS 1.2 at least.
func TLSFiles(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("fencelock: TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("fencelock: TLS CA %s: no certificate in it", caFile)
		}
		cfg.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("fencelock: TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Client is a connection to a fencelock cluster. Safe for concurrent use.
type Client struct {
	opts Options
	p    *pool
}

// New makes a Client; it connects lazily, on the first call.
func New(opts Options) (*Client, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("fencelock: no endpoints")
	}
	var eps []string
	for _, e := range opts.Endpoints {
		for _, x := range strings.Split(e, ",") {
			if x = strings.TrimSpace(x); x == "" {
				continue
			}
			if _, _, err := splitAddr(x); err != nil {
				return nil, fmt.Errorf("fencelock: endpoint %q: %v", x, err)
			}
			eps = append(eps, x)
		}
	}
	if len(eps) == 0 {
		return nil, errors.New("fencelock: no endpoints")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 24 * time.Hour
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = time.Second
	}
	switch {
	case opts.Margin == 0:
		opts.Margin = 10 * time.Millisecond
	case opts.Margin < 0:
		opts.Margin = 0
	}
	switch {
	case opts.DriftPPM == 0:
		opts.DriftPPM = 10000
	case opts.DriftPPM < 0:
		opts.DriftPPM = 0
	}
	opts.Endpoints = eps
	c := &Client{opts: opts}
	c.p = &pool{opts: &c.opts, tls: opts.TLS, endpoints: append([]string(nil), eps...),
		idle: map[string][]*conn{}}
	return c, nil
}

// Close closes the idle connections. Close the sessions first.
func (c *Client) Close() error {
	c.p.close()
	return nil
}

// LeaderAddress is the leader's client address as last learned, or "".
func (c *Client) LeaderAddress() string { return c.p.knownLeader() }

// deadline of a call made with ctx: now+Timeout, or ctx's deadline if earlier.
func (c *Client) deadline(ctx context.Context) time.Time {
	d := time.Now().Add(c.opts.Timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		return cd
	}
	return d
}

func (c *Client) do(ctx context.Context, cm *cmd) (any, error) {
	stop, cause := ctxStop(ctx)
	return c.p.call(cm, c.deadline(ctx), stop, cause)
}

// Do sends any command with redirects followed and returns the raw reply (string, int64,
// []any, or nil). It is treated as a read: resent after a lost answer. Use it for reads
// this package has no method for (LOCK.INFO, KEYS, SESSION.INFO, ...).
func (c *Client) Do(ctx context.Context, args ...string) (any, error) {
	return c.do(ctx, newCmd(args...))
}

// KV is a key's value with its revisions (KV.GET).
type KV struct {
	Value     string
	CreateRev uint64
	ModRev    uint64
	Version   uint64
	Lease     uint64 // the session the key is attached to, 0 for none
}

// Get reads a key (linearizable). ErrNotFound if it does not exist.
func (c *Client) Get(ctx context.Context, key string) (*KV, error) {
	r, err := c.do(ctx, newCmd("KV.GET", key))
	if err != nil {
		return nil, err
	}
	m, err := asMap(r)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, ErrNotFound
	}
	return &KV{Value: asString(m["value"]), CreateRev: fieldUint(m, "create_rev"),
		ModRev: fieldUint(m, "mod_rev"), Version: fieldUint(m, "version"),
		Lease: fieldUint(m, "lease")}, nil
}

// WriteOption conditions a Put or Delete.
type WriteOption func(*writeOpts)

type writeOpts struct {
	fenceName  string
	fenceToken uint64
	fenced     bool
	ifrev      uint64
	useIfrev   bool
	session    *Session
	lease      bool
}

// Fence applies the write only while token is the current holder's token of the lock
// (permit's, election leader's) name; ErrStale otherwise, and nothing changes.
func Fence(name string, token uint64) WriteOption {
	return func(o *writeOpts) { o.fenceName, o.fenceToken, o.fenced = name, token, true }
}

// IfRev applies the write only if the key's mod revision is rev (0: only if the key does not
// exist); ErrIfRev otherwise.
func IfRev(rev uint64) WriteOption {
	return func(o *writeOpts) { o.ifrev, o.useIfrev = rev, true }
}

// WithSession sends the write through s: it carries REQ sid seq and is resent until its
// outcome is known, applying once. Without it a write is sent once, and a lost answer is
// ErrOutcomeUnknown.
func WithSession(s *Session) WriteOption { return func(o *writeOpts) { o.session = s } }

// Lease attaches the key to s (deleted when the session ends); implies WithSession(s).
func Lease(s *Session) WriteOption {
	return func(o *writeOpts) { o.session, o.lease = s, true }
}

// Put sets key to value and returns the new revision.
func (c *Client) Put(ctx context.Context, key, value string, opts ...WriteOption) (uint64, error) {
	var o writeOpts
	for _, f := range opts {
		f(&o)
	}
	cm := newCmd("PUT", key, value)
	if o.lease {
		cm.add("LEASE", u64(o.session.sid))
	}
	r, err := c.write(ctx, cm, &o)
	if err != nil {
		return 0, err
	}
	return asUint(r)
}

// Delete deletes key; true if it existed.
func (c *Client) Delete(ctx context.Context, key string, opts ...WriteOption) (bool, error) {
	var o writeOpts
	for _, f := range opts {
		f(&o)
	}
	r, err := c.write(ctx, newCmd("DEL", key), &o)
	if err != nil {
		return false, err
	}
	n, err := asUint(r)
	return n == 1, err
}

// Incr adds by to the counter key (INCR key BY by) and returns its new value: the key holds
// the decimal text of a signed 64-bit integer, an absent key counts as 0. Linearizable;
// fenced and conditional as Put (Lease is ignored: the key keeps its lease). WithSession
// makes it exactly once. A value that is not such an integer, or a sum that overflows, is a
// *ServerError (word ERR) and changes nothing.
func (c *Client) Incr(ctx context.Context, key string, by int64, opts ...WriteOption) (int64, error) {
	var o writeOpts
	for _, f := range opts {
		f(&o)
	}
	r, err := c.write(ctx, newCmd("INCR", key, "BY", strconv.FormatInt(by, 10)), &o)
	if err != nil {
		return 0, err
	}
	return asInt(r)
}

func (c *Client) write(ctx context.Context, cm *cmd, o *writeOpts) (any, error) {
	if o.fenced {
		cm.add("FENCE", o.fenceName, u64(o.fenceToken))
	}
	if o.useIfrev {
		cm.add("IFREV", u64(o.ifrev))
	}
	cm.write = true
	if o.session != nil {
		return o.session.mutate(ctx, cm)
	}
	cm.retry = false
	return c.do(ctx, cm)
}

// FenceCheck is nil while token is a current holder's (permit's, leader's) token of name,
// ErrStale otherwise.
func (c *Client) FenceCheck(ctx context.Context, name string, token uint64) error {
	_, err := c.do(ctx, newCmd("FENCE.CHECK", name, u64(token)))
	return err
}

// LeaderInfo is an election's state: Sid 0 when nobody leads.
type LeaderInfo struct {
	Sid      uint64
	Token    uint64
	Value    string
	SinceRev uint64
	Rev      uint64 // the revision of this state's change: pass it to Observe as afterRev
}

func leaderInfo(r any) (*LeaderInfo, error) {
	m, err := asMap(r)
	if err != nil || m == nil {
		return nil, err
	}
	return &LeaderInfo{Sid: fieldUint(m, "sid"), Token: fieldUint(m, "token"),
		Value: asString(m["value"]), SinceRev: fieldUint(m, "since_rev"),
		Rev: fieldUint(m, "rev")}, nil
}

// Leader reads an election's leader; ErrNotFound if nobody leads.
func (c *Client) Leader(ctx context.Context, name string) (*LeaderInfo, error) {
	r, err := c.do(ctx, newCmd("ELECT.LEADER", name))
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, ErrNotFound
	}
	return leaderInfo(r)
}

// ObserveOnce waits up to wait for the first change of the election after afterRev (0: the
// current state at once) and returns the state right after it (Sid 0: nobody leads);
// ErrTimeout when nothing changed within wait. Pass each answer's Rev back: every change
// comes one by one, in order, across fail-overs.
func (c *Client) ObserveOnce(ctx context.Context, name string, afterRev uint64, wait time.Duration) (*LeaderInfo, error) {
	cm := newCmd("ELECT.OBSERVE", name)
	if afterRev > 0 {
		cm.add("AFTER", u64(afterRev))
	}
	end := time.Now().Add(wait)
	cm.wait(end)
	stop, cause := ctxStop(ctx)
	r, err := c.p.call(cm, end.Add(c.opts.Timeout), stop, cause)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, ErrTimeout
	}
	return leaderInfo(r)
}

// Observe sends every change of the election on the returned channel, in order, until ctx
// is done (then the channel is closed); the current state first. Like etcd's
// Election.Observe.
func (c *Client) Observe(ctx context.Context, name string) <-chan LeaderInfo {
	ch := make(chan LeaderInfo)
	go func() {
		defer close(ch)
		var after uint64
		for ctx.Err() == nil {
			li, err := c.ObserveOnce(ctx, name, after, 10*time.Second)
			if err != nil {
				if !errors.Is(err, ErrTimeout) {
					pause(backoffMax, func() bool { return ctx.Err() != nil })
				}
				continue
			}
			after = li.Rev
			select {
			case ch <- *li:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}
