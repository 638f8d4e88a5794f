// SPDX-License-Identifier: Apache-2.0

package fencelock_test

// Examples for the package documentation (compiled, not run: they need a cluster).

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	fencelock "github.com/fencelock/fencelock-go"
)

// Work under a lock until it is done or the lease can no longer be trusted; fence every
// write with the token.
func ExampleSession_Lock() {
	c, err := fencelock.New(fencelock.Options{Endpoints: []string{"10.0.0.1:7480", "10.0.0.2:7480", "10.0.0.3:7480"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	s, err := c.NewSession(ctx, 10*time.Second, fencelock.WithLockDelay(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(ctx)
	wait, cancel := context.WithTimeout(ctx, 30*time.Second) // the wait for the lock
	defer cancel()
	token, held, err := s.Lock(wait, "inventory")
	if errors.Is(err, fencelock.ErrTimeout) {
		return // someone else held it for 30 s
	} else if err != nil {
		log.Fatal(err)
	}
	defer s.Unlock(ctx, "inventory")
	for i := 0; i < 10; i++ {
		select {
		case <-held.Done(): // the session was lost: another holder may come; stop now
			log.Print(context.Cause(held))
			return
		default:
		}
		_, err := c.Put(held, fmt.Sprintf("item/%d", i), "sold",
			fencelock.Fence("inventory", token), fencelock.WithSession(s))
		if errors.Is(err, fencelock.ErrStale) {
			return // a newer holder exists: our writes are refused
		}
	}
}

// Campaign, act as the leader until the leadership ends, then resign.
func ExampleElection() {
	c, _ := fencelock.New(fencelock.Options{Endpoints: []string{"127.0.0.1:7480"}})
	ctx := context.Background()
	s, err := c.NewSession(ctx, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(ctx)
	e := fencelock.NewElection(s, "scheduler")
	if err := e.Campaign(ctx, "host-a:9000"); err != nil {
		log.Fatal(err)
	}
	go func() {
		for li := range e.Observe(ctx) {
			log.Printf("leader %d says %q", li.Sid, li.Value)
		}
	}()
	<-e.Context().Done() // lost or resigned
	e.Resign(ctx)
}

// Watch the keys under a prefix; resume from Stop's id later.
func ExampleClient_Watch() {
	c, _ := fencelock.New(fencelock.Options{Endpoints: []string{"127.0.0.1:7480"}})
	ctx := context.Background()
	w, err := c.Watch(ctx, "item/", "")
	if err != nil {
		log.Fatal(err)
	}
	for ev := range w.Events() {
		fmt.Println(ev.ID, ev.Type, ev.Name)
	}
	var ce *fencelock.CompactedError
	if errors.As(w.Err(), &ce) {
		// reload the state with Get, then Watch(ctx, "item/", ce.After)
	}
}
