// SPDX-License-Identifier: Apache-2.0

// redsync.go — driver "redsync": Redlock through github.com/go-redsync/redsync/v4 on go-redis
// v9, against the benchmark's five independent Redis servers (bench/servers/redlock.sh).
//
// Owns, per bench client: five go-redis clients (one per server, each with go-redis's own
// connection pool and defaults), one redsync.Redsync over them, and the redsync.Mutex of each
// lock it holds.
//
// Recipe: redsync as its README shows it, with its defaults but two: the expiry is the
// benchmark's TTL (--ttl, as the other drivers' keys and leases), and the wait is bounded by a
// context of waitMS (5 s) as every driver's is. redsync's defaults otherwise: 32 tries, a random
// 50-250 ms delay between tries (it polls: no waiter is woken by a release), a quorum of 3 of 5,
// 1 % clock drift, each try's per-server timeout 5 % of the expiry. A wait of 0 is one try.
// No fencing token (Redlock has none). Release: Mutex.Unlock (the compare-and-delete script on
// all five); fewer than a quorum deleted is an error.
//
// Errors: "taken" at the end of the tries (ErrFailed, ErrTaken, ErrNodeTaken) or the wait's end
// is errTimeout; anything else (servers unreachable, no quorum) is returned.
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

// go-redis logs every failed dial of its pools (W8 kills a server: thousands of lines); the
// errors that matter come back to the driver through redsync's return values.
type quietLog struct{}

func (quietLog) Printf(context.Context, string, ...any) {}

func init() { goredislib.SetLogger(quietLog{}) }

type redsyncClient struct {
	rdb    []*goredislib.Client
	rs     *redsync.Redsync
	expiry time.Duration
	held   map[string]*redsync.Mutex
}

func newRedsyncClient(o *opts, id int) (client, error) {
	c := &redsyncClient{expiry: time.Duration(o.ttlMS) * time.Millisecond,
		held: map[string]*redsync.Mutex{}}
	var pools []redsyncredis.Pool
	for _, ep := range strings.Split(o.endpoints, ",") {
		r := goredislib.NewClient(&goredislib.Options{Addr: ep})
		c.rdb = append(c.rdb, r)
		pools = append(pools, goredis.NewPool(r))
	}
	// Every server answers, or the client is not made (a server down is W8's business, later).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, r := range c.rdb {
		if err := r.Ping(ctx).Err(); err != nil {
			c.close()
			return nil, fmt.Errorf("redis server %d: %w", i, err)
		}
	}
	c.rs = redsync.New(pools...)
	return c, nil
}

func (c *redsyncClient) acquire(name string, wait time.Duration) error {
	opts := []redsync.Option{redsync.WithExpiry(c.expiry)}
	if wait == 0 {
		opts = append(opts, redsync.WithTries(1))
		wait = 5 * time.Second
	}
	m := c.rs.NewMutex(name, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := m.LockContext(ctx)
	if err == nil {
		c.held[name] = m
		return nil
	}
	var taken *redsync.ErrTaken
	var nodeTaken *redsync.ErrNodeTaken
	if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) || errors.As(err, &nodeTaken) ||
		ctx.Err() != nil {
		return errTimeout
	}
	return err
}

func (c *redsyncClient) release(name string) error {
	m := c.held[name]
	if m == nil {
		return fmt.Errorf("release of %s: not held", name)
	}
	delete(c.held, name)
	ok, err := m.Unlock()
	if !ok {
		if err == nil {
			err = errors.New("no quorum")
		}
		return fmt.Errorf("unlock %s: %w", name, err)
	}
	return nil
}

func (c *redsyncClient) close() {
	for _, r := range c.rdb {
		r.Close()
	}
}
