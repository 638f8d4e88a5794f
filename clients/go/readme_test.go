// SPDX-License-Identifier: Apache-2.0

package fencelock_test

// The README's example runs as written: its first ```go block is built as a program of its
// own (this module replacing the published one, no network) and run against a node.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fencelock "github.com/fencelock/fencelock-go"
)

func TestReadmeExampleRuns(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```go\n")
	src, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatal("README.md has no ```go block")
	}
	here, _ := os.Getwd()
	dir := t.TempDir()
	mod := "module example\n\ngo 1.22\n\nrequire github.com/fencelock/fencelock-go v0.0.0\n\n" +
		"replace github.com/fencelock/fencelock-go => " + here + "\n"
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o600)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o600)

	s := single(t)
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FENCELOCK_ENDPOINTS="+s.addr(), "GOFLAGS=-mod=mod",
		"GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's example: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "sold one under token") {
		t.Fatalf("the README's example printed:\n%s", out)
	}
	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	kv, err := c.Get(ctxFor(t, 10*time.Second), "stock")
	if err != nil || kv.Value != "99" {
		t.Fatalf("stock after the example: %+v %v", kv, err)
	}
}
