// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** The TLS handshake failed: an untrusted certificate, a name that does not match the endpoint, or unusable key material. */
public class TlsException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public TlsException(String message) {
    super(message);
  }

  public TlsException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "TLS";
  }
}
