// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.nio.charset.StandardCharsets;

/** A key as KV.GET answers it: its value, revisions, version and lease (0: none). */
public record KeyValue(
    String key, byte[] value, long createRev, long modRev, long version, long lease) {
  public String valueString() {
    return new String(value, StandardCharsets.UTF_8);
  }
}
