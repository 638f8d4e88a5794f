// SPDX-License-Identifier: Apache-2.0

// porcupine-check: a second, independent judge of a fencelock torture history.
//
//	porcupine-check [-timeout 120s] [-out DIR] [-json FILE] [-expect-illegal control] HISTORY
//	porcupine-check -from-jepsen-etcd LOG -to HISTORY      (translate, then exit)
//
// It checks the history (tests/torture/HISTORY.md) for linearizability with Porcupine
// (github.com/anishathalye/porcupine) against three models (models.go): the KV register per key
// (workload register), the mutex with fencing (mutex, fenced-counter, control) and the
// read-write lock (rw). It prints one line per workload,
//
//	porcupine: WORKLOAD (MODEL model): ok|illegal|unknown (N ops, P partitions, S s)
//
// writes the verdicts as JSON (default DIR/porcupine.json) and, for every illegal one,
// Porcupine's HTML visualisation, DIR/porcupine-WORKLOAD[-KEY].html (DIR: the history's
// folder). -timeout bounds each workload's search; a search that runs out says "unknown".
//
// Exit status: 0 when every verdict is ok (a workload named by -expect-illegal may be
// illegal: the unfenced control is judged by the fenced model and must fail it), 1 when one is
// illegal, 3 when none is illegal but one is unknown, 2 when the history cannot be read.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Verdict is one workload's result, as written to the JSON file.
type Verdict struct {
	Workload   string   `json:"workload"`
	Model      string   `json:"model"`
	Result     string   `json:"result"` // ok, illegal, unknown
	Expected   string   `json:"expected,omitempty"`
	Ops        int      `json:"ops"`
	Unknown    int      `json:"unknown_outcome_ops"`
	Added      int      `json:"added_ops"`
	Partitions int      `json:"partitions"`
	Failed     []string `json:"failed_partitions,omitempty"`
	HTML       []string `json:"html,omitempty"`
	Seconds    float64  `json:"seconds"`
	Note       string   `json:"note,omitempty"`
}

// Report is the JSON file.
type Report struct {
	History   string    `json:"history"`
	TimeoutS  float64   `json:"timeout_s"`
	Porcupine string    `json:"porcupine"`
	Verdicts  []Verdict `json:"verdicts"`
}

const porcupineVersion = "v1.3.1"

func main() {
	os.Exit(run())
}

func run() int {
	timeout := flag.Duration("timeout", 120*time.Second,
		"search bound per workload (a search that runs out is \"unknown\")")
	outDir := flag.String("out", "", "folder of the HTML files (default: the history's)")
	jsonPath := flag.String("json", "", "verdicts file (default: OUT/porcupine.json)")
	expect := flag.String("expect-illegal", "control",
		"workloads whose history must fail its model (comma-separated)")
	jepsen := flag.String("from-jepsen-etcd", "", "a Jepsen etcd log to translate (with -to)")
	to := flag.String("to", "", "the history file -from-jepsen-etcd writes")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: porcupine-check [flags] HISTORY.jsonl\n"+
			"       porcupine-check -from-jepsen-etcd LOG -to HISTORY.jsonl")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *jepsen != "" {
		if *to == "" || flag.NArg() != 0 {
			flag.Usage()
			return 2
		}
		if err := TranslateJepsenEtcd(*jepsen, *to); err != nil {
			fmt.Fprintln(os.Stderr, "porcupine-check:", err)
			return 2
		}
		return 0
	}
	if flag.NArg() != 1 {
		flag.Usage()
		return 2
	}
	path := flag.Arg(0)
	if *outDir == "" {
		*outDir = filepath.Dir(path)
	}
	if *jsonPath == "" {
		*jsonPath = filepath.Join(*outDir, "porcupine.json")
	}
	expected := map[string]bool{}
	for _, w := range strings.Split(*expect, ",") {
		if w = strings.TrimSpace(w); w != "" {
			expected[w] = true
		}
	}
	h, err := LoadHistory(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "porcupine-check:", err)
		return 2
	}
	var workloads []string
	for w := range h.Ops {
		if modelOf(w) != "" {
			workloads = append(workloads, w)
		}
	}
	sort.Strings(workloads)
	rep := Report{History: path, TimeoutS: timeout.Seconds(), Porcupine: porcupineVersion}
	status := 0
	for _, w := range workloads {
		v, err := checkWorkload(w, h, *timeout, *outDir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "porcupine-check: %s: %v\n", w, err)
			return 2
		}
		if expected[w] {
			v.Expected = "illegal"
		}
		rep.Verdicts = append(rep.Verdicts, v)
		printVerdict(v)
		switch {
		case v.Result == "illegal" && !expected[w]:
			status = 1
		case v.Result == "unknown" && status == 0:
			status = 3
		}
	}
	if err := writeJSON(*jsonPath, rep); err != nil {
		fmt.Fprintln(os.Stderr, "porcupine-check:", err)
		return 2
	}
	return status
}

