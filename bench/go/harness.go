// SPDX-License-Identifier: Apache-2.0

// harness.go — gobench's workloads W1-W3, W8, W9, W11 and W13 (its one-by-one way), the rules
// of lockbench.c, rwbench.c, sembench.c and multibench.c carried over one for one (lock names,
// warm-up, count and time bounds, what is timed, percentiles as sorted[n/2] and
// sorted[n*99/100], the JSON fields), so that a row of gobench and a row of lockbench measure the
// same thing. Owns its goroutines and clients; all are closed before a workload returns.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

const warmupMaxMS = 3000

var epoch = time.Now()

// nowMS: monotonic milliseconds.
func nowMS() float64 { return float64(time.Since(epoch).Nanoseconds()) / 1e6 }

func sleepMS(ms int) { time.Sleep(time.Duration(ms) * time.Millisecond) }

func pct(v []float64) (p50, p99, max float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	sort.Float64s(v)
	return v[len(v)/2], v[len(v)*99/100], v[len(v)-1]
}

// noteMax raises *max to h if h is larger (the most holders seen at once, client-side).
func noteMax(max *atomic.Int64, h int64) {
	for m := max.Load(); h > m && !max.CompareAndSwap(m, h); m = max.Load() {
	}
}

// newClients makes n clients; on a failure closes those made and returns the error.
func newClients(o *opts, d *driver, n int) ([]client, error) {
	cls := make([]client, 0, n)
	for i := 0; i < n; i++ {
		c, err := d.newClient(o, i)
		if err != nil {
			for _, c := range cls {
				c.close()
			}
			return nil, err
		}
		cls = append(cls, c)
	}
	return cls, nil
}

func closeAll(cls []client) {
	var wg sync.WaitGroup
	for _, c := range cls {
		wg.Add(1)
		go func(c client) { defer wg.Done(); c.close() }(c)
	}
	wg.Wait()
}

// ---- W1, W2, W3 (lockbench.c: one_op, worker_run, run_phase, summarize, print_json) ----

type phase struct {
	contended bool
	total     int64
	endMS     float64
	taken     atomic.Int64
	lastOwner atomic.Int64
	stop      atomic.Bool
}

type worker struct {
	id                               int
	cl                               client
	lock                             string
	lat                              []float64
	done, timeouts, errors, handoffs int
	lastMS                           float64
	err                              string
}

func (w *worker) run(ph *phase, start *sync.WaitGroup) {
	start.Wait()
	for !ph.stop.Load() && nowMS() < ph.endMS {
		if ph.taken.Add(1) > ph.total {
			break
		}
		t0 := nowMS()
		err := w.cl.acquire(w.lock, waitMS*time.Millisecond)
		if errors.Is(err, errTimeout) {
			w.timeouts++
			continue
		}
		if err != nil {
			w.err, w.errors = err.Error(), w.errors+1
			ph.stop.Store(true)
			break
		}
		t1 := nowMS()
		handoff := 0
		if ph.contended && ph.lastOwner.Swap(int64(w.id)) != int64(w.id) {
			handoff = 1
		}
		if err := w.cl.release(w.lock); err != nil {
			w.err, w.errors = err.Error(), w.errors+1
			ph.stop.Store(true)
			break
		}
		t := nowMS()
		if t > ph.endMS { // finished after the time bound: not counted
			break
		}
		lat := t - t0
		if ph.contended {
			lat = t1 - t0
		}
		w.lat = append(w.lat, lat)
		w.done++
		w.handoffs += handoff
		w.lastMS = t
	}
}

// runPhase runs the workers once; returns the ms from the start to the last counted op.
func runPhase(ph *phase, ws []*worker) float64 {
	var start, wg sync.WaitGroup
	start.Add(1)
	ph.lastOwner.Store(-1)
	for _, w := range ws {
		w.lat, w.done, w.timeouts, w.errors, w.handoffs, w.lastMS = w.lat[:0], 0, 0, 0, 0, 0
		wg.Add(1)
		go func(w *worker) { defer wg.Done(); w.run(ph, &start) }(w)
	}
	t0 := nowMS()
	start.Done()
	wg.Wait()
	last := t0
	for _, w := range ws {
		if w.lastMS > last {
			last = w.lastMS
		}
	}
	return last - t0
}

