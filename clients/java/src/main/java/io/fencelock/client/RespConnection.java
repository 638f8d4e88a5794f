// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.Arrays;
import java.util.List;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

/**
 * One connection to one server: a blocking socket (TLS or not), used by one thread at a time
 * (the call path takes it out of the pool for a call). {@link #abort()} may be called from any
 * thread: it closes the socket, so a blocked read ends with an IOException. A connection that
 * failed in any way is closed and never reused.
 */
final class RespConnection implements AutoCloseable {
  final String addr;
  private final Socket sock;
  private final BufferedInputStream in;
  private final BufferedOutputStream out;
  private volatile boolean closed;

  private RespConnection(String addr, Socket sock) throws IOException {
    this.addr = addr;
    this.sock = sock;
    this.in = new BufferedInputStream(sock.getInputStream(), 16384);
    this.out = new BufferedOutputStream(sock.getOutputStream(), 16384);
  }

  /**
   * Connect within {@code connectMs}, do the TLS handshake (the server's name checked against
   * the endpoint's host, an IP literal against the certificate's IP addresses) and send AUTH if
   * credentials were given, the two within {@code authMs} (the server hashes the password and
   * delays a wrong one). AuthException and TlsException are final; IOException means
   * unreachable, nothing sent.
   */
  static RespConnection open(String addr, Options o, int connectMs, int authMs) throws IOException {
    Endpoints.HostPort hp = Endpoints.split(addr);
    Socket s = new Socket();
    try {
      s.setTcpNoDelay(true);
      s.setKeepAlive(true);
      s.connect(new InetSocketAddress(hp.host, hp.port), Math.max(1, connectMs));
      s.setSoTimeout(Math.max(1, authMs));
      if (o.tls != null) {
        SSLSocket ss = (SSLSocket) o.tls.getSocketFactory().createSocket(s, hp.host, hp.port, true);
        SSLParameters p = ss.getSSLParameters();
        p.setEndpointIdentificationAlgorithm("HTTPS");
        ss.setSSLParameters(p);
        try {
          ss.startHandshake();
        } catch (SocketTimeoutException e) {
          throw e;
        } catch (SSLException e) {
          throw new TlsException(addr + ": TLS handshake failed: " + e.getMessage(), e);
        }
        s = ss;
      }
      RespConnection c = new RespConnection(addr, s);
      if (o.password != null) {
        Object r =
            o.user != null
                ? c.call(Arrays.asList("AUTH", o.user, o.password), authMs)
                : c.call(Arrays.asList("AUTH", o.password), authMs);
        if (r instanceof Resp.Err) {
          c.close();
          Resp.Err e = (Resp.Err) r;
          if (e.word().equals("TRYAGAIN")) {
            throw new IOException(addr + ": AUTH: " + e.text);
          }
          FencelockException fe = FencelockException.fromReply(e.text);
          throw fe instanceof AuthException ? fe : new AuthException(e.text);
        }
      }
      s.setSoTimeout(Math.max(1, connectMs));
      return c;
    } catch (IOException | RuntimeException e) {
      try {
        s.close();
      } catch (IOException ignored) {
        // closing a socket that failed: nothing to add to the first error
      }
      throw e;
    }
  }

  void send(List<Object> argv) throws IOException {
    Resp.write(out, argv);
    out.flush();
  }

  /** Send and read the reply, waiting at most timeoutMs for it. */
  Object call(List<Object> argv, int timeoutMs) throws IOException {
    send(argv);
    return read(timeoutMs);
  }

  Object read(int timeoutMs) throws IOException {
    sock.setSoTimeout(Math.max(1, timeoutMs));
    return Resp.read(in);
  }

  /**
   * Wait up to sliceMs for the first byte of a reply: -1 when none came (the connection stays
   * usable: nothing was consumed), else the RESP type byte.
   */
  int awaitFirst(int sliceMs) throws IOException {
    sock.setSoTimeout(Math.max(1, sliceMs));
    try {
      int b = in.read();
      if (b < 0) {
        throw new java.io.EOFException("connection closed by the server");
      }
      return b;
    } catch (SocketTimeoutException e) {
      return -1;
    }
  }

  Object readRest(int type, int timeoutMs) throws IOException {
    sock.setSoTimeout(Math.max(1, timeoutMs));
    return Resp.read(in, type);
  }

  /**
   * Whether an idle pooled connection is still good: nothing may arrive unasked, so readable
   * data or an end of stream mean it is dead.
   */
  boolean idleAlive() {
    if (closed) {
      return false;
    }
    try {
      if (in.available() > 0) {
        return false;
      }
      sock.setSoTimeout(1);
      in.read(); // data or EOF: dead either way (no reply was asked for)
      return false;
    } catch (SocketTimeoutException e) {
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  boolean isClosed() {
    return closed;
  }

  /** Close from any thread; a read blocked on this connection fails at once. */
  void abort() {
    close();
  }

  @Override
  public void close() {
    closed = true;
    try {
      sock.close();
    } catch (IOException ignored) {
      // nothing to do: the connection is gone either way
    }
  }
}
