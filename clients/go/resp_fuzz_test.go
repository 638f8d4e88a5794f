// SPDX-License-Identifier: Apache-2.0

package fencelock

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// FuzzReadReply feeds the reply parser arbitrary bytes from the server: it never panics, and a
// failure is either a malformed reply (errProto) or the bytes running out, never anything else.
// A command the client itself writes reads back as the same argument list. `go test` runs the
// seeds; `go test -fuzz=FuzzReadReply` explores.
func FuzzReadReply(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "-NOTLEADER 127.0.0.1:7480\r\n", ":42\r\n", "$3\r\nabc\r\n", "$-1\r\n",
		"*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n+k\r\n+v\r\n", "_\r\n", "#t\r\n", "!3\r\nERR\r\n",
		"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
		"$5\r\nab\r\n", "*3\r\n:1\r\n", "?\r\n", "+no crlf\n", ":x\r\n", "$99999999999\r\n",
		"*-2\r\n", "\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := readReply(bufio.NewReaderSize(bytes.NewReader(data), 4096))
		if err != nil && !errors.Is(err, errProto) && !errors.Is(err, io.EOF) &&
			!errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, bufio.ErrBufferFull) {
			t.Fatalf("readReply(%q): unexpected error kind %v", data, err)
		}
		// Round trip: split the input into arguments and read back what writeCommand writes.
		argv := []string{}
		for _, a := range bytes.Split(data, []byte{0}) {
			argv = append(argv, string(a))
		}
		var buf bytes.Buffer
		if err := writeCommand(bufio.NewWriter(&buf), argv); err != nil {
			t.Fatal(err)
		}
		v, err := readReply(bufio.NewReader(&buf))
		if err != nil {
			t.Fatalf("reading back %q: %v", buf.Bytes(), err)
		}
		got := []string{}
		for _, x := range v.([]any) {
			got = append(got, x.(string))
		}
		if !reflect.DeepEqual(got, argv) {
			t.Fatalf("round trip of %q gave %q", argv, got)
		}
	})
}
