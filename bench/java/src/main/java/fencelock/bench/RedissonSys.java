// SPDX-License-Identifier: Apache-2.0
package fencelock.bench;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.ReadMode;
import org.redisson.config.SentinelServersConfig;

/**
 * Redis through Redisson, as its users run it: one RedissonClient per benchmark client (a lock
 * owner is a client's id and thread, so two clients are two processes to Redis), the
 * single-server mode against bench/servers/redis.sh's server. Waiters are woken by Redisson's
 * pub/sub channel of the lock (no polling). The lock's lease is Redisson's watchdog (no
 * leaseTime given, as users call lock()/tryLock(wait)), its timeout set to the benchmark's TTL
 * so that it matches the hiredis driver's PX (Redisson's default is 30 s).
 *
 * <p>The clients share one Netty event loop group of 2 threads (the machine's cores) and keep
 * small pools (1-2 command connections, 1-2 pub/sub connections each): 16 clients with
 * Redisson's defaults would open 16 x 24+ connections and 16 x 2 x cores threads in this one
 * JVM, where each real process would have one client. The group is shut down by close().
 *
 * <p>With a Sentinel master name (W8: bench/servers/redis-sentinel.sh), the clients run in
 * Redisson's Sentinel mode instead: the endpoints are the Sentinels', commands and pub/sub go to
 * the primary they name (read mode MASTER: a lock is never read from a replica), and Redisson
 * follows a fail-over by itself.
 *
 * <p>Drivers: "redisson" (RLock; RReadWriteLock for W9, RSemaphore for W11, RedissonMultiLock for
 * W13) and "redisson-fenced" (RFencedLock, tryLockAndGetToken: the token is Redis's INCR on the lock's
 * token key, increasing with every grant of that lock).
 */
final class RedissonSys implements Sys {
    private final String endpoints, client, sentinelMaster;
    private final boolean fenced;
    private final EventLoopGroup group = new NioEventLoopGroup(2);

    RedissonSys(String endpoints, String client, boolean fenced, String sentinelMaster) {
        this.sentinelMaster = sentinelMaster;
        this.endpoints = endpoints;
        this.client = client;
        this.fenced = fenced;
    }

    @Override
    public String driver() {
        return fenced ? "redisson-fenced" : "redisson";
    }

    @Override
    public String client() {
        return client;
    }

    RedissonClient connect(int ttlMs) {
        Config c = new Config();
        c.setEventLoopGroup(group);
        c.setThreads(2);
        c.setLockWatchdogTimeout(ttlMs);
        if (sentinelMaster != null) {
            SentinelServersConfig sc = c.useSentinelServers().setMasterName(sentinelMaster);
            for (String ep : endpoints.split(","))
                sc.addSentinelAddress("redis://" + ep);
            sc.setReadMode(ReadMode.MASTER)
                    .setMasterConnectionMinimumIdleSize(1)
                    .setMasterConnectionPoolSize(2)
                    .setSlaveConnectionMinimumIdleSize(1)
                    .setSlaveConnectionPoolSize(2)
                    .setSubscriptionConnectionMinimumIdleSize(1)
                    .setSubscriptionConnectionPoolSize(2);
            return Redisson.create(c);
        }
        String ep = endpoints.split(",")[0];
        c.useSingleServer()
                .setAddress("redis://" + ep)
                .setConnectionMinimumIdleSize(1)
                .setConnectionPoolSize(2)
                .setSubscriptionConnectionMinimumIdleSize(1)
                .setSubscriptionConnectionPoolSize(2);
        return Redisson.create(c);
    }

    @Override
    public Mutex mutex(int id, int ttlMs) {
        RedissonClient rc = connect(ttlMs);
        return new Mutex() {
            private long token;

            @Override
            public boolean acquire(String name, int waitMs) throws Exception {
                if (!fenced)
                    return rc.getLock("lock:" + name).tryLock(waitMs, TimeUnit.MILLISECONDS);
                RFencedLock l = rc.getFencedLock("fenced:" + name);
                Long t = l.tryLockAndGetToken(waitMs, TimeUnit.MILLISECONDS);
                if (t == null)
                    return false;
                token = t;
                return true;
            }

            @Override
            public long token() {
                return fenced ? token : 0;
            }

            @Override
            public void release(String name) {
                RLock l = fenced ? rc.getFencedLock("fenced:" + name) : rc.getLock("lock:" + name);
                l.unlock();
            }

            @Override
            public void close() {
                rc.shutdown();
            }
        };
    }

    @Override
    public RwLock rwLock(int id, int ttlMs) {
        if (fenced)
            return null;
        RedissonClient rc = connect(ttlMs);
        return new RwLock() {
            private RLock of(String name, boolean shared) {
                RReadWriteLock rw = rc.getReadWriteLock("rw:" + name);
                return shared ? rw.readLock() : rw.writeLock();
            }

            @Override
            public boolean acquire(String name, boolean shared, int waitMs) throws Exception {
                return of(name, shared).tryLock(waitMs, TimeUnit.MILLISECONDS);
            }

            @Override
            public void release(String name, boolean shared) {
                of(name, shared).unlock();
            }

            @Override
            public void close() {
                rc.shutdown();
            }
        };
    }

