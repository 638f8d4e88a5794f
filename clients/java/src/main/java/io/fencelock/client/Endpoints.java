// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.util.ArrayList;
import java.util.List;

/** Parsing of {@code host:port} and {@code [v6]:port} endpoints, the servers' grammar. */
final class Endpoints {
  private Endpoints() {}

  static final class HostPort {
    final String host;
    final int port;

    HostPort(String host, int port) {
      this.host = host;
      this.port = port;
    }
  }

  /** host and port of one endpoint; IllegalArgumentException if malformed. */
  static HostPort split(String addr) {
    int i = addr.lastIndexOf(':');
    if (i <= 0 || i == addr.length() - 1 || addr.length() > 128) {
      throw new IllegalArgumentException("not a host:port: " + addr);
    }
    String host = addr.substring(0, i);
    String port = addr.substring(i + 1);
    if (!port.chars().allMatch(Character::isDigit) || port.length() > 5) {
      throw new IllegalArgumentException("not a host:port: " + addr);
    }
    int p = Integer.parseInt(port);
    if (p < 1 || p > 65535) {
      throw new IllegalArgumentException("port out of range: " + addr);
    }
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    return new HostPort(host, p);
  }

  /** "a:1,b:2" as a checked list. */
  static List<String> parse(String list) {
    List<String> out = new ArrayList<>();
    for (String e : list.split(",")) {
      e = e.trim();
      if (!e.isEmpty()) {
        split(e);
        out.add(e);
      }
    }
    if (out.isEmpty()) {
      throw new IllegalArgumentException("no endpoints");
    }
    return out;
  }
}
