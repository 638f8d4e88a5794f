// SPDX-License-Identifier: Apache-2.0

// Inventory service with fencing, on the Go client (clients/go).
//
// The story: a worker ("zombie") takes the inventory lock and then freezes (think of a long GC
// pause): its session stops renewing. Its lease runs out, our worker is granted the lock, sells
// one item with a fenced write, and the zombie, waking up, writes with its old token: the
// server refuses it (fencelock.ErrStale). That refusal is what fencing is for.
//
//	cd examples/go && go run . [host:port,...]
//
// The endpoints are the first argument, else $FENCELOCK_ENDPOINTS, else 127.0.0.1:7480. Any
// node will do: the client follows -NOTLEADER. Exits 0 if everything behaved as fencelock
// promises, 1 otherwise.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	fencelock "github.com/fencelock/fencelock-go"
)

// unexpected is something fencelock should not have done: the example fails.
type unexpected struct{ msg string }

func (u unexpected) Error() string { return u.msg }

func fail(format string, args ...any) error { return unexpected{fmt.Sprintf(format, args...)} }

func main() {
	endpoints := ""
	if len(os.Args) > 1 {
		endpoints = os.Args[1]
	}
	endpoints = cmp.Or(endpoints, strings.TrimSpace(os.Getenv("FENCELOCK_ENDPOINTS")), "127.0.0.1:7480")
	if err := run(context.Background(), strings.Split(endpoints, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "inventory: unexpected:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, endpoints []string) error {
	c, err := fencelock.New(fencelock.Options{Endpoints: endpoints})
	if err != nil {
		return err
	}
	defer c.Close()

	// The zombie: a 1 s lease whose keepalives stop at once, so it runs out while "frozen".
	zombie, err := c.NewSession(ctx, time.Second, fencelock.WithName("zombie"))
	if err != nil {
		return err
	}
	zombieToken, _, err := zombie.TryLock(ctx, "inventory")
	if errors.Is(err, fencelock.ErrBusy) {
		_ = zombie.Close(ctx)
		return fail("the inventory lock is already taken; is another example running?")
	} else if err != nil {
		return err
	}
	zombie.Abandon()
	fmt.Printf("zombie: session %d holds inventory with token %d, then freezes\n", zombie.ID(), zombieToken)

	ttl := 2 * time.Second
	me, err := c.NewSession(ctx, ttl, fencelock.WithName("inventory-worker"))
	if err != nil {
		return err
	}
	fmt.Printf("worker: session %d (ttl %d ms) on %s\n", me.ID(), ttl.Milliseconds(), c.LeaderAddress())
	if err := sell(ctx, c, me, zombieToken); err != nil {
		_ = me.Close(ctx)
		return err
	}
	if err := me.Close(ctx); err != nil {
		return err
	}
	fmt.Printf("worker: unlocked and closed session %d\n", me.ID())
	return nil
}

// sell takes the lock (queued behind the zombie, FIFO), sells one item with a fenced write and
// shows the zombie's late write refused.
func sell(ctx context.Context, c *fencelock.Client, me *fencelock.Session, zombieToken uint64) error {
	t0 := time.Now()
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	token, held, err := me.Lock(wait, "inventory") // held: cancelled once the lease can't be trusted
	if err != nil {
		return err
	}
	defer func() { _ = me.Unlock(ctx, "inventory") }()
	if token <= zombieToken {
		return fail("token %d does not exceed the zombie's %d", token, zombieToken)
	}
	fmt.Printf("worker: got inventory after %.1f s, fencing token %d\n", time.Since(t0).Seconds(), token)
	stock := 100 // first run: start with 100 items
	if kv, err := c.Get(held, "stock"); err == nil {
		if stock, err = strconv.Atoi(kv.Value); err != nil {
			return err
		}
	} else if !errors.Is(err, fencelock.ErrNotFound) {
		return err
	}
	fmt.Printf("worker: stock is %d\n", stock)
	if held.Err() != nil {
		return fail("our lease may be gone: not acting (%v)", context.Cause(held))
	}
	// Accepted only while our token is the current holder's; exactly once (REQ).
	rev, err := c.Put(held, "stock", strconv.Itoa(stock-1),
		fencelock.Fence("inventory", token), fencelock.WithSession(me))
	if err != nil {
		return err
	}
	fmt.Printf("worker: sold one, stock %d written at revision %d\n", stock-1, rev)

	// The zombie wakes up and writes what it computed before freezing.
	_, err = c.Put(ctx, "stock", "0", fencelock.Fence("inventory", zombieToken))
	var refused *fencelock.ServerError
	if !errors.Is(err, fencelock.ErrStale) || !errors.As(err, &refused) {
		return fail("the zombie's write with stale token %d was not refused STALE: %v", zombieToken, err)
	}
	fmt.Printf("zombie: write with token %d refused: -%s\n", zombieToken, refused.Message)
	if kv, err := c.Get(ctx, "stock"); err != nil || kv.Value != strconv.Itoa(stock-1) {
		return fail("the stock changed after a refused write (%v)", err)
	}
	return nil
}
