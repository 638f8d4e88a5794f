// SPDX-License-Identifier: Apache-2.0

// history.go: reading a torture history (tests/torture/HISTORY.md) into Porcupine operations.
//
// It owns the pairing of invoke and completion events into one op each and the outcome of each
// op: ok and fail are known, info (and an invoke never completed) are unknown. An unknown op is
// given Porcupine's treatment: it may take effect at any time after its call, so its return is
// Infinity (math.MaxInt64), later than every other event. The models (models.go) decide what
// an unknown op may do; this file only says that its outcome is unknown.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
)

// Infinity is the return time of an op whose outcome is unknown.
const Infinity = int64(math.MaxInt64)

// Outcome of an op as the client saw it.
type Outcome byte

const (
	Ok      Outcome = 'o' // took effect, the answer is in the completion
	Fail    Outcome = 'f' // a definite refusal: it did not take effect
	Unknown Outcome = 'u' // info, or never completed: it may take effect at any time
)

// nval is a register value: a string or null (an absent key).
type nval struct {
	null bool
	s    string
}

func (v nval) String() string {
	if v.null {
		return "null"
	}
	return fmt.Sprintf("%q", v.s)
}

// event is one line of the history, with only the fields the models read.
type event struct {
	Proc     *int64          `json:"proc"`
	Type     string          `json:"type"`
	F        string          `json:"f"`
	Workload string          `json:"workload"`
	Time     json.Number     `json:"time"`
	Key      *string         `json:"key"`
	Value    json.RawMessage `json:"value"`
	Expected json.RawMessage `json:"expected"`
	Session  *int64          `json:"session"`
	Token    *int64          `json:"token"`
	Mode     string          `json:"mode"`

	line int
	t    int64
}

// Op is one operation: the Input and Output of a Porcupine Operation (the same pointer; the
// models never modify it).
type Op struct {
	F        string // read write cas acquire release expire check final end
	Workload string
	Key      string
	Owner    int64 // the session (or, without one, -(proc+1)): who holds a lock
	Token    int64 // acquire ok: the grant's; write/check: the one presented; 0: none/unknown
	Mode     string
	Val      nval  // register: read result, written value
	Exp      nval  // register: cas expected
	Num      int64 // counter: read result, written value
	Outcome  Outcome
	Proc     int64
	Line     int    // the invoke's line in the history (0: added by this program)
	Synth    string // why this program added the op ("" for recorded ops)
	Call     int64
	Ret      int64
}

// History is a torture history split by workload.
type History struct {
	Ops    map[string][]*Op // by workload
	Finals map[string]int64 // the final counter values
	MaxT   int64            // the latest finite time in the history
}

func parseValue(raw json.RawMessage) (nval, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nval{null: true}, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return nval{s: s}, nil
	}
	// a number (the counters write integers): its text is the value
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return nval{}, fmt.Errorf("value %s is neither a string, a number nor null", raw)
	}
	return nval{s: n.String()}, nil
}

func parseNum(raw json.RawMessage) (int64, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, nil // a counter never written reads as 0
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("counter value %s is not an integer", raw)
	}
	return n, nil
}

// LoadHistory reads a history file. Events are paired as tests/torture/HISTORY.md says: a
// completion completes the latest pending invoke of its proc with the same f (else the
// latest pending invoke of the proc: an expire is dated back, so it may overlap the proc's
// later ops); at one timestamp, completions of earlier invokes come before the invokes.
func LoadHistory(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var evs []*event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var e event
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%s:%d: not a JSON object: %v", path, line, err)
		}
		t, err := e.Time.Int64()
		if err != nil {
			return nil, fmt.Errorf("%s:%d: missing or non-integer \"time\"", path, line)
		}
		e.t, e.line = t, line
		evs = append(evs, &e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return pair(evs)
}

