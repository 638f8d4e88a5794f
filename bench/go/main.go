// SPDX-License-Identifier: Apache-2.0

// gobench — the lock benchmark's anchors driven through their own Go client libraries, as their
// users run them: etcd through go.etcd.io/etcd/client/v3 (concurrency.Session, Mutex, Election
// and experimental/recipes.RWMutex, over gRPC) as driver "etcd-go", and Redlock through
// github.com/go-redsync/redsync/v4 on go-redis as driver "redsync".
//
// It takes lockbench's command line (the flags bench/run.sh passes: --driver, --endpoints,
// --workload, --clients, --pairs, --seconds, --ttl, --warmup, --kill-cmd, --hold,
// --writer-pause, --exclusive-readers, --limit, --rounds, --k, --way) and runs the same workloads
// with the same rules (harness.go: W1, W2, W3, W8, W9, W11, W13's one-by-one way; etcd.go: W12),
// printing one JSON line with the field names lockbench prints, so that bench/run.sh files it
// beside the C drivers' rows and its report reads it unchanged. Every line also carries "client": the library and the
// version this binary was built with (from its own build information, so it cannot drift
// from go.mod). `gobench --drivers` lists the drivers; `gobench --version` the client
// libraries. Exit: 0 ok, 1 errors (the JSON says which), 2 usage.
//
// Bounds: every loop stops at its count (--pairs) or time (--seconds) bound, and every acquire
// waits at most waitMS (5 s), as in lockbench.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"
)

const waitMS = 5000 // the acquire wait of every workload (a free lock is granted at once)

// errTimeout: the lock (permit) was not granted within the wait.
var errTimeout = errors.New("not granted within the wait")

type opts struct {
	driver, endpoints, workload, killCmd string
	clients, pairs, seconds, ttlMS       int
	warmup, holdMS, pauseMS, limit       int
	rounds, k                            int
	way                                  string
	exclusiveReaders                     bool
}

// A client of one lock system: one connection (etcd: a clientv3.Client and a Session; Redlock:
// five go-redis clients) used by one goroutine at a time.
type client interface {
	// acquire lock name, waiting up to wait (0: try once); errTimeout when not granted.
	acquire(name string, wait time.Duration) error
	release(name string) error
	close()
}

// Optional: a read-write lock (W9): shared for the readers, exclusive for the writer, on
// lock objects of its own (not the mutex of acquire/release).
type rwClient interface {
	acquireRW(name string, shared bool, wait time.Duration) error
	releaseRW(name string) error
}

// Optional: a counting semaphore of limit permits (W11).
type semClient interface {
	semAcquire(name string, limit int, wait time.Duration) error
	semRelease(name string) error
}

type driver struct {
	name      string
	newClient func(o *opts, id int) (client, error)
	modules   []string // the client libraries, for the "client" label
	api       string   // what of them is used
}

var drivers = []driver{
	{"etcd-go", newEtcdClient, []string{"go.etcd.io/etcd/client/v3"}, "Go, gRPC"},
	{"redsync", newRedsyncClient, []string{"github.com/go-redsync/redsync/v4",
		"github.com/redis/go-redis/v9"}, "Go"},
}

// clientLabel: "go.etcd.io/etcd/client/v3 v3.5.36 (Go, gRPC)", from the build info.
func clientLabel(d *driver) string {
	vers := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			v := m.Version
			if m.Replace != nil {
				v = m.Replace.Version
			}
			vers[m.Path] = v
		}
	}
	var parts []string
	for _, m := range d.modules {
		v := vers[m]
		if v == "" {
			v = "?"
		}
		parts = append(parts, m+" "+v)
	}
	return strings.Join(parts, " + ") + " (" + d.api + ")"
}

func findDriver(name string) *driver {
	for i := range drivers {
		if drivers[i].name == name {
			return &drivers[i]
		}
	}
	return nil
}

// result is one JSON line: lockbench's fields, in its order, then "client".
type result struct {
	keys []string
	vals map[string]any
}

func newResult(o *opts) *result {
	r := &result{vals: map[string]any{}}
	r.set("driver", o.driver)
	r.set("workload", o.workload)
	return r
}

func (r *result) set(k string, v any) {
	if _, ok := r.vals[k]; !ok {
		r.keys = append(r.keys, k)
	}
	r.vals[k] = v
}

