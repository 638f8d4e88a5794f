// SPDX-License-Identifier: Apache-2.0

// models.go: the Porcupine models of fencelock's register, mutex with fencing and read-write
// lock, and how a workload's ops become a Porcupine history.
//
// Unknown outcomes. An op whose outcome is unknown (info, or no completion) has return
// Infinity: Porcupine may linearize it anywhere after its call, also after every other op.
// Each model also gets one op "end" at a time later than every finite time: every op with a
// known outcome comes before it, and after it the state is closed, where only unknown ops may
// still be linearized and change nothing (the op never took effect). Before "end" an unknown
// op is legal only where it changes the state (an acquire that grants, a cas whose expected
// value is there, an expire of the holder): one that would change nothing at some point is
// the same as one that never took effect, which "end" already allows. That is exact for these
// deterministic models and keeps the search from trying every unknown op at every point as a
// no-op (2^n configurations when the history is illegal).
//
// States are comparable structs (Porcupine's default == equality); Step never modifies its
// arguments.
package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// ---- the KV register (workload register, one partition per key) ----

type regState struct {
	closed bool
	v      nval
}

func regStep(state, input, _ interface{}) (bool, interface{}) {
	s := state.(regState)
	op := input.(*Op)
	if op.F == "end" {
		return true, regState{closed: true}
	}
	if s.closed {
		return op.Outcome == Unknown, s
	}
	switch op.F {
	case "read":
		return s.v == op.Val, s
	case "write":
		return true, regState{v: op.Val}
	case "cas":
		switch op.Outcome {
		case Fail: // IFREV refused: the register did not hold the expected value
			return s.v != op.Exp, s
		default: // ok, or unknown where it can take effect
			if s.v != op.Exp {
				return false, s
			}
			return true, regState{v: op.Val}
		}
	}
	return false, s
}

// RegisterModel: reads see the last write; a cas applies iff the register holds its expected
// value, and a failed cas (-IFREV) says it did not. The initial value is null (no key).
func RegisterModel() porcupine.Model {
	return porcupine.Model{
		Partition: partitionByKey,
		Init:      func() interface{} { return regState{v: nval{null: true}} },
		Step:      regStep,
		DescribeOperation: func(input, _ interface{}) string {
			op := input.(*Op)
			switch op.F {
			case "read":
				return fmt.Sprintf("read() -> %v", op.Val)
			case "write":
				return fmt.Sprintf("write(%v)%s", op.Val, outcomeSuffix(op))
			case "cas":
				return fmt.Sprintf("cas(%v, %v)%s", op.Exp, op.Val, outcomeSuffix(op))
			}
			return op.F
		},
		DescribeState: func(state interface{}) string {
			s := state.(regState)
			if s.closed {
				return "(end of history)"
			}
			return s.v.String()
		},
		DescribeOperationMetadata: describeMeta,
	}
}

// partitionByKey: one partition per register key, each with its own "end".
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	var keys []string
	var ends []porcupine.Operation
	for _, o := range history {
		op := o.Input.(*Op)
		if op.F == "end" {
			ends = append(ends, o)
			continue
		}
		if _, ok := byKey[op.Key]; !ok {
			keys = append(keys, op.Key)
		}
		byKey[op.Key] = append(byKey[op.Key], o)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, append(byKey[k], ends...))
	}
	return out
}

// ---- the mutex with fencing (workloads mutex, fenced-counter, control) ----

// lockState: owner 0 is a free lock; token 0 an unknown one (a grant whose answer was lost);
// last the highest token granted; num the counter the holders increment.
type lockState struct {
	closed bool
	owner  int64
	token  int64
	last   int64
	num    int64
}

