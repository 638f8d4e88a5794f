// SPDX-License-Identifier: Apache-2.0

// etcd.go — driver "etcd-go": etcd through its own Go client, go.etcd.io/etcd/client/v3, over
// gRPC, as etcd's users write it.
//
// Owns, per bench client: one clientv3.Client (its own gRPC connection, balanced over all the
// endpoints by the client itself), one concurrency.Session (a lease of ceil(ttl/1000) s kept
// alive by the client's own goroutine; replaced by a new one when it is lost, as the careful
// user does after ErrSessionExpired) and the lock objects made on it.
//
// Recipes, all from the client library itself:
//   - mutex (W1-W3, W8, W9 exclusive): concurrency.NewMutex(session, name): Lock(ctx) with a
//     context of the wait (on the context's end the library deletes its queued key), TryLock
//     for a wait of 0, Unlock. The hand-off is the Mutex's watch on the key before ours.
//   - read-write lock (W9 shared): experimental/recipes.NewRWMutex(session, name): RLock/RUnlock
//     for the readers, Lock/Unlock for the writer. Its calls take no context (the recipe waits
//     with context.TODO), so a wait past waitMS is counted as a timeout when it ends, and the
//     lock it finally got is released at once.
//   - semaphore (W11): etcd has none (the v2 contrib recipe is gone); this is the Mutex recipe
//     with N holders instead of 1, on the client's plain KV, lease and watch calls: put
//     "<name>/<lease hex>" with the session's lease (a transaction, only if absent, with a read
//     of the first `limit` keys by create revision); it holds a permit when fewer than `limit`
//     keys under "<name>/" are older (smaller create revision), else it counts them at a
//     revision R and watches the prefix for deletions from R+1 (with the deleted key's previous
//     value, so the count drops without another read) until fewer than `limit` remain. FIFO by
//     create revision; a key whose lease dies frees its permit. Release deletes the key.
//   - election (W12): concurrency.NewElection: Campaign, Observe; the leader's session ended
//     from outside by revoking its lease.
//
// Errors: a call that fails returns the client's error (the harness counts it, and W8 retries
// with the same client); a lock whose wait ran out returns errTimeout.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	recipe "go.etcd.io/etcd/client/v3/experimental/recipes"
	"go.uber.org/zap"
)

const etcdCallTimeout = 5 * time.Second // every call but a waiting one

type etcdClient struct {
	cli  *clientv3.Client
	ttlS int
	sess *concurrency.Session
	mu   map[string]*concurrency.Mutex
	rw   map[string]*rwHeld
	sem  map[string]string // semaphore name -> our key
}

// rwHeld: the recipe object of a lock this client holds (or waits for) shared or exclusive.
type rwHeld struct {
	m      *recipe.RWMutex
	shared bool
}

func etcdConfig(endpoints string) clientv3.Config {
	// The client's own log (retries it recovers from, at "warn") would fill run.sh's output.
	return clientv3.Config{Endpoints: strings.Split(endpoints, ","), DialTimeout: 5 * time.Second,
		Logger: zap.NewNop()}
}

func newEtcdClient(o *opts, id int) (client, error) {
	cli, err := clientv3.New(etcdConfig(o.endpoints))
	if err != nil {
		return nil, err
	}
	c := &etcdClient{cli: cli, ttlS: (o.ttlMS + 999) / 1000}
	if _, err := c.session(); err != nil {
		cli.Close()
		return nil, err
	}
	return c, nil
}

// session: the live session, or a new one (and new lock objects) if it was lost.
func (c *etcdClient) session() (*concurrency.Session, error) {
	if c.sess != nil {
		select {
		case <-c.sess.Done():
			c.sess = nil
		default:
			return c.sess, nil
		}
	}
	s, err := concurrency.NewSession(c.cli, concurrency.WithTTL(c.ttlS))
	if err != nil {
		return nil, err
	}
	c.sess = s
	c.mu = map[string]*concurrency.Mutex{}
	c.rw = map[string]*rwHeld{}
	c.sem = map[string]string{}
	return s, nil
}

func (c *etcdClient) acquire(name string, wait time.Duration) error {
	s, err := c.session()
	if err != nil {
		return err
	}
	m := c.mu[name]
	if m == nil {
		m = concurrency.NewMutex(s, name)
		c.mu[name] = m
	}
	if wait == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), etcdCallTimeout)
		defer cancel()
		err := m.TryLock(ctx)
		if errors.Is(err, concurrency.ErrLocked) {
			return errTimeout
		}
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err = m.Lock(ctx)
	if err != nil && ctx.Err() != nil {
		return errTimeout // the Mutex deleted its queued key
	}
	return err
}