func runW123(o *opts, d *driver) int {
	r := newResult(o)
	contended := o.workload == "W2"
	cls, err := newClients(o, d, o.clients)
	if err != nil {
		w123Print(o, d, r, nil, 0, err.Error())
		return 1
	}
	defer closeAll(cls)
	ws := make([]*worker, len(cls))
	for i, c := range cls {
		ws[i] = &worker{id: i, cl: c}
		if contended {
			ws[i].lock = fmt.Sprintf("lb-%d-%s-shared", os.Getpid(), o.workload)
		} else {
			ws[i].lock = fmt.Sprintf("lb-%d-%s-%d", os.Getpid(), o.workload, i)
		}
	}
	if o.warmup > 0 {
		warm := &phase{contended: contended, total: int64(o.warmup), endMS: nowMS() + warmupMaxMS}
		runPhase(warm, ws)
		for _, w := range ws {
			if w.errors > 0 {
				w123Print(o, d, r, ws, 0, "warm-up: "+w.err)
				return 1
			}
		}
	}
	meas := &phase{contended: contended, total: int64(o.pairs),
		endMS: nowMS() + float64(o.seconds)*1e3}
	el := runPhase(meas, ws)
	return w123Print(o, d, r, ws, el, "")
}

func w123Print(o *opts, d *driver, r *result, ws []*worker, elapsedMS float64, err string) int {
	var all []float64
	ops, timeouts, errs, handoffs, fmin, fmax := 0, 0, 0, 0, -1, 0
	for _, w := range ws {
		ops += w.done
		timeouts += w.timeouts
		errs += w.errors
		handoffs += w.handoffs
		if w.errors > 0 && err == "" {
			err = w.err
		}
		if fmin < 0 || w.done < fmin {
			fmin = w.done
		}
		if w.done > fmax {
			fmax = w.done
		}
		all = append(all, w.lat...)
	}
	if err != "" && errs == 0 {
		errs = 1
	}
	p50, p99, max := pct(all)
	s := 1.0
	if elapsedMS > 0 {
		s = elapsedMS / 1e3
	}
	r.set("clients", o.clients)
	r.set("ttl_ms", o.ttlMS)
	r.set("seconds", ms(s))
	r.set("ops", ops)
	r.set("ops_per_s", ms(float64(ops)/s))
	r.set("p50_ms", ms(p50))
	r.set("p99_ms", ms(p99))
	r.set("max_ms", ms(max))
	r.set("timeouts", timeouts)
	r.set("errors", errs)
	if o.workload == "W2" {
		fair := 0.0
		if fmax > 0 {
			fair = float64(fmin) / float64(fmax)
		}
		r.set("grants_per_s", ms(float64(ops)/s))
		r.set("handoffs_per_s", ms(float64(handoffs)/s))
		r.set("fair_min", fmin)
		r.set("fair_max", fmax)
		r.set("fairness", ms(fair))
	}
	if err != "" {
		r.set("error", err)
	}
	r.print(d)
	if errs > 0 || ops == 0 {
		return 1
	}
	return 0
}

// ---- W8: fail-over (lockbench.c: run_w8) ----

const (
	w8Clients = 8
	w8GuardMS = 100 // grants acknowledged this soon after the kill were sent by the dead leader
)

func runW8(o *opts, d *driver) int {
	r := newResult(o)
	lock := fmt.Sprintf("lb-%d-W8", os.Getpid())
	var stop atomic.Bool
	var killUS, grantUS atomic.Int64
	var nerr atomic.Int64
	var mu sync.Mutex
	firstErr := ""
	failed := func(err error) { // counted; the same client is used again after a pause
		nerr.Add(1)
		mu.Lock()
		if firstErr == "" {
			firstErr = err.Error()
		}
		mu.Unlock()
		sleepMS(20)
	}
	cls, err := newClients(o, d, w8Clients)
	failover, rc, msg := -1.0, 1, ""
	var wg sync.WaitGroup
	if err != nil {
		msg = err.Error()
	} else {
		for _, c := range cls {
			wg.Add(1)
			go func(c client) {
				defer wg.Done()
				for !stop.Load() {
					err := c.acquire(lock, waitMS*time.Millisecond)
					t := int64(nowMS() * 1e3)
					if errors.Is(err, errTimeout) {
						continue
					}
					if err != nil {
						failed(err)
						continue
					}
					if k := killUS.Load(); k != 0 && t > k+w8GuardMS*1000 {
						grantUS.CompareAndSwap(0, t)
					}
					if err := c.release(lock); err != nil {
						failed(err)
					}
				}
			}(c)
		}
		sleepMS(1500)
		kerr := exec.Command("/bin/sh", "-c", o.killCmd).Run()
		killUS.Store(int64(nowMS() * 1e3))
		end := nowMS() + 60e3
		for grantUS.Load() == 0 && nowMS() < end {
			sleepMS(1)
		}
		g := grantUS.Load()
		switch {
		case kerr != nil:
			msg = fmt.Sprintf("kill command failed (%v)", kerr)
		case g != 0:
			failover, rc = float64(g-killUS.Load())/1e3, 0
		default:
			msg = "no grant within 60 s of the kill"
		}
	}
	stop.Store(true)
	wg.Wait()
	r.set("clients", w8Clients)
	r.set("failover_ms", ms1(failover))
	r.set("errors", nerr.Load())
	mu.Lock()
	if msg == "" {
		msg = firstErr
	}
	mu.Unlock()
	if msg != "" {
		if rc != 0 {
			r.set("error", msg)
		} else {
			r.set("note", msg)
		}
	}
	r.print(d)
	closeAll(cls)
	return rc
}

