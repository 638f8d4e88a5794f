// SPDX-License-Identifier: Apache-2.0

package fencelock_test

// A TCP proxy between the client and one node, to create the network situations the
// contract is about: replies delayed (a slow return path), or nothing forwarded at all (a
// partition) while the node itself runs on.

import (
	"net"
	"sync"
	"testing"
	"time"
)

type proxy struct {
	l      net.Listener
	target string

	mu        sync.Mutex
	cond      *sync.Cond
	delay     time.Duration // added before each reply chunk is forwarded
	blackhole bool          // hold every byte, both ways
	closed    bool
	conns     []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l, target: target}
	p.cond = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.l.Addr().String() }

func (p *proxy) setDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

func (p *proxy) setBlackhole() {
	p.mu.Lock()
	p.blackhole = true
	p.mu.Unlock()
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.cond.Broadcast()
	p.mu.Unlock()
	p.l.Close()
	for _, c := range conns {
		c.Close()
	}
}

func (p *proxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go p.pump(c, s, false)
		go p.pump(s, c, true)
	}
}

// pump forwards src to dst; reply is the server-to-client direction.
func (p *proxy) pump(src, dst net.Conn, reply bool) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.blackhole && !p.closed {
				p.cond.Wait()
			}
			d, closed := p.delay, p.closed
			p.mu.Unlock()
			if closed {
				return
			}
			if reply && d > 0 {
				time.Sleep(d)
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
