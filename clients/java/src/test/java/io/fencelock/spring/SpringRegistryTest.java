// SPDX-License-Identifier: Apache-2.0
package io.fencelock.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fencelock.client.FencedLock;
import io.fencelock.client.FencelockClient;
import io.fencelock.client.WriteOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.core.env.MapPropertySource;
import org.springframework.integration.support.locks.LockRegistry;

/** A Spring application switches its LockRegistry to fencelock by a property. */
class SpringRegistryTest {
  @TempDir static Path dir;
  static Process node;
  static String endpoint;

  @BeforeAll
  static void start() throws Exception {
    // The client tests' Fencelockd helper lives in another package: start one node directly.
    int port = io.fencelock.client.TestNodes.freePort();
    endpoint = "127.0.0.1:" + port;
    node = io.fencelock.client.TestNodes.startSingle(dir, port);
    try (FencelockClient c = FencelockClient.builder().endpoints(endpoint)
        .timeout(Duration.ofSeconds(60)).build()) {
      c.put("__ready", "1");
    }
  }

  @AfterAll
  static void stop() throws Exception {
    node.destroy();
    node.waitFor(30, TimeUnit.SECONDS);
  }

  static AnnotationConfigApplicationContext app(Map<String, Object> props) {
    AnnotationConfigApplicationContext ctx = new AnnotationConfigApplicationContext();
    ctx.getEnvironment().getPropertySources().addFirst(new MapPropertySource("test", props));
    ctx.register(FencelockLockRegistryConfiguration.class);
    ctx.refresh();
    return ctx;
  }

  @Test
  void withoutTheEndpointsPropertyNoRegistryIsDefined() {
    try (AnnotationConfigApplicationContext ctx = app(Map.of())) {
      assertEquals(0, ctx.getBeanNamesForType(LockRegistry.class).length);
    }
  }

  @Test
  void twoApplicationsExcludeEachOtherAndFenceWithTheToken() throws Exception {
    Map<String, Object> props = Map.of("fencelock.endpoints", endpoint,
        "fencelock.session-ttl-ms", "5000");
    try (AnnotationConfigApplicationContext a = app(props);
        AnnotationConfigApplicationContext b = app(props)) {
      LockRegistry ra = a.getBean(LockRegistry.class);
      LockRegistry rb = b.getBean(LockRegistry.class);
      Lock la = ra.obtain("orders");
      Lock lb = rb.obtain("orders");
      assertInstanceOf(FencedLock.class, la);
      la.lock();
      try {
        assertFalse(lb.tryLock(), "the other application's lock is held");
        long token = ((FencedLock) la).getToken();
        FencelockClient c = a.getBean(FencelockClient.class);
        c.put("orders/state", "a", WriteOptions.fenced("orders", token));
      } finally {
        la.unlock();
      }
      String got = rb.executeLocked("orders", Duration.ofSeconds(10), () -> {
        FencedLock l = (FencedLock) rb.obtain("orders");
        FencelockClient c = b.getBean(FencelockClient.class);
        c.put("orders/state", "b", WriteOptions.fenced("orders", l.getToken()));
        return c.getString("orders/state");
      });
      assertEquals("b", got);
      ((FencedLockRegistry) ra).expireUnusedOlderThan(-1);
      assertTrue(lb.tryLock(5, TimeUnit.SECONDS));
      lb.unlock();
    }
  }


}