func lockStep(state, input, _ interface{}) (bool, interface{}) {
	s := state.(lockState)
	op := input.(*Op)
	if op.F == "end" {
		return true, lockState{closed: true}
	}
	if s.closed {
		return op.Outcome == Unknown, s
	}
	known := op.Outcome == Ok
	switch op.F {
	case "acquire":
		if !known { // unknown: a grant (token unknown) where the lock is free
			if s.owner != 0 {
				return false, s
			}
			s.owner, s.token = op.Owner, 0
			return true, s
		}
		if s.owner == op.Owner { // LOCK by the holder answers its token
			if s.token == op.Token {
				return true, s
			}
			if s.token != 0 || op.Token <= s.last {
				return false, s
			}
			s.token, s.last = op.Token, op.Token
			return true, s
		}
		// no two overlapping holds; every grant takes a fresh, higher token
		if s.owner != 0 || op.Token <= s.last {
			return false, s
		}
		s.owner, s.token, s.last = op.Owner, op.Token, op.Token
		return true, s
	case "release", "expire":
		if s.owner == op.Owner {
			s.owner, s.token = 0, 0
			return true, s
		}
		// an acknowledged UNLOCK comes from the holder; an expiry confirmed by LOCK.INFO
		// may find the session's hold already gone
		return op.F == "expire" && known, s
	case "write":
		// a fenced write applies only with the current holder's token
		if s.owner == 0 || s.token == 0 || s.token != op.Token {
			return false, s
		}
		s.num = op.Num
		return true, s
	case "read", "final":
		return s.num == op.Num, s
	}
	return false, s
}

// LockModel: one lock, its fencing token and the counter the holders write under it.
func LockModel() porcupine.Model {
	return porcupine.Model{
		Init: func() interface{} { return lockState{} },
		Step: lockStep,
		DescribeOperation: func(input, _ interface{}) string {
			op := input.(*Op)
			switch op.F {
			case "acquire":
				if op.Outcome == Ok {
					return fmt.Sprintf("acquire(s%d) -> token %d", op.Owner, op.Token)
				}
				return fmt.Sprintf("acquire(s%d) -> unknown", op.Owner)
			case "release", "expire":
				return fmt.Sprintf("%s(s%d)%s", op.F, op.Owner, outcomeSuffix(op))
			case "write":
				return fmt.Sprintf("write(%d, token %d)%s", op.Num, op.Token, outcomeSuffix(op))
			case "read", "final":
				return fmt.Sprintf("%s() -> %d", op.F, op.Num)
			}
			return op.F
		},
		DescribeState: func(state interface{}) string {
			s := state.(lockState)
			if s.closed {
				return "(end of history)"
			}
			h := "free"
			if s.owner != 0 {
				h = fmt.Sprintf("held by s%d, token %s", s.owner, tokenText(s.token))
			}
			return fmt.Sprintf("%s; last token %d; counter %d", h, s.last, s.num)
		},
		DescribeOperationMetadata: describeMeta,
	}
}

// ---- the read-write lock (workload rw) ----

// RWMaxHolders bounds the holders a state can list; more is reported as a model error.
const RWMaxHolders = 32

type rwHolder struct {
	sid   int64
	token int64 // 0: unknown (a grant whose answer was lost)
	excl  bool
}

// rwState: the holders sorted by sid, either one exclusive or any number shared.
type rwState struct {
	closed bool
	last   int64
	n      int
	h      [RWMaxHolders]rwHolder
}

func (s *rwState) find(sid int64) int {
	for i := 0; i < s.n; i++ {
		if s.h[i].sid == sid {
			return i
		}
	}
	return -1
}

func (s *rwState) exclusive() bool { return s.n > 0 && s.h[0].excl }

func (s *rwState) add(x rwHolder) bool {
	if s.n == RWMaxHolders {
		return false
	}
	i := s.n
	for i > 0 && s.h[i-1].sid > x.sid {
		s.h[i] = s.h[i-1]
		i--
	}
	s.h[i] = x
	s.n++
	return true
}

func (s *rwState) remove(i int) {
	copy(s.h[i:s.n-1], s.h[i+1:s.n])
	s.n--
	s.h[s.n] = rwHolder{}
}

