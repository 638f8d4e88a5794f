// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.io.IOException;
import java.nio.file.Path;

/** Fencelockd's helpers for tests of other packages (the Spring registry's). */
public final class TestNodes {
  private TestNodes() {}

  public static String binary() {
    return Fencelockd.binary();
  }

  public static int freePort() {
    return Fencelockd.freePort();
  }

  /** One node listening on port; the caller destroys the process. */
  public static Process startSingle(Path root, int port) throws IOException {
    Fencelockd n = new Fencelockd(root, 1);
    n.args.clear();
    Process p = new ProcessBuilder(
            binary(), "--id", "1", "--data-dir", n.dir.resolve("d2").toString(),
            "--listen", "127.0.0.1:" + port,
            "--raft-listen", "127.0.0.1:" + n.raftPort,
            "--http-listen", "127.0.0.1:" + n.httpPort)
        .redirectErrorStream(true)
        .redirectOutput(n.dir.resolve("node.log").toFile())
        .start();
    return p;
  }
}
