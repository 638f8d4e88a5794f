// SPDX-License-Identifier: Apache-2.0

package fencelock_test

// The test harness: real fencelockd processes on loopback. The binary is $FENCELOCKD (else
// build/asan or build/release of this source tree); ports come from $FL_TEST_PORTS=lo-hi
// (else 20000-32767; never 7480-7482). Each server gets a data directory under t.TempDir()
// and a log file whose tail is printed when the test fails. Servers are killed at the end of
// the test, SIGSTOPped ones continued first.

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	fencelock "github.com/fencelock/fencelock-go"
)

func binary(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("FENCELOCKD"); b != "" {
		return b
	}
	for _, b := range []string{"../../build/asan/fencelockd", "../../build/release/fencelockd"} {
		if _, err := os.Stat(b); err == nil {
			abs, _ := filepath.Abs(b)
			return abs
		}
	}
	t.Fatal("no fencelockd: set FENCELOCKD to its path (or make in the source tree)")
	return ""
}

var (
	portMu sync.Mutex
	used   = map[int]bool{}
	rng    = rand.New(rand.NewSource(time.Now().UnixNano() ^ int64(os.Getpid())))
)

func freePort(t *testing.T) int {
	t.Helper()
	lo, hi := 20000, 32767
	if spec := os.Getenv("FL_TEST_PORTS"); spec != "" {
		a, b, _ := strings.Cut(spec, "-")
		lo, _ = strconv.Atoi(a)
		hi, _ = strconv.Atoi(b)
	}
	portMu.Lock()
	defer portMu.Unlock()
	for i := 0; i < 2000; i++ {
		p := lo + rng.Intn(hi-lo+1)
		if used[p] || (p >= 7480 && p <= 7482) {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		used[p] = true
		return p
	}
	t.Fatalf("no free port in %d-%d", lo, hi)
	return 0
}

type server struct {
	t        *testing.T
	id       int
	port     int
	raftPort int
	httpPort int
	dir      string
	args     []string
	cmd      *exec.Cmd
	log      string
	stopped  atomic.Bool
	auth     [2]string
	tls      *tls.Config
}

func newServer(t *testing.T, id int, args ...string) *server {
	dir := filepath.Join(t.TempDir(), "node"+strconv.Itoa(id))
	os.MkdirAll(dir, 0o700)
	s := &server{t: t, id: id, port: freePort(t), raftPort: freePort(t), httpPort: freePort(t),
		dir: dir, args: args, log: filepath.Join(dir, "log")}
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			b, _ := os.ReadFile(s.log)
			if len(b) > 3000 {
				b = b[len(b)-3000:]
			}
			t.Logf("node %d log tail:\n%s", s.id, b)
		}
	})
	return s
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *server) start() {
	s.t.Helper()
	argv := append([]string{"--id", strconv.Itoa(s.id), "--data-dir", filepath.Join(s.dir, "data"),
		"--listen", s.addr(), "--raft-listen", "127.0.0.1:" + strconv.Itoa(s.raftPort),
		"--http-listen", "127.0.0.1:" + strconv.Itoa(s.httpPort)}, s.args...)
	f, err := os.OpenFile(s.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	s.cmd = exec.Command(binary(s.t), argv...)
	s.cmd.Stdout, s.cmd.Stderr = f, f
	s.cmd.Dir = s.dir
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "FENCELOCK_") {
			env = append(env, e)
		}
	}
	s.cmd.Env = append(env, "ASAN_OPTIONS=detect_leaks=0:abort_on_error=0")
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.stopped.Store(false)
}

func (s *server) signal(sig syscall.Signal) {
	if s.cmd != nil && s.cmd.Process != nil {
		syscall.Kill(-s.cmd.Process.Pid, sig)
	}
}

func (s *server) sigstop() { s.signal(syscall.SIGSTOP); s.stopped.Store(true) }
func (s *server) sigcont() { s.signal(syscall.SIGCONT); s.stopped.Store(false) }

// kill: kill -9 and reap.
func (s *server) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.signal(syscall.SIGCONT)
	s.signal(syscall.SIGKILL)
	s.cmd.Wait()
	s.cmd = nil
}

// direct is a client of this one node only.
func (s *server) direct() *fencelock.Client {
	c, err := fencelock.New(fencelock.Options{Endpoints: []string{s.addr()},
		Timeout: 2 * time.Second, Username: s.auth[0], Password: s.auth[1], TLS: s.tls})
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

func clusterInfo(c *fencelock.Client) map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r, err := c.Do(ctx, "CLUSTER.INFO")
	if err != nil {
		return nil
	}
	a, _ := r.([]any)
	m := map[string]string{}
	for i := 0; i+1 < len(a); i += 2 {
		m[fmt.Sprint(a[i])] = fmt.Sprint(a[i+1])
	}
	return m
}

// waitLeader waits (bounded) for exactly one running server to be a ready leader.
func waitLeader(t *testing.T, servers []*server) *server {
	t.Helper()
	end := time.Now().Add(60 * time.Second)
	for time.Now().Before(end) {
		var ls []*server
		for _, s := range servers {
			if s.cmd == nil || s.stopped.Load() {
				continue
			}
			c := s.direct()
			m := clusterInfo(c)
			c.Close()
			if m["role"] == "leader" && m["ready"] == "1" {
				ls = append(ls, s)
			}
		}
		if len(ls) == 1 {
			return ls[0]
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no single ready leader within 60 s")
	return nil
}

// single starts one node and waits until it leads.
func single(t *testing.T, args ...string) *server {
	s := newServer(t, 1, args...)
	s.start()
	waitLeader(t, []*server{s})
	return s
}

var timing = []string{"--election-ms", "400", "--heartbeat-ms", "40"}

// cluster starts n nodes with one --initial-cluster and waits for a ready leader.
func cluster(t *testing.T, n int, args ...string) []*server {
	var ss []*server
	for i := 1; i <= n; i++ {
		ss = append(ss, newServer(t, i))
	}
	var members []string
	for _, s := range ss {
		members = append(members, fmt.Sprintf("%d=127.0.0.1:%d", s.id, s.raftPort))
	}
	for _, s := range ss {
		s.args = append(append([]string{"--initial-cluster", strings.Join(members, ",")}, timing...), args...)
		s.start()
	}
	waitLeader(t, ss)
	return ss
}

func endpoints(ss []*server) []string {
	var a []string
	for _, s := range ss {
		a = append(a, s.addr())
	}
	return a
}

func newClient(t *testing.T, opts fencelock.Options) *fencelock.Client {
	t.Helper()
	c, err := fencelock.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond every 20 ms up to a generous bound.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v", what, d)
}