// ---- W9: read-write locks (rwbench.c) ----

const w9LatCap = 1000000

type w9Client struct {
	cl                       client
	writer                   bool
	lat                      []float64
	grants, timeouts, errors int64
	err                      string
}

// acquireRW: through the read-write lock when the run uses it (shared for a reader, exclusive
// for the writer), else the mutex.
func acquireRW(c client, name string, useRW, shared bool) error {
	if useRW {
		return c.(rwClient).acquireRW(name, shared, waitMS*time.Millisecond)
	}
	return c.acquire(name, waitMS*time.Millisecond)
}

func releaseRW(c client, name string, useRW bool) error {
	if useRW {
		return c.(rwClient).releaseRW(name)
	}
	return c.release(name)
}

func runW9(o *opts, d *driver) int {
	r := newResult(o)
	readers := o.clients
	cls, err := newClients(o, d, readers+1)
	if err != nil {
		r.set("errors", 1)
		r.set("error", err.Error())
		r.print(d)
		return 1
	}
	defer closeAll(cls)
	_, hasRW := cls[0].(rwClient)
	shared := hasRW && !o.exclusiveReaders // useRW: readers shared, the writer exclusive
	lock := fmt.Sprintf("lb-%d-W9", os.Getpid())
	var granted atomic.Int64
	var holding, maxHolding atomic.Int64
	var stop atomic.Bool
	ks := make([]*w9Client, readers+1)
	var wg sync.WaitGroup
	var start sync.WaitGroup
	start.Add(1)
	endMS := 0.0
	for i := range ks {
		ks[i] = &w9Client{cl: cls[i], writer: i == readers}
		k := ks[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			sh := shared && !k.writer
			for !stop.Load() {
				if nowMS() >= endMS || granted.Load() >= int64(o.pairs) {
					break
				}
				if k.writer {
					sleepMS(o.pauseMS)
				}
				t0 := nowMS()
				err := acquireRW(k.cl, lock, shared, sh)
				if errors.Is(err, errTimeout) {
					k.timeouts++
					continue
				}
				if err == nil {
					t1 := nowMS()
					if !k.writer {
						noteMax(&maxHolding, holding.Add(1))
					}
					if o.holdMS > 0 {
						sleepMS(o.holdMS) // the read (or write) the lock protects
					}
					if !k.writer {
						holding.Add(-1)
					}
					err = releaseRW(k.cl, lock, shared)
					if err == nil && len(k.lat) < w9LatCap/(readers+1) {
						k.lat = append(k.lat, t1-t0)
					}
				}
				if err != nil {
					k.errors++
					k.err = err.Error()
					stop.Store(true)
					break
				}
				k.grants++
				if !k.writer {
					granted.Add(1)
				}
			}
			stop.Store(true) // the writer stops with the readers, and they with it
		}()
	}
	t0 := nowMS()
	endMS = t0 + float64(o.seconds)*1e3
	start.Done()
	wg.Wait()
	secs := (nowMS() - t0) / 1e3
	var rg, rt, errs int64
	var rl []float64
	msg := ""
	for i, k := range ks {
		errs += k.errors
		if k.errors > 0 && msg == "" {
			msg = k.err
		}
		if i < readers {
			rg += k.grants
			rt += k.timeouts
			rl = append(rl, k.lat...)
		}
	}
	w := ks[readers]
	r50, r99, _ := pct(rl)
	w50, w99, wmax := pct(w.lat)
	mode := "exclusive"
	if shared {
		mode = "shared"
	}
	per := func(n int64) json.Number {
		if secs <= 0 {
			return ms1(0)
		}
		return ms1(float64(n) / secs)
	}
	r.set("readers", readers)
	r.set("reader_mode", mode)
	r.set("writer_pause_ms", o.pauseMS)
	r.set("hold_ms", o.holdMS)
	r.set("seconds", ms(secs))
	r.set("reader_grants", rg)
	r.set("reader_grants_per_s", per(rg))
	r.set("reader_wait_p50_ms", ms(r50))
	r.set("reader_wait_p99_ms", ms(r99))
	r.set("reader_timeouts", rt)
	r.set("max_readers_holding", maxHolding.Load())
	r.set("writer_grants", w.grants)
	r.set("writer_grants_per_s", per(w.grants))
	r.set("writer_wait_p50_ms", ms(w50))
	r.set("writer_wait_p99_ms", ms(w99))
	r.set("writer_wait_max_ms", ms(wmax))
	r.set("writer_timeouts", w.timeouts)
	r.set("errors", errs)
	if msg != "" {
		r.set("error", msg)
	}
	r.print(d)
	if msg != "" {
		return 1
	}
	return 0
}