func (c *etcdClient) release(name string) error {
	m := c.mu[name]
	if m == nil {
		return fmt.Errorf("release of %s: not held", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdCallTimeout)
	defer cancel()
	return m.Unlock(ctx)
}

// acquireRW: the recipe's RLock (shared) or Lock; its wait has no context: see the file comment.
func (c *etcdClient) acquireRW(name string, shared bool, wait time.Duration) error {
	s, err := c.session()
	if err != nil {
		return err
	}
	h := &rwHeld{m: recipe.NewRWMutex(s, name), shared: shared}
	done := make(chan error, 1)
	go func() {
		if shared {
			done <- h.m.RLock()
		} else {
			done <- h.m.Lock()
		}
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-done:
		if err == nil {
			c.rw[name] = h
		}
		return err
	case <-t.C:
	}
	if err := <-done; err != nil { // granted late (or failed): give it back
		return err
	}
	c.rw[name] = h
	if err := c.releaseRW(name); err != nil {
		return err
	}
	return errTimeout
}

func (c *etcdClient) releaseRW(name string) error {
	h := c.rw[name]
	if h == nil {
		return fmt.Errorf("release of %s: not held", name)
	}
	delete(c.rw, name)
	if h.shared {
		return h.m.RUnlock()
	}
	return h.m.Unlock()
}

func (c *etcdClient) semAcquire(name string, limit int, wait time.Duration) error {
	s, err := c.session()
	if err != nil {
		return err
	}
	pfx := name + "/"
	key := fmt.Sprintf("%s%x", pfx, s.Lease())
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	first := clientv3.OpGet(pfx, clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend),
		clientv3.WithLimit(int64(limit)))
	resp, err := c.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, "", clientv3.WithLease(s.Lease())), first).
		Else(clientv3.OpGet(key), first).Commit()
	if err != nil {
		return err
	}
	c.sem[name] = key
	myRev := resp.Header.Revision
	if !resp.Succeeded {
		myRev = resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision
	}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		if string(kv.Key) == key {
			return nil // among the first `limit`
		}
	}
	err = c.semWait(ctx, pfx, key, myRev, limit)
	if err != nil && ctx.Err() != nil {
		err = errTimeout
	}
	if err != nil { // leave no queued key behind
		dctx, dcancel := context.WithTimeout(context.Background(), etcdCallTimeout)
		defer dcancel()
		if _, derr := c.cli.Delete(dctx, key); derr != nil {
			return derr
		}
		delete(c.sem, name)
	}
	return err
}

