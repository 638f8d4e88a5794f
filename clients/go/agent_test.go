// SPDX-License-Identifier: Apache-2.0

package fencelock_test

// The conformance agent (cmd/fencelock-agent), built and driven over its stdin and stdout as
// the harness of tests/conformance drives it (PROTOCOL.md): every operation, the error words,
// concurrent requests, the watch and lost events, quit.

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

type agentProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	mu     sync.Mutex
	cond   *sync.Cond
	lines  []map[string]any
	id     int
	closed bool
}

func buildAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fencelock-agent")
	out, err := exec.Command("go", "build", "-o", bin, "./cmd/fencelock-agent").CombinedOutput()
	if err != nil {
		t.Fatalf("go build the agent: %v\n%s", err, out)
	}
	return bin
}

func startAgent(t *testing.T, bin string, env ...string) *agentProc {
	a := &agentProc{t: t, cmd: exec.Command(bin)}
	a.cond = sync.NewCond(&a.mu)
	a.cmd.Env = append(os.Environ(), env...)
	a.cmd.Stderr = os.Stderr
	a.in, _ = a.cmd.StdinPipe()
	out, _ := a.cmd.StdoutPipe()
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.cmd.Process.Kill(); a.cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("agent wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			a.mu.Lock()
			a.lines = append(a.lines, m)
			a.cond.Broadcast()
			a.mu.Unlock()
		}
		a.mu.Lock()
		a.closed = true
		a.cond.Broadcast()
		a.mu.Unlock()
	}()
	return a
}

// wait returns the first line (removed) that match accepts, within 60 s.
func (a *agentProc) wait(what string, match func(map[string]any) bool) map[string]any {
	a.t.Helper()
	end := time.Now().Add(60 * time.Second)
	timer := time.AfterFunc(60*time.Second, func() { a.mu.Lock(); a.cond.Broadcast(); a.mu.Unlock() })
	defer timer.Stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		for i, m := range a.lines {
			if match(m) {
				a.lines = append(a.lines[:i], a.lines[i+1:]...)
				return m
			}
		}
		if a.closed || time.Now().After(end) {
			a.t.Fatalf("agent: no %s (lines: %v)", what, a.lines)
		}
		a.cond.Wait()
	}
}

func (a *agentProc) send(op string, args map[string]any) int {
	a.mu.Lock()
	a.id++
	id := a.id
	a.mu.Unlock()
	req := map[string]any{"id": id, "op": op}
	for k, v := range args {
		req[k] = v
	}
	b, _ := json.Marshal(req)
	a.in.Write(append(b, '\n'))
	return id
}

func (a *agentProc) reply(id int) map[string]any {
	a.t.Helper()
	return a.wait("reply to request "+strconv.Itoa(id), func(m map[string]any) bool {
		n, ok := m["id"].(float64)
		return ok && int(n) == id
	})
}

// call sends a request and returns its reply, which must be ok (or fail with word).
func (a *agentProc) call(op string, args map[string]any, word string) map[string]any {
	a.t.Helper()
	r := a.reply(a.send(op, args))
	if word == "" && r["ok"] != true {
		a.t.Fatalf("%s %v: %v", op, args, r)
	}
	if word != "" && (r["ok"] != false || r["error"] != word) {
		a.t.Fatalf("%s %v: %v, want error %s", op, args, r, word)
	}
	return r
}

func event(kind string, more func(map[string]any) bool) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["event"] == kind && (more == nil || more(m)) }
}

type M = map[string]any

