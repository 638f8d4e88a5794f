// SPDX-License-Identifier: Apache-2.0

package fencelock

// The RESP codec: commands go out as arrays of bulk strings; replies are read as RESP2 (the
// client never sends HELLO 3) with the RESP3 scalar types accepted too, so a reply shape the
// server may add later does not break the stream. Every length read from the socket is
// checked against a limit before anything is allocated: the server is trusted to speak the
// protocol, not to be bug-free.

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
)

const (
	maxBulk  = 512 << 20 // longest bulk string accepted (the server's own --max-bulk is lower)
	maxArray = 1 << 24   // most elements of one array reply
	maxDepth = 16        // nesting of arrays (XREAD's is 5)
)

// respError is an error reply (-WORD message): the server's answer, the connection is fine.
type respError string

// errProto marks a reply the codec cannot read; the connection is unusable after it.
var errProto = errors.New("malformed reply")

// writeCommand appends one command as a RESP array of bulk strings.
func writeCommand(w *bufio.Writer, argv []string) error {
	w.WriteByte('*')
	w.WriteString(strconv.Itoa(len(argv)))
	w.WriteString("\r\n")
	for _, a := range argv {
		w.WriteByte('$')
		w.WriteString(strconv.Itoa(len(a)))
		w.WriteString("\r\n")
		w.WriteString(a)
		w.WriteString("\r\n")
	}
	return w.Flush()
}

// readLine returns one CRLF-terminated header line without its CRLF.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return "", fmt.Errorf("%w: header line too long", errProto)
	}
	if err != nil {
		return "", err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return "", fmt.Errorf("%w: line without CRLF", errProto)
	}
	return string(line[:len(line)-2]), nil
}

// readReply reads one reply: nil, string (simple and bulk), int64, []any (arrays, RESP3 sets
// and maps as flat arrays), or respError.
func readReply(r *bufio.Reader) (any, error) {
	return readValue(r, 0)
}

func readValue(r *bufio.Reader, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested too deep", errProto)
	}
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if line == "" {
		return nil, fmt.Errorf("%w: empty line", errProto)
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return respError(body), nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: integer %q", errProto, body)
		}
		return n, nil
	case '_':
		return nil, nil
	case '#':
		return body == "t", nil
	case ',':
		return body, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > maxBulk {
			return nil, fmt.Errorf("%w: bulk length %q", errProto, body)
		}
		if n == -1 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := readFull(r, buf); err != nil {
			return nil, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return nil, fmt.Errorf("%w: bulk without CRLF", errProto)
		}
		if line[0] == '!' {
			return respError(buf[:n]), nil
		}
		return string(buf[:n]), nil
	case '*', '~', '>', '%':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > maxArray {
			return nil, fmt.Errorf("%w: array length %q", errProto, body)
		}
		if n == -1 {
			return nil, nil
		}
		if line[0] == '%' {
			n *= 2
		}
		out := make([]any, 0, min(n, 1024))
		for i := 0; i < n; i++ {
			v, err := readValue(r, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: type byte %q", errProto, line[0])
}

func readFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// asMap turns a flat [k, v, k, v, ...] array reply into a map; nil stays nil.
func asMap(v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	a, ok := v.([]any)
	if !ok || len(a)%2 != 0 {
		return nil, fmt.Errorf("%w: expected a map, got %T", errProto, v)
	}
	m := make(map[string]any, len(a)/2)
	for i := 0; i < len(a); i += 2 {
		k, ok := a[i].(string)
		if !ok {
			return nil, fmt.Errorf("%w: map key %T", errProto, a[i])
		}
		m[k] = a[i+1]
	}
	return m, nil
}

// asUint reads an integer reply (or a decimal bulk string) as an unsigned number.
func asUint(v any) (uint64, error) {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return 0, fmt.Errorf("%w: negative integer %d", errProto, x)
		}
		return uint64(x), nil
	case string:
		n, err := strconv.ParseUint(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: not a number: %q", errProto, x)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%w: expected an integer, got %T", errProto, v)
}

// asInt reads an integer reply (or a decimal bulk string) as a signed number.
func asInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: not a number: %q", errProto, x)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%w: expected an integer, got %T", errProto, v)
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

// fieldUint is m[k] as a number, 0 when absent.
func fieldUint(m map[string]any, k string) uint64 {
	n, _ := asUint(m[k])
	return n
}