// ms, ms2, ms1: a number as lockbench prints it (%.3f, %.2f, %.1f).
func ms(d float64) json.Number  { return json.Number(fmt.Sprintf("%.3f", d)) }
func ms2(d float64) json.Number { return json.Number(fmt.Sprintf("%.2f", d)) }
func ms1(d float64) json.Number { return json.Number(fmt.Sprintf("%.1f", d)) }

func (r *result) print(d *driver) {
	if d != nil {
		r.set("client", clientLabel(d))
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range r.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(r.vals[k])
		if err != nil {
			vb = []byte("null")
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteString("}\n")
	os.Stdout.WriteString(b.String())
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gobench --driver etcd-go|redsync --endpoints EP "+
		"--workload W1|W2|W3|W8|W9|W11|W12|W13 [--kill-cmd CMD] [--clients N] [--pairs N] "+
		"[--seconds S] [--ttl ms] [--warmup N] [--hold ms] [--writer-pause ms] "+
		"[--exclusive-readers] [--limit N] [--rounds N] [--k 1..8] [--way sequential]\n       gobench --drivers | --version")
}

func parseArgs(args []string) (*opts, error) {
	o := &opts{}
	fs := flag.NewFlagSet("gobench", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.StringVar(&o.driver, "driver", "", "")
	fs.StringVar(&o.endpoints, "endpoints", "", "")
	fs.StringVar(&o.workload, "workload", "", "")
	fs.StringVar(&o.killCmd, "kill-cmd", "", "")
	fs.IntVar(&o.clients, "clients", 0, "")
	fs.IntVar(&o.pairs, "pairs", 100000, "")
	fs.IntVar(&o.seconds, "seconds", 10, "")
	fs.IntVar(&o.ttlMS, "ttl", 10000, "")
	fs.IntVar(&o.warmup, "warmup", 300, "")
	fs.IntVar(&o.holdMS, "hold", 1, "")
	fs.IntVar(&o.pauseMS, "writer-pause", 10, "")
	fs.IntVar(&o.limit, "limit", 4, "")
	fs.IntVar(&o.rounds, "rounds", 10, "")
	fs.IntVar(&o.k, "k", 2, "")
	fs.StringVar(&o.way, "way", "sequential", "")
	fs.BoolVar(&o.exclusiveReaders, "exclusive-readers", false, "")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	bad := fs.NArg() > 0 || o.driver == "" || o.endpoints == "" || o.workload == ""
	// lockbench's ranges
	bad = bad || o.clients < 0 || o.clients > 1000 || o.pairs < 1 || o.pairs > 10000000 ||
		o.seconds < 1 || o.seconds > 3600 || o.ttlMS < 100 || o.ttlMS > 3600000 ||
		o.warmup < 0 || o.warmup > 1000000 || o.holdMS < 0 || o.holdMS > 1000 ||
		o.pauseMS < 0 || o.pauseMS > 60000 || o.limit < 1 || o.limit > 1048576 ||
		o.rounds < 1 || o.rounds > 1000 || o.k < 1 || o.k > 8 || o.way != "sequential"
	switch o.workload {
	case "W1", "W2", "W3", "W8", "W9", "W11", "W12", "W13":
	default:
		bad = true
	}
	if o.workload == "W8" && o.killCmd == "" {
		bad = true
	}
	if bad {
		return nil, errors.New("bad arguments")
	}
	if o.clients == 0 {
		switch o.workload {
		case "W1":
			o.clients = 1
		case "W2":
			o.clients = 8
		case "W12":
			o.clients = 4
		case "W13":
			o.clients = 8
		default:
			o.clients = 16
		}
	}
	return o, nil
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--drivers" {
		for _, d := range drivers {
			fmt.Println(d.name)
		}
		return
	}
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		for i := range drivers {
			fmt.Printf("%s: %s\n", drivers[i].name, clientLabel(&drivers[i]))
		}
		return
	}
	o, err := parseArgs(os.Args[1:])
	if err != nil {
		usage()
		os.Exit(2)
	}
	d := findDriver(o.driver)
	if d == nil {
		r := newResult(o)
		r.set("error", "unknown driver")
		r.print(nil)
		os.Exit(2)
	}
	var rc int
	switch o.workload {
	case "W1", "W2", "W3":
		rc = runW123(o, d)
	case "W8":
		rc = runW8(o, d)
	case "W9":
		rc = runW9(o, d)
	case "W11":
		rc = runW11(o, d)
	case "W12":
		rc = runW12(o, d)
	case "W13":
		rc = runW13(o, d)
	}
	os.Exit(rc)
}