func printVerdict(v Verdict) {
	extra := ""
	if v.Expected != "" {
		if v.Result == "illegal" {
			extra = " (expected: a negative control)"
		} else {
			extra = " (a negative control: expected illegal)"
		}
	}
	fmt.Printf("porcupine: %s (%s model): %s%s (%d ops, %d of unknown outcome, %d added, "+
		"%d partitions, %.2f s)\n", v.Workload, v.Model, v.Result, extra, v.Ops, v.Unknown,
		v.Added, v.Partitions, v.Seconds)
	for _, f := range v.HTML {
		fmt.Printf("porcupine: %s: visualisation %s\n", v.Workload, f)
	}
	if v.Note != "" {
		fmt.Printf("porcupine: %s: %s\n", v.Workload, v.Note)
	}
}

func writeJSON(path string, rep Report) error {
	b, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func resultText(r porcupine.CheckResult) string {
	switch r {
	case porcupine.Ok:
		return "ok"
	case porcupine.Illegal:
		return "illegal"
	}
	return "unknown"
}

func modelFor(name string) porcupine.Model {
	switch name {
	case "register":
		return RegisterModel()
	case "mutex":
		return LockModel()
	}
	return RWModel()
}

// checkWorkload judges one workload; on "illegal" it finds the failing partitions again, with
// the visualisation's bookkeeping, and writes one HTML file for each.
func checkWorkload(w string, h *History, timeout time.Duration, outDir string) (Verdict, error) {
	name := modelOf(w)
	ops, unknownF := Operations(name, h.Ops[w], h.MaxT)
	if len(unknownF) > 0 {
		return Verdict{}, fmt.Errorf("operations this model does not know: %v", unknownF)
	}
	model := modelFor(name)
	v := Verdict{Workload: w, Model: name}
	for _, o := range ops {
		op := o.Input.(*Op)
		switch {
		case op.Line == 0:
			v.Added++
		case op.Outcome == Unknown:
			v.Ops++
			v.Unknown++
		default:
			v.Ops++
		}
	}
	parts := [][]porcupine.Operation{ops}
	if model.Partition != nil {
		parts = model.Partition(ops)
	}
	v.Partitions = len(parts)
	started := time.Now()
	res := porcupine.CheckOperationsTimeout(model, ops, timeout)
	v.Result = resultText(res)
	if res == porcupine.Illegal {
		// again per partition, keeping what the visualisation needs, within what is left
		for _, p := range parts {
			left := timeout - time.Since(started)
			if left <= 0 {
				v.Note = "no time left for the visualisation"
				break
			}
			single := model
			single.Partition = nil
			r, info := porcupine.CheckOperationsVerbose(single, p, left)
			if r != porcupine.Illegal {
				continue
			}
			label := w
			if model.Partition != nil {
				label = w + "-" + p[0].Input.(*Op).Key
				v.Failed = append(v.Failed, p[0].Input.(*Op).Key)
			}
			file := filepath.Join(outDir, "porcupine-"+sanitize(label)+".html")
			if err := porcupine.VisualizePath(single, info, file); err != nil {
				v.Note = "visualisation: " + err.Error()
				continue
			}
			v.HTML = append(v.HTML, file)
		}
	}
	v.Seconds = time.Since(started).Seconds()
	return v, nil
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' ||
			r == '_' {
			return r
		}
		return '_'
	}, s)
}