    /**
     * RSemaphore: permits set once with trySetPermits (a no-op when already set); a permit is
     * not tied to a session or lease, so a client that dies holding one never gives it back
     * (Redisson's RPermitExpirableSemaphore is the leased kind; the brief's recipe is RSemaphore).
     */
    @Override
    public Semaphore semaphore(int id, int ttlMs) {
        if (fenced)
            return null;
        RedissonClient rc = connect(ttlMs);
        return new Semaphore() {
            private boolean set;

            @Override
            public boolean acquire(String name, int limit, int waitMs) throws Exception {
                RSemaphore s = rc.getSemaphore("sem:" + name);
                if (!set) {
                    s.trySetPermits(limit);
                    set = true;
                }
                return s.tryAcquire(java.time.Duration.ofMillis(waitMs));
            }

            @Override
            public void release(String name) {
                rc.getSemaphore("sem:" + name).release();
            }

            @Override
            public void close() {
                rc.shutdown();
            }
        };
    }

    /**
     * W14 through Redisson: SEM_PERMITS with RSemaphore.tryAcquire(3, wait) + release(3) (10
     * permits, set once), LATCH with RCountDownLatch (trySetCount(4), 4 waiters each on a client
     * of its own and a thread await(), 4 countDown(): the time from the last countDown() to every
     * await() returned; round: trySetCount to delete). Redisson has no double barrier: no BARRIER
     * row. (Its latch is not bound to the waiters' or counters' liveness: a counter that dies
     * leaves the waiters to their timeout; fencelock's breaks it.)
     */
    @Override
    public String w14Rows(int ttlMs, int count, int seconds) throws Exception {
        if (fenced)
            return null;
        String base = "lb-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + "-W14";
        java.util.List<RedissonClient> all = new java.util.ArrayList<>();
        java.util.concurrent.ExecutorService ex =
                java.util.concurrent.Executors.newFixedThreadPool(Bench.W14_WAITERS);
        try {
            RedissonClient rc = connect(ttlMs);
            all.add(rc);
            RSemaphore sem = rc.getSemaphore("sem:" + base);
            sem.trySetPermits(Bench.W14_SEM_LIMIT);
            String rows = Bench.w14Row("SEM_PERMITS", null, count, seconds, i -> {
                long t0 = System.nanoTime();
                if (!sem.tryAcquire(Bench.W14_SEM_PERMITS, java.time.Duration.ofMillis(Bench.WAIT_MS)))
                    throw new java.util.concurrent.TimeoutException("3 permits not granted within the wait");
                sem.release(Bench.W14_SEM_PERMITS);
                return new double[] {Bench.ms(System.nanoTime() - t0)};
            });
            java.util.List<RedissonClient> waiters = new java.util.ArrayList<>();
            for (int i = 0; i < Bench.W14_WAITERS; i++) {
                RedissonClient w = connect(ttlMs);
                all.add(w);
                waiters.add(w);
            }
            rows += Bench.w14Row("LATCH", "round", count, seconds, r -> {
                String name = "latch:" + base + "-" + r;
                long r0 = System.nanoTime();
                RCountDownLatch l = rc.getCountDownLatch(name);
                l.trySetCount(Bench.W14_PARTS);
                java.util.List<java.util.concurrent.Future<Long>> fs = new java.util.ArrayList<>();
                for (RedissonClient w : waiters)
                    fs.add(ex.submit(() -> {
                        if (!w.getCountDownLatch(name).await(Bench.WAIT_MS, TimeUnit.MILLISECONDS))
                            throw new java.util.concurrent.TimeoutException("the latch did not reach zero in time");
                        return System.nanoTime();
                    }));
                long last = 0;
                for (int i = 0; i < Bench.W14_PARTS; i++) {
                    last = System.nanoTime();
                    l.countDown();
                }
                long released = 0;
                for (java.util.concurrent.Future<Long> f : fs)
                    released = Math.max(released, f.get(2L * Bench.WAIT_MS, TimeUnit.MILLISECONDS));
                l.delete();
                return new double[] {Bench.ms(released - last), Bench.ms(System.nanoTime() - r0)};
            });
            sem.delete();
            return rows;
        } finally {
            ex.shutdownNow();
            for (RedissonClient c : all)
                c.shutdown();
        }
    }

    @Override
    public Election election(int ttlMs) {
        return null;
    }

    /**
     * RedissonMultiLock (getMultiLock over one RLock per name, as its documentation shows): its
     * tryLock(wait) takes the locks one by one in the order given, each waiting up to the rest
     * of the wait, and releases those it holds when one is not granted in time (lock() loops on
     * the same with a wait of 1.5 s per lock until it holds them all; the benchmark bounds every
     * wait). Owned by the thread that locked it, as every RLock: the harness releases it from the
     * same thread. None for the fenced driver (RFencedLock has no multi-lock).
     */
    @Override
    public MultiLock multiLock(int id, int ttlMs) {
        if (fenced)
            return null;
        RedissonClient rc = connect(ttlMs);
        return new MultiLock() {
            private RLock held;

            @Override
            public boolean acquire(java.util.List<String> names, int waitMs) throws Exception {
                RLock[] ls = new RLock[names.size()];
                for (int i = 0; i < ls.length; i++)
                    ls[i] = rc.getLock("lock:" + names.get(i));
                RLock m = rc.getMultiLock(ls);
                if (!m.tryLock(waitMs, TimeUnit.MILLISECONDS))
                    return false;
                held = m;
                return true;
            }

            @Override
            public void release() {
                RLock m = held;
                held = null;
                m.unlock();
            }

            @Override
            public void close() {
                rc.shutdown();
            }
        };
    }

    @Override
    public void close() {
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
}
