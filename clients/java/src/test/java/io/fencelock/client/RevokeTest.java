// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Cooperative revocation against one real fencelockd: revoke() asks the holder, onRevoke tells
 * it (name, token, session, deadline, reason, who asked), only for its own grant, and a
 * deadline takes the grant from a holder that does not let go: the waiter gets a larger token,
 * the old one is stale, the holder's session lives on. Skipped on a server without LOCK.REVOKE.
 */
class RevokeTest {
  @TempDir static Path root;
  static Fencelockd node;
  static FencelockClient client;

  @BeforeAll
  static void start() throws Exception {
    node = new Fencelockd(root, 1);
    node.start();
    client = Fencelockd.readyClient(node.addr());
  }

  @AfterAll
  static void stop() throws Exception {
    client.close();
    node.close();
  }

  @Test
  void theHolderIsToldAndADeadlineTakesTheGrant() throws Exception {
    try {
      client.revoke("rv/none", null, null);
    } catch (NotHolderException e) {
      // expected: nobody holds it
    } catch (ServerException e) {
      Assumptions.assumeFalse(e.getMessage().contains("unknown command"), "no LOCK.REVOKE");
      throw e;
    }
    try (Session a = client.openSession(Duration.ofSeconds(10));
        Session b = client.openSession(Duration.ofSeconds(10))) {
      long t = a.acquire("rv/job", Duration.ofSeconds(5));
      long other = a.acquire("rv/job2", Duration.ofSeconds(5));
      BlockingQueue<Revoke> got = new LinkedBlockingQueue<>();
      try (RevokeWatch rw = a.onRevoke("rv/job", t, got::add)) {
        client.revoke("rv/job2", null, "other"); // another grant: not delivered
        assertEquals(t, client.revoke("rv/job", null, "please"));
        Revoke r = got.poll(30, TimeUnit.SECONDS);
        assertNotNull(r, "no revoke request delivered");
        assertEquals("rv/job", r.name());
        assertEquals(t, r.token());
        assertEquals(a.sid(), r.sid());
        assertNull(r.deadline());
        assertEquals("please", r.reason());
        assertFalse(r.by().isEmpty());

        client.revoke("rv/job", Duration.ofMillis(500), "deploy");
        r = got.poll(30, TimeUnit.SECONDS);
        assertNotNull(r, "no second revoke request delivered");
        assertEquals(Duration.ofMillis(500), r.deadline());
        assertEquals("deploy", r.reason());
        long bt = b.acquire("rv/job", Duration.ofSeconds(30));
        assertTrue(bt > t, "the waiter's token above the revoked one");
        assertFalse(client.fenceCheck("rv/job", t), "the revoked token is stale");
        assertFalse(a.isLost(), "the holder's session lives on");
        assertTrue(client.fenceCheck("rv/job2", other));
        assertNull(got.poll(), "a request of another grant was delivered");
        assertNull(rw.error());
      }
      assertThrows(NotHolderException.class, () -> client.revoke("rv/free", null, null));
    }
  }
}
