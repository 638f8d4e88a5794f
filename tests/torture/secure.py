# SPDX-License-Identifier: Apache-2.0
"""torture --secure: every security layer on (docs/security.md "A TLS cluster, step by step").
Makes, in the run's directory, two CAs as the guide does: the client CA and one certificate of
it for the nodes' client ports and the workers (server and client use, SAN 127.0.0.1), and
the peers' CA with one certificate per member for the Raft port (SAN DNS:fencelock-node-N,
serverAuth and clientAuth); an ACL file with the user `torture` (every permission: the
workers and the orchestrator's CLUSTER.* calls) and `peer` (the members' announce and join),
and the password files. Then every node runs with client TLS (client certificates required),
peer mutual TLS with its own named certificate and ACLs, and every worker connects with TLS
and AUTH.

The certificates are dated two days back and valid for 800 days: the clock nemesis moves a
node's wall clock by up to -1 d and +1 y (faketime), and certificate validity is checked
against that clock."""

import datetime
import os
import ssl
import subprocess

from server import faketime_at_env  # tests/integration (torture.py puts it on the path)

NODE_EXT = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n"
USER, PEER = "torture", "peer"


def _run(argv, cwd, inp=None, env=None):
    p = subprocess.run(argv, cwd=cwd, input=inp, capture_output=True, timeout=60, env=env)
    if p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv), p.stderr.decode(errors="replace")))
    return p.stdout


def _openssl_past(args, cwd):
    """openssl under faketime two days back: the certificate's notBefore is then in the past
    for every clock the nemesis sets."""
    past = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=2))
    _run(["openssl"] + args, cwd, env=faketime_at_env(past.strftime("%Y-%m-%d %H:%M:%S")))


def _hash(binary, pw):
    return _run([binary, "--hash-password"], None, pw.encode() + b"\n").decode().strip()


class Secure:
    def __init__(self, binary, out):
        d = os.path.join(out, "secure")
        os.makedirs(d, exist_ok=True)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _openssl_past(["req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days",
                       "800", "-subj", "/CN=torture CA"], d)
        _run(["openssl", "req", *ec, "-keyout", "node.key", "-out", "node.csr", "-subj",
              "/CN=127.0.0.1"], d)
        with open(os.path.join(d, "node.ext"), "w") as f:
            f.write(NODE_EXT)
        _openssl_past(["x509", "-req", "-in", "node.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                       "-CAcreateserial", "-out", "node.crt", "-days", "800",
                       "-extfile", "node.ext"], d)
        self.ca, self.cert, self.key = (os.path.join(d, f) for f in ("ca.crt", "node.crt",
                                                                     "node.key"))
        _openssl_past(["req", "-x509", *ec, "-keyout", "peer-ca.key", "-out", "peer-ca.crt",
                       "-days", "800", "-subj", "/CN=torture peers CA"], d)
        self.peer_ca = os.path.join(d, "peer-ca.crt")
        self.dir = d
        self.password = "torture-pw"
        self.acl = os.path.join(d, "acl")
        self.user_pw, self.peer_pw = os.path.join(d, "user.pw"), os.path.join(d, "peer.pw")
        with open(self.acl, "w") as f:
            f.write("user %s %s perm=all\n" % (USER, _hash(binary, self.password)))
            f.write("user %s %s perm=peer\n" % (PEER, _hash(binary, "peer-pw")))
        for path, pw in ((self.user_pw, self.password), (self.peer_pw, "peer-pw")):
            with open(path, "w") as f:
                f.write(pw + "\n")
        for path in (self.acl, self.user_pw, self.peer_pw, self.key):
            os.chmod(path, 0o600)  # secrets: fencelockd refuses group/world-readable ones

    def peer_cert(self, node_id):
        """Member node_id's Raft port certificate and key (made once). Processes that share
        this material (the conformance runner's forked workers) may ask at the same moment:
        the check and the making hold a lock on the directory, and the pair appears under its
        final names only once whole. (Two workers once made peer3 at once: one's key beside
        the other's certificate, and every later start with them failed.)"""
        import fcntl
        d, n = self.dir, "peer%d" % node_id
        cert, key = os.path.join(d, n + ".crt"), os.path.join(d, n + ".key")
        with open(os.path.join(d, ".peer-certs.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not os.path.exists(cert):
                name = "fencelock-node-%d" % node_id
                ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
                _run(["openssl", "req", *ec, "-keyout", n + ".key.new", "-out", n + ".csr",
                      "-subj", "/CN=" + name], d)
                with open(os.path.join(d, n + ".ext"), "w") as f:
                    f.write("subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth,clientAuth\n"
                            % name)
                _openssl_past(["x509", "-req", "-in", n + ".csr", "-CA", "peer-ca.crt",
                               "-CAkey", "peer-ca.key", "-CAcreateserial", "-out",
                               n + ".crt.new", "-days", "800", "-extfile", n + ".ext"], d)
                os.replace(os.path.join(d, n + ".key.new"), key)
                os.replace(os.path.join(d, n + ".crt.new"), cert)  # last: it marks "made"
        return cert, key

    def server_flags(self, node_id):
        cert, key = self.peer_cert(node_id)
        return ["--tls-cert", self.cert, "--tls-key", self.key, "--tls-ca", self.ca,
                "--tls-client-auth", "require",
                "--peer-tls-cert", cert, "--peer-tls-key", key, "--peer-tls-ca", self.peer_ca,
                "--acl-file", self.acl, "--peer-user", PEER, "--peer-password-file", self.peer_pw]

    def worker_flags(self):
        return ["--user", USER, "--password-file", self.user_pw, "--tls-ca", self.ca,
                "--tls-cert", self.cert, "--tls-key", self.key]

    def apply(self, node):
        """The orchestrator's own connections to `node` (server.py and nemesis.py read these)."""
        c = ssl.create_default_context(cafile=self.ca)
        c.load_cert_chain(self.cert, self.key)
        node.tls = c
        node.auth = (USER, self.password)