// ---- W11: semaphores (sembench.c) ----

func runW11(o *opts, d *driver) int {
	r := newResult(o)
	cls, err := newClients(o, d, o.clients)
	if err == nil {
		if _, ok := cls[0].(semClient); !ok {
			closeAll(cls)
			r.set("skipped", "no semaphore in "+d.name)
			r.print(d)
			return 0
		}
	}
	if err != nil {
		r.set("errors", 1)
		r.set("error", err.Error())
		r.print(d)
		return 1
	}
	defer closeAll(cls)
	name := fmt.Sprintf("lb-%d-W11", os.Getpid())
	var granted, holding, maxHolding atomic.Int64
	var stop atomic.Bool
	type k11 struct {
		lat                      []float64
		grants, timeouts, errors int64
		err                      string
	}
	ks := make([]*k11, len(cls))
	var wg, start sync.WaitGroup
	start.Add(1)
	endMS := 0.0
	for i, c := range cls {
		ks[i] = &k11{}
		k, sc := ks[i], c.(semClient)
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			for !stop.Load() && nowMS() < endMS && granted.Load() < int64(o.pairs) {
				t0 := nowMS()
				err := sc.semAcquire(name, o.limit, waitMS*time.Millisecond)
				if errors.Is(err, errTimeout) {
					k.timeouts++
					continue
				}
				if err == nil {
					t1 := nowMS()
					noteMax(&maxHolding, holding.Add(1))
					if o.holdMS > 0 {
						sleepMS(o.holdMS)
					}
					holding.Add(-1)
					if err = sc.semRelease(name); err == nil {
						k.lat = append(k.lat, t1-t0)
					}
				}
				if err != nil {
					k.errors++
					k.err = err.Error()
					break
				}
				k.grants++
				granted.Add(1)
			}
			stop.Store(true)
		}()
	}
	t0 := nowMS()
	endMS = t0 + float64(o.seconds)*1e3
	start.Done()
	wg.Wait()
	secs := (nowMS() - t0) / 1e3
	var g, to, errs int64
	var all []float64
	msg := ""
	for _, k := range ks {
		g += k.grants
		to += k.timeouts
		errs += k.errors
		all = append(all, k.lat...)
		if k.errors > 0 && msg == "" {
			msg = k.err
		}
	}
	p50, p99, _ := pct(all)
	hps := 0.0
	if secs > 0 {
		hps = float64(g) / secs
	}
	r.set("clients", len(cls))
	r.set("limit", o.limit)
	r.set("hold_ms", o.holdMS)
	r.set("seconds", ms(secs))
	r.set("grants", g)
	r.set("handoffs_per_s", ms1(hps))
	r.set("wait_p50_ms", ms(p50))
	r.set("wait_p99_ms", ms(p99))
	r.set("timeouts", to)
	r.set("max_holding", maxHolding.Load())
	r.set("errors", errs)
	if msg != "" {
		r.set("error", msg)
	}
	r.print(d)
	if msg != "" {
		return 1
	}
	return 0
}

