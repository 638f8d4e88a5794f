// SPDX-License-Identifier: Apache-2.0
package io.fencelock.spring;

import io.fencelock.client.FencelockClient;
import java.nio.file.Path;
import java.time.Duration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * The lock registry by configuration: with the property {@code fencelock.endpoints} set, this
 * configuration (imported with {@code @Import}, or picked up by Spring Boot's
 * auto-configuration from META-INF/spring) defines a {@link FencelockClient} and a {@link
 * LockRegistry} bean ({@link FencedLockRegistry}); without it, nothing, so the application's
 * other registry stays. Properties:
 *
 * <ul>
 *   <li>{@code fencelock.endpoints}: host:port,host:port of any members;
 *   <li>{@code fencelock.session-ttl-ms} (default 10000): each lock key's session TTL;
 *   <li>{@code fencelock.timeout-ms} (default 5000): each call's deadline;
 *   <li>{@code fencelock.user}, {@code fencelock.password}: AUTH;
 *   <li>{@code fencelock.tls.ca}, {@code fencelock.tls.cert}, {@code fencelock.tls.key}: PEM
 *       files (TLS when the CA is set).
 * </ul>
 */
@Configuration(proxyBeanMethods = false)
@Conditional(FencelockLockRegistryConfiguration.EndpointsSet.class)
public class FencelockLockRegistryConfiguration {
  /** Matches when fencelock.endpoints is set. */
  public static class EndpointsSet implements Condition {
    @Override
    public boolean matches(ConditionContext ctx, AnnotatedTypeMetadata md) {
      String v = ctx.getEnvironment().getProperty("fencelock.endpoints");
      return v != null && !v.isBlank();
    }
  }

  @Bean(destroyMethod = "close")
  public FencelockClient fencelockClient(Environment env) {
    FencelockClient.Builder b =
        FencelockClient.builder()
            .endpoints(env.getRequiredProperty("fencelock.endpoints"))
            .timeout(Duration.ofMillis(env.getProperty("fencelock.timeout-ms", Long.class, 5000L)));
    String pw = env.getProperty("fencelock.password");
    if (pw != null) {
      b.credentials(env.getProperty("fencelock.user"), pw);
    }
    String ca = env.getProperty("fencelock.tls.ca");
    if (ca != null && !ca.isBlank()) {
      String cert = env.getProperty("fencelock.tls.cert");
      String key = env.getProperty("fencelock.tls.key");
      b.tls(Path.of(ca), cert == null ? null : Path.of(cert), key == null ? null : Path.of(key));
    }
    return b.build();
  }

  @Bean(destroyMethod = "close")
  public FencedLockRegistry fencelockLockRegistry(FencelockClient client, Environment env) {
    return new FencedLockRegistry(
        client,
        Duration.ofMillis(env.getProperty("fencelock.session-ttl-ms", Long.class, 10000L)));
  }
}