func rwStep(state, input, _ interface{}) (bool, interface{}) {
	s := state.(rwState) // a copy: the array is a value
	op := input.(*Op)
	if op.F == "end" {
		return true, rwState{closed: true}
	}
	if s.closed {
		return op.Outcome == Unknown, s
	}
	known := op.Outcome == Ok
	excl := op.Mode == "exclusive"
	switch op.F {
	case "acquire":
		i := s.find(op.Owner)
		if i >= 0 { // a holder asking again gets its token, in its mode
			if !known || s.h[i].excl != excl {
				return false, s
			}
			if s.h[i].token == op.Token {
				return true, s
			}
			if s.h[i].token != 0 || op.Token <= s.last {
				return false, s
			}
			s.h[i].token, s.last = op.Token, op.Token
			return true, s
		}
		// one exclusive holder or any number of shared ones, never both
		if s.exclusive() || (excl && s.n > 0) {
			return false, s
		}
		x := rwHolder{sid: op.Owner, excl: excl}
		if known {
			if op.Token <= s.last {
				return false, s
			}
			x.token, s.last = op.Token, op.Token
		}
		return s.add(x), s
	case "release", "expire":
		if i := s.find(op.Owner); i >= 0 {
			s.remove(i)
			return true, s
		}
		return op.F == "expire" && known, s
	case "check": // FENCE.CHECK: any current holder's token
		for i := 0; i < s.n; i++ {
			if s.h[i].token == op.Token && op.Token != 0 {
				return true, s
			}
		}
		return false, s
	case "write": // a fenced write: only the exclusive holder's token
		return s.exclusive() && s.h[0].token == op.Token && op.Token != 0, s
	}
	return false, s
}

// RWModel: the read-write lock "rw" with FENCE.CHECK and fenced writes.
func RWModel() porcupine.Model {
	return porcupine.Model{
		Init: func() interface{} { return rwState{} },
		Step: rwStep,
		DescribeOperation: func(input, _ interface{}) string {
			op := input.(*Op)
			switch op.F {
			case "acquire":
				if op.Outcome == Ok {
					return fmt.Sprintf("acquire(s%d, %s) -> token %d", op.Owner, op.Mode, op.Token)
				}
				return fmt.Sprintf("acquire(s%d, %s) -> unknown", op.Owner, op.Mode)
			case "release", "expire":
				return fmt.Sprintf("%s(s%d)%s", op.F, op.Owner, outcomeSuffix(op))
			case "check", "write":
				return fmt.Sprintf("%s(token %d) -> ok", op.F, op.Token)
			}
			return op.F
		},
		DescribeState: func(state interface{}) string {
			s := state.(rwState)
			if s.closed {
				return "(end of history)"
			}
			var parts []string
			for i := 0; i < s.n; i++ {
				m := "shared"
				if s.h[i].excl {
					m = "exclusive"
				}
				parts = append(parts, fmt.Sprintf("s%d %s token %s", s.h[i].sid, m,
					tokenText(s.h[i].token)))
			}
			if len(parts) == 0 {
				parts = []string{"free"}
			}
			return fmt.Sprintf("%s; last token %d", strings.Join(parts, ", "), s.last)
		},
		DescribeOperationMetadata: describeMeta,
	}
}

// ---- shared ----

func outcomeSuffix(op *Op) string {
	switch op.Outcome {
	case Unknown:
		if op.Synth != "" {
			return " -> unknown (" + op.Synth + ")"
		}
		return " -> unknown"
	case Fail:
		return " -> fail"
	}
	return " -> ok"
}

func tokenText(t int64) string {
	if t == 0 {
		return "unknown"
	}
	return fmt.Sprint(t)
}

