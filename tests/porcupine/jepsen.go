// SPDX-License-Identifier: Apache-2.0

// jepsen.go: Porcupine's labelled Jepsen etcd histories (test_data/jepsen/etcd_NNN.log in its
// module) as torture histories, so that both judges read the same file.
//
// A Jepsen log line is "INFO  jepsen.util - PROC<TAB>:TYPE<TAB>:F<TAB>VALUE" with TYPE invoke,
// ok, fail or info and F read (value nil, or the value read), write (the value) or cas
// ([expected new]). There are no timestamps: the line number (times 10) is the time, so the
// order of the lines is the real-time order. Values become strings; a read of nil is null (the
// key absent, the register's initial value). A read that failed (timed out) is a read with an
// unknown answer: both judges drop it. Everything is workload "register", key "jepsen".
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
)

var jepsenLine = regexp.MustCompile(
	`^INFO\s+jepsen\.util\s+-\s+(\d+)\s+:(invoke|ok|fail|info)\s+:(read|write|cas)\s*(.*)$`)
var jepsenPair = regexp.MustCompile(`^\[(-?\d+)\s+(-?\d+)\]$`)

// TranslateJepsenEtcd writes the history of a Jepsen etcd log.
func TranslateJepsenEtcd(logPath, out string) error {
	in, err := os.Open(logPath)
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(o)
	sc := bufio.NewScanner(in)
	n := 0
	for sc.Scan() {
		n++
		m := jepsenLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue // jepsen's other log lines (nemesis, setup)
		}
		proc, _ := strconv.ParseInt(m[1], 10, 64)
		typ, f, arg := m[2], m[3], m[4]
		ev := map[string]interface{}{"proc": proc, "type": typ, "f": f,
			"workload": "register", "key": "jepsen", "time": int64(n) * 10}
		// the arguments of an invoke, the value of an ok read; a completion's other
		// arguments repeat the invoke's, or say why it failed (":timed-out")
		switch {
		case f == "read" && typ == "ok":
			if arg == "nil" {
				ev["value"] = nil
			} else {
				ev["value"] = arg
			}
		case f == "write" && typ == "invoke":
			ev["value"] = arg
		case f == "cas" && typ == "invoke":
			p := jepsenPair.FindStringSubmatch(arg)
			if p == nil {
				return fmt.Errorf("%s:%d: cas argument %q is not [expected new]", logPath, n, arg)
			}
			ev["expected"], ev["value"] = p[1], p[2]
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		w.Write(append(b, '\n'))
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return o.Close()
}
