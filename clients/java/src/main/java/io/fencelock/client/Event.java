// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.util.Map;

/**
 * One event of the stream: id "rev-n", type (put, del, grant, ...), name ("" for session
 * events) and every field as the server sent it (text).
 */
public record Event(String id, String type, String name, Map<String, String> fields) {
  /** The revision of the command that produced the event. */
  public long rev() {
    return Long.parseLong(id.substring(0, id.indexOf('-')));
  }
}