func describeMeta(info interface{}) string {
	op, _ := info.(*Op)
	if op == nil {
		return ""
	}
	if op.Line == 0 {
		if op.Synth != "" {
			return "added: " + op.Synth
		}
		return "added by the checker"
	}
	return fmt.Sprintf("history line %d, proc %d", op.Line, op.Proc)
}

// modelOf names the Porcupine model that judges a workload ("" for none).
func modelOf(workload string) string {
	switch workload {
	case "register":
		return "register"
	case "mutex", "fenced-counter", "control":
		return "mutex"
	case "rw":
		return "rw"
	}
	return ""
}

// keep says whether a recorded op goes into the model's history: ops with a definite refusal
// that changes nothing, and reads or checks whose answer was lost, say nothing.
func keep(model string, op *Op) bool {
	switch model {
	case "register":
		switch op.F {
		case "read":
			return op.Outcome == Ok
		case "write":
			return op.Outcome != Fail
		case "cas":
			return true
		}
	case "mutex":
		switch op.F {
		case "acquire", "write", "release", "expire":
			return op.Outcome != Fail
		case "read", "final":
			return op.Outcome == Ok
		}
	case "rw":
		switch op.F {
		case "acquire", "release", "expire":
			return op.Outcome != Fail
		case "check", "write":
			return op.Outcome == Ok
		}
	}
	return false
}

// sessionEndsRecorded: the workloads whose workers record every end of a session that may
// hold the lock as an op "expire" (HISTORY.md); a session without one held nothing when it
// ended. The counter workers record none.
var sessionEndsRecorded = map[string]bool{"mutex": true, "rw": true}

// Operations turns one workload's ops into a Porcupine history: the ops the model reads, for
// a workload whose session ends are not recorded an unknown "expire" of every lock owner (the
// servers may expire any session whose keepalives stop: from its first acquire on, its hold
// may end at any time), and "end". ClientIds are dense: procs in order of appearance, then one
// lane for the added ops.
func Operations(model string, ops []*Op, maxT int64) ([]porcupine.Operation, []string) {
	var out []porcupine.Operation
	var unknownF []string
	lane := map[int64]int{}
	laneOf := func(proc int64) int {
		if l, ok := lane[proc]; ok {
			return l
		}
		lane[proc] = len(lane)
		return lane[proc]
	}
	firstAcq := map[int64]int64{}
	var owners []int64
	expired := map[int64]bool{}
	for _, op := range ops {
		if modelOf(op.Workload) != model {
			continue
		}
		if !keep(model, op) {
			if op.F != "read" && op.F != "write" && op.F != "cas" && op.F != "acquire" &&
				op.F != "release" && op.F != "expire" && op.F != "check" && op.F != "final" {
				unknownF = append(unknownF, op.F)
			}
			continue
		}
		if op.F == "acquire" {
			if _, ok := firstAcq[op.Owner]; !ok {
				firstAcq[op.Owner] = op.Call
				owners = append(owners, op.Owner)
			}
		}
		if op.F == "expire" {
			expired[op.Owner] = true
		}
		out = append(out, porcupine.Operation{ClientId: laneOf(op.Proc), Input: op, Output: op,
			Call: op.Call, Return: op.Ret, Metadata: op})
	}
	added := len(lane)
	for _, o := range owners {
		if expired[o] || len(ops) > 0 && sessionEndsRecorded[ops[0].Workload] {
			continue
		}
		op := &Op{F: "expire", Owner: o, Outcome: Unknown, Synth: "the session may expire",
			Call: firstAcq[o], Ret: Infinity}
		out = append(out, porcupine.Operation{ClientId: added, Input: op, Output: op,
			Call: op.Call, Return: op.Ret, Metadata: op})
	}
	end := &Op{F: "end", Outcome: Ok, Synth: "the end of the history", Call: maxT + 1,
		Ret: maxT + 1}
	out = append(out, porcupine.Operation{ClientId: added + 1, Input: end, Output: end,
		Call: end.Call, Return: end.Ret, Metadata: end})
	return out, unknownF
}