// ---- W13: multi-lock under contention (multibench.c), the one-by-one way ----

const w13Pool = 16 // the names of the pool: "<prefix>/n00" .. "/n15"

// w13Set: the set of client id at its t-th turn, k names in ascending order (multibench.c's
// w13_set: n[(7 id + 3 t + j) mod 16], j < k).
func w13Set(prefix string, id int, t int64, k int) []string {
	start := int((7*int64(id) + 3*t) % w13Pool)
	idx := make([]int, k)
	for j := range idx {
		idx[j] = (start + j) % w13Pool
	}
	sort.Ints(idx)
	names := make([]string, k)
	for j, i := range idx {
		names[j] = fmt.Sprintf("%s/n%02d", prefix, i)
	}
	return names
}

// runW13: --clients clients take their sets of --k names one by one in ascending order (the
// client's own mutex recipe, each wait the rest of the set's 5 s), hold --hold ms, release them:
// the rule of multibench.c's "sequential" way, so that the row stands beside fencelock's.
func runW13(o *opts, d *driver) int {
	r := newResult(o)
	r.set("way", "sequential")
	r.set("k", o.k)
	r.set("pool", w13Pool)
	cls, err := newClients(o, d, o.clients)
	if err != nil {
		r.set("errors", 1)
		r.set("error", err.Error())
		r.print(d)
		return 1
	}
	defer closeAll(cls)
	prefix := fmt.Sprintf("lb-%d-%d-W13-k%d-seq", os.Getpid(), time.Now().Unix(), o.k)
	var taken atomic.Int64
	var stop atomic.Bool
	type k13 struct {
		lat                    []float64
		sets, timeouts, errors int64
		err                    string
	}
	ks := make([]*k13, len(cls))
	var wg, start sync.WaitGroup
	start.Add(1)
	endMS := 0.0
	for i, c := range cls {
		ks[i] = &k13{}
		k, c, id := ks[i], c, i
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			for t := int64(0); !stop.Load() && nowMS() < endMS; t++ {
				if taken.Add(1) > int64(o.pairs) {
					break
				}
				names := w13Set(prefix, id, t, o.k)
				t0 := nowMS()
				deadline := t0 + waitMS
				got := 0
				var err error
				for ; got < len(names); got++ {
					left := deadline - nowMS()
					if left < 1 {
						err = errTimeout
						break
					}
					if err = c.acquire(names[got], time.Duration(left*1e6)); err != nil {
						break
					}
				}
				t1 := nowMS()
				if err == nil && o.holdMS > 0 {
					sleepMS(o.holdMS)
				}
				t2 := nowMS()
				var uerr error
				for _, n := range names[:got] {
					if e := c.release(n); e != nil && uerr == nil {
						uerr = e
					}
				}
				lat := (t1 - t0) + (nowMS() - t2)
				if errors.Is(err, errTimeout) && uerr == nil {
					k.timeouts++
					continue
				}
				if err == nil {
					err = uerr
				}
				if err != nil {
					k.errors++
					k.err = err.Error()
					stop.Store(true)
					break
				}
				if nowMS() > endMS { // finished after the time bound: not counted
					break
				}
				k.lat = append(k.lat, lat)
				k.sets++
			}
		}()
	}
	t0 := nowMS()
	endMS = t0 + float64(o.seconds)*1e3
	start.Done()
	wg.Wait()
	secs := (nowMS() - t0) / 1e3
	var sets, to, errs int64
	var all []float64
	msg := ""
	for i, k := range ks {
		sets += k.sets
		to += k.timeouts
		errs += k.errors
		all = append(all, k.lat...)
		if k.errors > 0 && msg == "" {
			msg = fmt.Sprintf("client %d: %s", i, k.err)
		}
	}
	p50, p99, max := pct(all)
	sps := 0.0
	if secs > 0 {
		sps = float64(sets) / secs
	}
	r.set("clients", len(cls))
	r.set("hold_ms", o.holdMS)
	r.set("seconds", ms(secs))
	r.set("sets", sets)
	r.set("sets_per_s", ms1(sps))
	r.set("p50_ms", ms(p50))
	r.set("p99_ms", ms(p99))
	r.set("max_ms", ms(max))
	r.set("timeouts", to)
	r.set("errors", errs)
	if msg != "" {
		r.set("error", msg)
	}
	r.print(d)
	if msg != "" {
		return 1
	}
	return 0
}
