# SPDX-License-Identifier: Apache-2.0
"""A tiny RESP2/RESP3 client for the integration tests (standard library only).

Reply mapping:
  simple string  -> str            ("+OK" -> "OK")
  error          -> RespError      (returned, never raised; r.code is the first word)
  integer        -> int
  bulk string    -> bytes          (nil bulk "$-1" -> None)
  array          -> list           (nil array "*-1" -> None)
  RESP3 null "_" -> None
  RESP3 map "%"  -> dict           (bytes keys decoded to str)
  RESP3 set "~"  -> list, "," -> float, "#" -> bool, "(" -> int, "=" -> bytes (format dropped)
  RESP3 push ">" -> Push (a list subclass)

Errors are *returned* as RespError instances (consistently, also inside arrays), so a test can
assert on them; helpers in helpers.py raise when a test expects success.
"""

import select
import socket
import time


class RespError(Exception):
    """An error reply. str(e) is the text without the leading '-'."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text
        self.code = text.split(" ", 1)[0] if text else ""

    def __repr__(self):
        return "RespError(%r)" % self.text

    def __eq__(self, other):
        return isinstance(other, RespError) and other.text == self.text

    def __hash__(self):
        return hash(self.text)


class Push(list):
    pass


class ConnectionClosed(Exception):
    """The server closed the connection (EOF) before a complete reply arrived."""


class ReplyTimeout(Exception):
    """No complete reply within the time bound."""


class ProtocolViolation(Exception):
    """The server sent bytes that are not valid RESP."""


def encode_command(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, bytes):
            b = a
        elif isinstance(a, str):
            b = a.encode()
        elif isinstance(a, bool):
            raise TypeError("bool argument")
        elif isinstance(a, (int, float)):
            b = str(a).encode()
        else:
            raise TypeError("cannot encode %r" % (a,))
        out.append(b"$%d\r\n" % len(b))
        out.append(b)
        out.append(b"\r\n")
    return b"".join(out)


class _Incomplete(Exception):
    pass


def _parse(buf, pos):
    """Parse one reply from buf[pos:]. Returns (value, newpos) or raises _Incomplete."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        raise _Incomplete()
    t = buf[pos:pos + 1]
    line = bytes(buf[pos + 1:end])
    nxt = end + 2
    if t == b"+":
        return line.decode("utf-8", "replace"), nxt
    if t == b"-":
        return RespError(line.decode("utf-8", "replace")), nxt
    if t == b":":
        return int(line), nxt
    if t == b"(":
        return int(line), nxt
    if t == b",":
        return float(line), nxt
    if t == b"#":
        return line == b"t", nxt
    if t == b"_":
        return None, nxt
    if t in (b"$", b"=", b"!"):
        n = int(line)
        if n < 0:
            return None, nxt
        if len(buf) < nxt + n + 2:
            raise _Incomplete()
        data = bytes(buf[nxt:nxt + n])
        if buf[nxt + n:nxt + n + 2] != b"\r\n":
            raise ProtocolViolation("bulk not terminated by CRLF")
        if t == b"=":
            data = data[4:]  # drop "txt:"
        if t == b"!":
            return RespError(data.decode("utf-8", "replace")), nxt + n + 2
        return data, nxt + n + 2
    if t in (b"*", b"~", b">"):
        n = int(line)
        if n < 0:
            return None, nxt
        items = []
        p = nxt
        for _ in range(n):
            v, p = _parse(buf, p)
            items.append(v)
        if t == b">":
            return Push(items), p
        return items, p
    if t in (b"%", b"|"):
        n = int(line)
        d = {}
        p = nxt
        for _ in range(n):
            k, p = _parse(buf, p)
            v, p = _parse(buf, p)
            if isinstance(k, bytes):
                k = k.decode("utf-8", "replace")
            d[k] = v
        if t == b"|":  # attribute: skip it, return the value that follows
            return _parse(buf, p)
        return d, p
    raise ProtocolViolation("unknown reply type byte %r in %r" % (t, bytes(buf[pos:pos + 40])))


class Conn:
    def __init__(self, port, host="127.0.0.1", timeout=10.0, ssl_context=None):
        self.host, self.port = host, port
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ssl_context is not None:  # a TLS client port (test_tls.py)
            self.sock = ssl_context.wrap_socket(self.sock, server_hostname=host)
        self.buf = bytearray()
        self.closed = False
        self.eof = False

    # --- sending ---
    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, *args):
        self.sock.sendall(encode_command(*args))

    # --- receiving ---
    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ReplyTimeout("no complete reply from port %d" % self.port)
        r, _, _ = select.select([self.sock], [], [], 0 if self._pending() else remaining)
        if not r and not self._pending():
            raise ReplyTimeout("no complete reply from port %d" % self.port)
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.eof = True
            raise ConnectionClosed("server closed the connection (port %d)" % self.port)
        self.buf += chunk

    def _pending(self):
        """Bytes a TLS socket decrypted already (select cannot see them)."""
        return getattr(self.sock, "pending", lambda: 0)()

    def read_reply(self, timeout=None):
        """Read one complete reply. Raises ReplyTimeout or ConnectionClosed."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            if self.buf:
                try:
                    v, p = _parse(self.buf, 0)
                    del self.buf[:p]
                    return v
                except _Incomplete:
                    pass
                except ValueError as e:
                    raise ProtocolViolation("bad reply bytes %r: %s" % (bytes(self.buf[:80]), e))
            if self.eof:
                raise ConnectionClosed("server closed the connection (port %d)" % self.port)
            self._fill(deadline)

    def has_data(self, timeout=0.0):
        """True if at least one byte (or EOF) is readable within timeout."""
        if self.buf or self._pending():
            return True
        r, _, _ = select.select([self.sock], [], [], timeout)
        return bool(r)

    def read_until_eof(self, timeout=2.0):
        """Read everything until the server closes. Returns (bytes, closed: bool)."""
        deadline = time.monotonic() + timeout
        data = bytearray(self.buf)
        self.buf.clear()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return bytes(data), False
            r, _, _ = select.select([self.sock], [], [], remaining)
            if not r:
                return bytes(data), False
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                return bytes(data), True
            if not chunk:
                self.eof = True
                return bytes(data), True
            data += chunk

    # --- request/response ---
    def call(self, *args, timeout=None):
        self.send(*args)
        return self.read_reply(timeout)

    def pipeline(self, cmds, timeout=None):
        """Send every command in one write; return the replies in order."""
        self.sock.sendall(b"".join(encode_command(*c) for c in cmds))
        return [self.read_reply(timeout) for _ in cmds]

    def close(self):
        if not self.closed:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def as_map(reply):
    """A RESP3 map (dict) or a RESP2 flat array [k1, v1, k2, v2, ...] -> dict with str keys."""
    if isinstance(reply, dict):
        return reply
    if isinstance(reply, list):
        if len(reply) % 2:
            raise AssertionError("odd-length array is not a map: %r" % (reply,))
        d = {}
        for i in range(0, len(reply), 2):
            k = reply[i]
            if isinstance(k, bytes):
                k = k.decode("utf-8", "replace")
            d[k] = reply[i + 1]
        return d
    raise AssertionError("expected a map reply, got %r" % (reply,))


def text(v):
    """bytes/str -> str, for comparing fields that may come as bulk or simple strings."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v
