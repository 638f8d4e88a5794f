// SPDX-License-Identifier: Apache-2.0

package fencelock_test

// TLS (the server's certificate checked against the CA and the endpoint's name) and AUTH on
// every new connection.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fencelock "github.com/fencelock/fencelock-go"
)

type certKey struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	der  []byte
}

func makeCert(t *testing.T, cn string, ca *certKey, ips ...net.IP) *certKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: ips}
	parent, signer := tmpl, key
	if ca == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	} else {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &certKey{cert: cert, key: key, der: der}
}

func (ck *certKey) write(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	kb, _ := x509.MarshalECPrivateKey(ck.key)
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ck.der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca := makeCert(t, "test CA", nil)
	caFile, _ := ca.write(t, dir, "ca")
	srv := makeCert(t, "node", ca, net.ParseIP("127.0.0.1"))
	certFile, keyFile := srv.write(t, dir, "server")
	other := makeCert(t, "other CA", nil)
	otherFile, _ := other.write(t, dir, "other")

	cfg, err := fencelock.TLSFiles(caFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, 1, "--tls-cert", certFile, "--tls-key", keyFile)
	s.tls = cfg
	s.start()
	waitLeader(t, []*server{s})

	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}, TLS: cfg})
	ctx := ctxFor(t, 60*time.Second)
	se, err := c.NewSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatalf("session over TLS: %v", err)
	}
	if _, _, err := se.Lock(ctx, "l"); err != nil {
		t.Fatal(err)
	}
	se.Close(ctx)

	wrong, err := fencelock.TLSFiles(otherFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	cw := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}, TLS: wrong,
		Timeout: 2 * time.Second})
	if _, err := cw.Get(ctx, "k"); !errors.Is(err, fencelock.ErrTLS) {
		t.Fatalf("a server certificate of another CA: %v, want ErrTLS", err)
	}
	named := cfg.Clone()
	named.ServerName = "not-this-node.example"
	cn := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}, TLS: named,
		Timeout: 2 * time.Second})
	if _, err := cn.Get(ctx, "k"); !errors.Is(err, fencelock.ErrTLS) {
		t.Fatalf("a certificate for another name: %v, want ErrTLS", err)
	}
	plain := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}, Timeout: 2 * time.Second})
	if _, err := plain.Get(ctx, "k"); err == nil {
		t.Fatal("plain text answered on a TLS port")
	}
}

func hashPassword(t *testing.T, pw string) string {
	t.Helper()
	cmd := exec.Command(binary(t), "--hash-password")
	cmd.Stdin = strings.NewReader(pw + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func TestAuth(t *testing.T) {
	acl := filepath.Join(t.TempDir(), "acl")
	text := "user admin " + hashPassword(t, "adminpw") + " perm=all\n" +
		"user app " + hashPassword(t, "apppw") + " perm=read,lock,write keys=app/* locks=app-*\n"
	if err := os.WriteFile(acl, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, 1, "--acl-file", acl)
	s.auth = [2]string{"admin", "adminpw"}
	s.start()
	waitLeader(t, []*server{s})
	ctx := ctxFor(t, 60*time.Second)

	c := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}, Username: "app", Password: "apppw"})
	se, err := c.NewSession(ctx, 10*time.Second)
	if err != nil {
		t.Fatalf("session with AUTH: %v", err)
	}
	tok, _, err := se.Lock(ctx, "app-job")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "app/k", "v", fencelock.Fence("app-job", tok), fencelock.WithSession(se)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "other/k", "v"); !errors.Is(err, fencelock.ErrPerm) {
		t.Fatalf("a key outside the user's: %v, want ErrPerm", err)
	}
	se.Close(ctx)

	bad := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}, Username: "app", Password: "nope"})
	if _, err := bad.Get(ctx, "app/k"); !errors.Is(err, fencelock.ErrAuth) {
		t.Fatalf("a wrong password: %v, want ErrAuth", err)
	}
	none := newClient(t, fencelock.Options{Endpoints: []string{s.addr()}})
	if _, err := none.Get(ctx, "app/k"); !errors.Is(err, fencelock.ErrAuth) {
		t.Fatalf("no credentials: %v, want ErrAuth", err)
	}
}

// A certificate refused on one try stays the call's cause when a later try to the same
// endpoint only times out (its handshake cut by the call's deadline, as on a loaded machine):
// the caller gets ErrTLS, not a timeout. A listener of its own: the first connection presents a
// certificate of a CA the client does not trust, every later one is accepted and left silent.
func TestTLSRefusalStaysTheCauseAfterATimeout(t *testing.T) {
	dir := t.TempDir()
	ca := makeCert(t, "test CA", nil)
	srv := makeCert(t, "node", ca, net.ParseIP("127.0.0.1"))
	certFile, keyFile := srv.write(t, dir, "server")
	other := makeCert(t, "other CA", nil)
	otherFile, _ := other.write(t, dir, "other")
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	silent := make(chan net.Conn, 64) // closed with the test
	defer func() {
		for {
			select {
			case c := <-silent:
				c.Close()
			default:
				return
			}
		}
	}()
	accepted := make(chan int, 16)
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- n
			if n == 0 {
				ts := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{pair}})
				ts.Handshake() // the client refuses the certificate
				ts.Close()
				continue
			}
			select {
			case silent <- c: // accepted, never answered
			default:
				c.Close()
			}
		}
	}()
	wrong, err := fencelock.TLSFiles(otherFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, fencelock.Options{Endpoints: []string{ln.Addr().String()}, TLS: wrong,
		Timeout: 1500 * time.Millisecond, ConnectTimeout: 500 * time.Millisecond})
	_, err = c.Get(ctxFor(t, 30*time.Second), "k")
	if len(accepted) < 2 {
		t.Fatalf("the client tried %d time(s): the test needs a try after the refusal", len(accepted))
	}
	if !errors.Is(err, fencelock.ErrTLS) {
		t.Fatalf("after a refused certificate and a silent try: %v, want ErrTLS", err)
	}
}