func pair(evs []*event) (*History, error) {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	h := &History{Ops: map[string][]*Op{}, Finals: map[string]int64{}}
	type pend struct {
		inv *event
		op  *Op
	}
	pending := map[int64][]pend{}
	complete := func(e *event, strict bool) (bool, error) {
		lst := pending[*e.Proc]
		if len(lst) == 0 {
			if strict {
				return false, fmt.Errorf("line %d: a completion without an invoke", e.line)
			}
			return false, nil
		}
		pick := -1
		for j := len(lst) - 1; j >= 0; j-- {
			if lst[j].inv.F == e.F {
				pick = j
				break
			}
		}
		if pick < 0 {
			if !strict {
				return false, nil
			}
			pick = len(lst) - 1
		}
		p := lst[pick]
		pending[*e.Proc] = append(lst[:pick], lst[pick+1:]...)
		return true, finish(p.op, p.inv, e)
	}
	for i := 0; i < len(evs); {
		j := i
		for j < len(evs) && evs[j].t == evs[i].t {
			j++
		}
		group := evs[i:j]
		i = j
		var later []*event
		for _, e := range group {
			if e.t > h.MaxT {
				h.MaxT = e.t
			}
			switch e.Type {
			case "invoke":
			case "final":
				n, err := parseNum(e.Value)
				if err != nil {
					return nil, fmt.Errorf("line %d: %v", e.line, err)
				}
				h.Finals[e.Workload] = n
				h.Ops[e.Workload] = append(h.Ops[e.Workload], &Op{F: "final",
					Workload: e.Workload, Num: n, Outcome: Ok, Proc: -1, Line: e.line,
					Call: e.t, Ret: e.t})
			case "ok", "fail", "info":
				if e.Proc == nil {
					return nil, fmt.Errorf("line %d: a completion without \"proc\"", e.line)
				}
				done, err := complete(e, false)
				if err != nil {
					return nil, err
				}
				if !done {
					later = append(later, e)
				}
			default:
				return nil, fmt.Errorf("line %d: unknown event type %q", e.line, e.Type)
			}
		}
		for _, e := range group {
			if e.Type != "invoke" {
				continue
			}
			if e.Proc == nil {
				return nil, fmt.Errorf("line %d: an invoke without \"proc\"", e.line)
			}
			op, err := start(e)
			if err != nil {
				return nil, err
			}
			pending[*e.Proc] = append(pending[*e.Proc], pend{e, op})
			h.Ops[op.Workload] = append(h.Ops[op.Workload], op)
		}
		for _, e := range later {
			if _, err := complete(e, true); err != nil {
				return nil, err
			}
		}
	}
	return h, nil
}

// start makes the op of an invoke, pending (unknown) until a completion says otherwise.
func start(e *event) (*Op, error) {
	op := &Op{F: e.F, Workload: e.Workload, Mode: e.Mode, Outcome: Unknown, Proc: *e.Proc,
		Line: e.line, Call: e.t, Ret: Infinity}
	if e.Key != nil {
		op.Key = *e.Key
	}
	op.Owner = -(*e.Proc + 1)
	if e.Session != nil {
		op.Owner = *e.Session
	}
	if e.Token != nil {
		op.Token = *e.Token
	}
	var err error
	switch {
	case e.Workload == "register" && (e.F == "write" || e.F == "cas"):
		if op.Val, err = parseValue(e.Value); err == nil && e.F == "cas" {
			op.Exp, err = parseValue(e.Expected)
		}
	case e.F == "write":
		if e.Workload == "fenced-counter" || e.Workload == "control" {
			op.Num, err = parseNum(e.Value)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("line %d: %v", e.line, err)
	}
	return op, nil
}

// finish completes op with its completion event c (inv is its invoke).
func finish(op *Op, inv, c *event) error {
	switch c.Type {
	case "ok":
		op.Outcome, op.Ret = Ok, c.t
	case "fail":
		op.Outcome, op.Ret = Fail, c.t
	default:
		return nil // info: unknown, return Infinity
	}
	if c.Session != nil && inv.Session == nil {
		op.Owner = *c.Session
	}
	if op.Outcome != Ok {
		return nil
	}
	var err error
	switch {
	case op.F == "acquire" && c.Token != nil:
		op.Token = *c.Token
	case op.F == "read" && op.Workload == "register":
		op.Val, err = parseValue(c.Value)
	case op.F == "read":
		op.Num, err = parseNum(c.Value)
	}
	if err != nil {
		return fmt.Errorf("line %d: %v", c.line, err)
	}
	return nil
}