// semWait: until fewer than limit keys under pfx are older than myRev (see the file comment).
func (c *etcdClient) semWait(ctx context.Context, pfx, key string, myRev int64, limit int) error {
	// Keys, not WithCountOnly: the server counts before it applies the revision filter.
	cnt, err := c.cli.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithMaxCreateRev(myRev-1))
	if err != nil {
		return err
	}
	older := int64(len(cnt.Kvs))
	if older < int64(limit) {
		return nil
	}
	wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer wcancel()
	wch := c.cli.Watch(wctx, pfx, clientv3.WithPrefix(), clientv3.WithRev(cnt.Header.Revision+1),
		clientv3.WithFilterPut(), clientv3.WithPrevKV())
	for wr := range wch {
		if err := wr.Err(); err != nil {
			return err
		}
		for _, ev := range wr.Events {
			if string(ev.Kv.Key) == key {
				return concurrency.ErrSessionExpired // our own key went: its lease died
			}
			if ev.PrevKv == nil {
				return fmt.Errorf("semaphore %s: a deletion without its previous key", pfx)
			}
			if ev.PrevKv.CreateRevision < myRev {
				older--
			}
		}
		if older < int64(limit) {
			return nil
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.New("semaphore watch closed")
}

func (c *etcdClient) semRelease(name string) error {
	key, ok := c.sem[name]
	if !ok {
		return fmt.Errorf("release of semaphore %s: not held", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdCallTimeout)
	defer cancel()
	if _, err := c.cli.Delete(ctx, key); err != nil {
		return err
	}
	delete(c.sem, name)
	return nil
}

func (c *etcdClient) close() {
	if c.sess != nil {
		c.sess.Close() // revokes the lease: its keys go at once
	}
	c.cli.Close()
}

// ---- W12: election fail-over (electbench.c's rules; its etcd backend is the JSON gateway) ----

const (
	elRoundMS  = 8000 // a round's bound: the candidate's wait and the observers'
	elSettleMS = 150  // after the candidate and observers started, before the kill
)

func runW12(o *opts, d *driver) int {
	r := newResult(o)
	if d.name != "etcd-go" {
		r.set("skipped", "etcd-go only")
		r.print(d)
		return 0
	}
	ttl := (o.ttlMS + 999) / 1000
	nobs := o.clients
	var clis []*clientv3.Client // 0: admin, 1: L, 2: C, 3..: observers
	var obsSess []*concurrency.Session
	defer func() {
		for _, s := range obsSess {
			s.Close()
		}
		for _, c := range clis {
			c.Close()
		}
	}()
	var perRound, allObs []float64
	rounds, observed, tokenOK := 0, 0, 0
	msg := ""
	for i := 0; i < 3+nobs && msg == ""; i++ {
		c, err := clientv3.New(etcdConfig(o.endpoints))
		if err != nil {
			msg = err.Error()
			break
		}
		clis = append(clis, c)
		if i >= 3 {
			s, err := concurrency.NewSession(c, concurrency.WithTTL(ttl))
			if err != nil {
				msg = err.Error()
				break
			}
			obsSess = append(obsSess, s)
		}
	}
	end := nowMS() + float64(o.seconds)*1e3
	for rd := 0; msg == "" && rd < o.rounds && nowMS() < end; rd++ {
		var worst float64
		var samples []float64
		ltok, ctok, err := elRound(clis, obsSess, ttl, rd, &samples)
		rounds++
		allObs = append(allObs, samples...)
		if err != nil {
			msg = fmt.Sprintf("round %d: %v", rd, err)
			break
		}
		for _, s := range samples {
			if s > worst {
				worst = s
			}
		}
		observed++
		perRound = append(perRound, worst)
		if ctok > ltok {
			tokenOK++
		}
	}
	r50, r99, rmax := pct(perRound)
	o50, o99, omax := pct(allObs)
	r.set("observers", nobs)
	r.set("rounds", rounds)
	r.set("observed", observed)
	r.set("token_newer", tokenOK)
	r.set("all_seen_p50_ms", ms2(r50))
	r.set("all_seen_p99_ms", ms2(r99))
	r.set("all_seen_max_ms", ms2(rmax))
	r.set("observer_p50_ms", ms2(o50))
	r.set("observer_p99_ms", ms2(o99))
	r.set("observer_max_ms", ms2(omax))
	if msg != "" {
		r.set("errors", 1)
		r.set("error", msg)
	} else {
		r.set("errors", 0)
	}
	r.print(d)
	if msg != "" {
		return 1
	}
	return 0
}

// elRound: a fresh election; L leads, C campaigns, the observers watch; L's lease is revoked
// by the admin client and each observer's time to see C lead goes into *samples (ms).
// Returns L's and C's tokens (their keys' create revisions).
func elRound(clis []*clientv3.Client, obs []*concurrency.Session, ttl, rd int,
	samples *[]float64) (int64, int64, error) {
	pfx := fmt.Sprintf("lb-%d-W12-%d", os.Getpid(), rd)
	ctx, cancel := context.WithTimeout(context.Background(), elRoundMS*time.Millisecond)
	defer cancel()
	sL, err := concurrency.NewSession(clis[1], concurrency.WithTTL(ttl))
	if err != nil {
		return 0, 0, err
	}
	defer sL.Close()
	eL := concurrency.NewElection(sL, pfx)
	if err := eL.Campaign(ctx, "L"); err != nil {
		return 0, 0, fmt.Errorf("leader: %w", err)
	}
	sC, err := concurrency.NewSession(clis[2], concurrency.WithTTL(ttl))
	if err != nil {
		return 0, 0, err
	}
	defer sC.Close()
	eC := concurrency.NewElection(sC, pfx)
	var wg sync.WaitGroup
	var cErr error
	wg.Add(1)
	go func() { defer wg.Done(); cErr = eC.Campaign(ctx, "C") }()
	seen := make([]float64, len(obs))
	oErr := make([]error, len(obs))
	for i, s := range obs {
		wg.Add(1)
		go func(i int, s *concurrency.Session) {
			defer wg.Done()
			e := concurrency.NewElection(s, pfx)
			for resp := range e.Observe(ctx) {
				if len(resp.Kvs) > 0 && string(resp.Kvs[0].Value) == "C" {
					seen[i] = nowMS()
					return
				}
			}
			oErr[i] = fmt.Errorf("observer %d: observation ended before C led (%v)", i, ctx.Err())
		}(i, s)
	}
	sleepMS(elSettleMS) // C queued, the observers watching
	t0 := nowMS()
	kctx, kcancel := context.WithTimeout(context.Background(), etcdCallTimeout)
	_, kerr := clis[0].Revoke(kctx, sL.Lease())
	kcancel()
	if kerr != nil {
		cancel()
	}
	wg.Wait()
	for i := range obs {
		if seen[i] > 0 {
			*samples = append(*samples, seen[i]-t0)
		}
	}
	switch {
	case kerr != nil:
		return 0, 0, fmt.Errorf("revoke: %w", kerr)
	case cErr != nil:
		return 0, 0, fmt.Errorf("candidate: %w", cErr)
	}
	for _, e := range oErr {
		if e != nil {
			return 0, 0, e
		}
	}
	return eL.Rev(), eC.Rev(), nil
}