func TestAgentProtocol(t *testing.T) {
	bin := buildAgent(t)
	s := single(t)
	a := startAgent(t, bin, "FL_ENDPOINTS="+s.addr(), "FL_TIMEOUT=5")
	if r := a.wait("ready", func(m M) bool { _, ok := m["ready"]; return ok }); r["ready"] != true || r["client"] != "go" {
		t.Fatalf("ready line: %v", r)
	}
	s1 := a.call("session.open", M{"ttl": 10.0, "name": "one"}, "")["session"]
	s2 := a.call("session.open", M{"ttl": 10.0}, "")["session"]
	tok := a.call("lock", M{"session": s1, "name": "a", "wait": 5.0}, "")["token"].(float64)
	a.call("lock", M{"session": s2, "name": "a", "wait": 0}, "BUSY")
	a.call("lock", M{"session": s2, "name": "a", "wait": 0.3}, "TIMEOUT")
	a.call("fence.check", M{"name": "a", "token": tok}, "")
	rev := a.call("put", M{"key": "k", "value": "v1", "session": s1, "fence": []any{"a", tok}}, "")["rev"]
	g := a.call("get", M{"key": "k"}, "")
	if g["value"] != "v1" || g["mod_rev"] != rev || g["version"] != 1.0 {
		t.Fatalf("get: %v (put rev %v)", g, rev)
	}
	a.call("put", M{"key": "k", "value": "v2", "ifrev": 1.0}, "IFREV")
	a.call("get", M{"key": "nokey"}, "NOTFOUND")
	a.call("unlock", M{"session": s1, "name": "a"}, "")
	a.call("unlock", M{"session": s1, "name": "a"}, "NOTHOLDER")
	a.call("put", M{"key": "k", "value": "v3", "fence": []any{"a", tok}}, "STALE")
	a.call("fence.check", M{"name": "a", "token": tok}, "STALE")

	// a waiting lock does not delay a later request
	a.call("lock", M{"session": s1, "name": "b", "wait": 5.0}, "")
	waiting := a.send("lock", M{"session": s2, "name": "b", "wait": 30.0})
	safe := a.call("session.safe", M{"session": s1}, "")
	if safe["lost"] != false || safe["remaining_ms"].(float64) <= 0 {
		t.Fatalf("session.safe: %v", safe)
	}
	a.call("unlock", M{"session": s1, "name": "b"}, "")
	if r := a.reply(waiting); r["ok"] != true || r["token"].(float64) <= tok {
		t.Fatalf("the waiting lock: %v", r)
	}

	// watch
	w := a.call("watch.start", M{"prefix": "w"}, "")["watch"]
	a.call("put", M{"key": "w1", "value": "x"}, "")
	ev := a.wait("watch event", event("watch", func(m M) bool { return m["watch"] == w }))
	if ev["type"] != "put" || ev["name"] != "w1" {
		t.Fatalf("watch event: %v", ev)
	}
	last := a.call("watch.stop", M{"watch": w}, "")["last"]
	end := a.wait("watch_end", event("watch_end", nil))
	if last != ev["id"] || end["last"] != ev["id"] || end["error"] != nil {
		t.Fatalf("watch.stop last %v, watch_end %v, event %v", last, end, ev)
	}

	// elections and semaphores
	et := a.call("elect.campaign", M{"session": s1, "name": "e", "value": "x", "wait": 2.0}, "")["token"]
	l := a.call("elect.leader", M{"name": "e"}, "")
	if l["value"] != "x" || l["token"] != et {
		t.Fatalf("elect.leader: %v", l)
	}
	o := a.call("elect.observe", M{"name": "e", "wait": 1.0}, "")
	a.call("elect.observe", M{"name": "e", "after_rev": o["rev"], "wait": 0.2}, "TIMEOUT")
	a.call("elect.campaign", M{"session": s2, "name": "e", "value": "y", "wait": 0}, "BUSY")
	a.call("elect.resign", M{"session": s1, "name": "e"}, "")
	a.call("elect.leader", M{"name": "e"}, "NOTFOUND")
	a.call("sem.acquire", M{"session": s2, "name": "p", "limit": 1.0, "wait": 1.0}, "")
	a.call("sem.acquire", M{"session": s1, "name": "p", "limit": 1.0, "wait": 0}, "BUSY")
	a.call("lock", M{"session": s1, "name": "p", "wait": 0}, "WRONGTYPE")
	a.call("sem.release", M{"session": s2, "name": "p"}, "")

	// close is not a loss; a lost session reports one event
	a.call("session.close", M{"session": s2}, "")
	a.call("lock", M{"session": s2, "name": "z", "wait": 0}, "SESSION")
	s3 := a.call("session.open", M{"ttl": 1.5}, "")["session"]
	s.sigstop()
	lost := a.wait("lost event", event("lost", nil))
	s.sigcont()
	if lost["session"] != s3 || lost["mono_ms"] == nil || lost["wall_ms"].(float64) < float64(time.Now().Add(-time.Minute).UnixMilli()) {
		t.Fatalf("lost event: %v", lost)
	}
	if r := a.call("session.safe", M{"session": s3}, ""); r["lost"] != true || r["remaining_ms"].(float64) > 0 {
		t.Fatalf("session.safe of a lost session: %v", r)
	}
	a.call("quit", nil, "")
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("agent exit: %v", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range a.lines {
		if m["event"] == "lost" {
			t.Fatalf("a lost event for a session that was not lost: %v", m)
		}
	}
}

func TestAgentNotReady(t *testing.T) {
	bin := buildAgent(t)
	a := startAgent(t, bin, "FL_ENDPOINTS=127.0.0.1:1", "FL_TLS_CA="+filepath.Join(t.TempDir(), "missing.pem"))
	r := a.wait("ready", func(m M) bool { _, ok := m["ready"]; return ok })
	if r["ready"] != false || r["error"] == nil || !strings.Contains(r["message"].(string), "missing.pem") {
		t.Fatalf("ready line: %v", r)
	}
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("agent exit: %v", err)
	}
}
