// SPDX-License-Identifier: Apache-2.0
package fencelock.bench;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * ZooKeeper through Apache Curator, as its users run it: one CuratorFramework (one ZooKeeper
 * session) per benchmark client, session timeout = the benchmark's TTL (the C driver's
 * zookeeper_init gets the same; the server raises it to its minimum, 4 s), connection timeout
 * 15 s or the TTL if shorter, ExponentialBackoffRetry(100 ms, 3 retries) as Curator's own examples. Each client keeps
 * one recipe object per name, made on first use and reused, as an application holds one
 * InterProcessMutex per lock: InterProcessMutex (under /curator/locks/), InterProcessReadWriteLock
 * (/curator/rw/), InterProcessSemaphoreV2 (/curator/sem/), LeaderLatch (/curator/elect/);
 * W13's InterProcessMultiLock (/curator/multi/) is made per set.
 * Curator's mutex gives no fencing token (token() is 0); W12's tokens are the latch nodes'
 * sequence numbers. Owns its CuratorFrameworks; close() closes them.
 */
final class CuratorSys implements Sys {
    private final String endpoints;
    private final String client;

    CuratorSys(String endpoints, String client) {
        this.endpoints = endpoints;
        this.client = client;
    }

    @Override
    public String driver() {
        return "curator";
    }

    @Override
    public String client() {
        return client;
    }

    /** A started CuratorFramework with its session established (30 s bound). */
    CuratorFramework connect(int ttlMs) throws Exception {
        CuratorFramework cf = CuratorFrameworkFactory.builder()
                .connectString(endpoints)
                .sessionTimeoutMs(ttlMs)
                .connectionTimeoutMs(Math.min(15000, ttlMs))
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        cf.start();
        if (!cf.blockUntilConnected(30, TimeUnit.SECONDS)) {
            cf.close();
            throw new TimeoutException("no ZooKeeper session within 30 s (" + endpoints + ")");
        }
        return cf;
    }

    @Override
    public Mutex mutex(int id, int ttlMs) throws Exception {
        CuratorFramework cf = connect(ttlMs);
        Map<String, InterProcessMutex> locks = new HashMap<>();
        return new Mutex() {
            @Override
            public boolean acquire(String name, int waitMs) throws Exception {
                InterProcessMutex m =
                        locks.computeIfAbsent(name, n -> new InterProcessMutex(cf, "/curator/locks/" + n));
                return m.acquire(waitMs, TimeUnit.MILLISECONDS);
            }

            @Override
            public long token() {
                return 0;
            }

            @Override
            public void release(String name) throws Exception {
                locks.get(name).release();
            }

            @Override
            public void close() {
                cf.close();
            }
        };
    }

    @Override
    public RwLock rwLock(int id, int ttlMs) throws Exception {
        CuratorFramework cf = connect(ttlMs);
        Map<String, InterProcessReadWriteLock> locks = new HashMap<>();
        return new RwLock() {
            private InterProcessMutex of(String name, boolean shared) {
                InterProcessReadWriteLock rw = locks.computeIfAbsent(
                        name, n -> new InterProcessReadWriteLock(cf, "/curator/rw/" + n));
                return shared ? rw.readLock() : rw.writeLock();
            }

            @Override
            public boolean acquire(String name, boolean shared, int waitMs) throws Exception {
                return of(name, shared).acquire(waitMs, TimeUnit.MILLISECONDS);
            }

            @Override
            public void release(String name, boolean shared) throws Exception {
                of(name, shared).release();
            }

            @Override
            public void close() {
                cf.close();
            }
        };
    }

    @Override
    public Semaphore semaphore(int id, int ttlMs) throws Exception {
        CuratorFramework cf = connect(ttlMs);
        Map<String, InterProcessSemaphoreV2> sems = new HashMap<>();
        Map<String, Lease> held = new HashMap<>();
        return new Semaphore() {
            @Override
            public boolean acquire(String name, int limit, int waitMs) throws Exception {
                InterProcessSemaphoreV2 s = sems.computeIfAbsent(
                        name, n -> new InterProcessSemaphoreV2(cf, "/curator/sem/" + n, limit));
                Lease l = s.acquire(waitMs, TimeUnit.MILLISECONDS);
                if (l == null)
                    return false;
                held.put(name, l);
                return true;
            }

            @Override
            public void release(String name) throws Exception {
                sems.get(name).returnLease(held.remove(name));
            }

            @Override
            public void close() {
                cf.close();
            }
        };
    }

    /**
     * W14 through Curator: SEM_PERMITS with InterProcessSemaphoreV2.acquire(qty) (3 of 10 leases,
     * returned together), BARRIER with DistributedDoubleBarrier (4 members, each on a session of
     * its own and a thread: the time from the last enter() started to every enter() returned,
     * then leave() the same way). Curator has no countdown latch: no LATCH row.
     */
    @Override
    public String w14Rows(int ttlMs, int count, int seconds) throws Exception {
        String base = "/curator/w14/lb-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        List<CuratorFramework> all = new ArrayList<>();
        java.util.concurrent.ExecutorService ex = java.util.concurrent.Executors.newFixedThreadPool(Bench.W14_PARTS);
        try {
            CuratorFramework cf = connect(ttlMs);
            all.add(cf);
            InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(cf, base + "-sem", Bench.W14_SEM_LIMIT);
            String rows = Bench.w14Row("SEM_PERMITS", null, count, seconds, i -> {
                long t0 = System.nanoTime();
                java.util.Collection<Lease> l = sem.acquire(Bench.W14_SEM_PERMITS, Bench.WAIT_MS, TimeUnit.MILLISECONDS);
                if (l == null)
                    throw new TimeoutException("3 permits not granted within the wait");
                sem.returnAll(l);
                return new double[] {Bench.ms(System.nanoTime() - t0)};
            });
            List<CuratorFramework> members = new ArrayList<>();
            for (int i = 0; i < Bench.W14_PARTS; i++) {
                CuratorFramework m = connect(ttlMs);
                all.add(m);
                members.add(m);
            }
            rows += Bench.w14Row("BARRIER", "leave", count, seconds, r -> {
                String path = base + "-barrier-" + r;
                List<DistributedDoubleBarrier> bs = new ArrayList<>();
                for (CuratorFramework m : members)
                    bs.add(new DistributedDoubleBarrier(m, path, Bench.W14_PARTS));
                long[] sent = new long[1];
                long entered = phase(ex, bs, true, sent);
                double enter = Bench.ms(entered - sent[0]);
                long left = phase(ex, bs, false, sent);
                return new double[] {enter, Bench.ms(left - sent[0])};
            });
            return rows;
        } finally {
            ex.shutdownNow();
            for (CuratorFramework c : all)
                c.close();
        }
    }

    /** Every member enters (or leaves) on a thread of its own: the time the last one returned;
     *  sent[0]: the time the last one was started. */
    private static long phase(java.util.concurrent.ExecutorService ex, List<DistributedDoubleBarrier> bs,
            boolean enter, long[] sent) throws Exception {
        List<java.util.concurrent.Future<Long>> fs = new ArrayList<>();
        for (DistributedDoubleBarrier b : bs) {
            sent[0] = System.nanoTime();
            fs.add(ex.submit(() -> {
                boolean ok = enter ? b.enter(Bench.WAIT_MS, TimeUnit.MILLISECONDS)
                                   : b.leave(Bench.WAIT_MS, TimeUnit.MILLISECONDS);
                if (!ok)
                    throw new TimeoutException("the barrier did not " + (enter ? "fill" : "empty") + " in time");
                return System.nanoTime();
            }));
        }
        long last = 0;
        for (java.util.concurrent.Future<Long> f : fs)
            last = Math.max(last, f.get(2L * Bench.WAIT_MS, TimeUnit.MILLISECONDS));
        return last;
    }

    /** The sequence number that ends a latch node's path ("..._c_<uuid>-latch-0000000012"). */
    static long seq(String path) {
        if (path == null || path.length() < 10)
            return -1;
        return Long.parseLong(path.substring(path.length() - 10));
    }

    /**
     * W12 through LeaderLatch: L and C are latches of participant ids "L" and "C" on sessions of
     * their own; an observer (a session of its own, no latch) lists the latch's children with a
     * watch, takes the lowest sequence number as the leader (LeaderLatch's own rule) and reads its
     * participant id, until that is "C". The leader's session is ended by closing its ZooKeeper
     * handle (the server's closeSession transaction deletes its ephemeral latch node), so that
     * the latch's own close (a delete of its node) never runs: ZooKeeper has no call that ends
     * another client's session, and a handle attached to L's session id from elsewhere would
     * race L's client reconnecting to it.
     */
    @Override
    public Election election(int ttlMs) throws Exception {
        final String base = "/curator/elect/lb-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        return new Election() {
            @Override
            public Round round(int r, int observers) throws Exception {
                String path = base + "-" + r;
                List<CuratorFramework> all = new ArrayList<>();
                try {
                    CuratorFramework lcf = connect(ttlMs);
                    all.add(lcf);
                    CuratorFramework ccf = connect(ttlMs);
                    all.add(ccf);
                    List<CuratorFramework> obs = new ArrayList<>();
                    for (int i = 0; i < observers; i++) {
                        CuratorFramework o = connect(ttlMs);
                        all.add(o);
                        obs.add(o);
                    }
                    LeaderLatch l = new LeaderLatch(lcf, path, "L");
                    l.start();
                    if (!l.await(Bench.EL_ROUND_MS, TimeUnit.MILLISECONDS))
                        throw new TimeoutException("the leader was not elected");
                    return new CuratorRound(path, lcf, ccf, obs, l, all);
                } catch (Exception e) {
                    for (CuratorFramework cf : all)
                        cf.close();
                    throw e;
                }
            }

            @Override
            public void close() {}
        };
    }

    private static final class CuratorRound implements Round {
        private final String path;
        private final CuratorFramework lcf, ccf;
        private final List<CuratorFramework> obs, all;
        private final LeaderLatch leader;
        private volatile LeaderLatch cand;

        CuratorRound(String path, CuratorFramework lcf, CuratorFramework ccf, List<CuratorFramework> obs,
                LeaderLatch leader, List<CuratorFramework> all) {
            this.path = path;
            this.lcf = lcf;
            this.ccf = ccf;
            this.obs = obs;
            this.leader = leader;
            this.all = all;
        }

        @Override
        public long leaderToken() {
            return seq(leader.getOurPath());
        }

        @Override
        public long candidate(long deadlineNanos) throws Exception {
            LeaderLatch c = new LeaderLatch(ccf, path, "C");
            cand = c;
            c.start();
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0 || !c.await(left, TimeUnit.NANOSECONDS))
                throw new TimeoutException("the candidate did not lead in time");
            return seq(c.getOurPath());
        }

        @Override
        public void observe(int idx, long deadlineNanos) throws Exception {
            CuratorFramework cf = obs.get(idx);
            while (true) {
                CountDownLatch changed = new CountDownLatch(1);
                List<String> kids =
                        cf.getChildren().usingWatcher((org.apache.zookeeper.Watcher) e -> changed.countDown())
                                .forPath(path);
                String low = null;
                for (String k : kids)
                    if (low == null || seq(k) < seq(low))
                        low = k;
                if (low != null) {
                    try {
                        byte[] id = cf.getData().forPath(path + "/" + low);
                        if ("C".equals(new String(id, java.nio.charset.StandardCharsets.UTF_8)))
                            return;
                    } catch (org.apache.zookeeper.KeeperException.NoNodeException gone) {
                        continue; // deleted between the list and the read: list again
                    }
                }
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0 || !changed.await(left, TimeUnit.NANOSECONDS))
                    throw new TimeoutException("observer " + idx + " did not see the candidate lead");
            }
        }

        @Override
        public void killLeader() throws Exception {
            lcf.getZookeeperClient().getZooKeeper().close();
        }

        @Override
        public void close() {
            LeaderLatch c = cand;
            try {
                if (c != null)
                    c.close();
            } catch (Exception e) {
                // the session is closed below anyway: its node goes with it
            }
            for (CuratorFramework cf : all)
                cf.close();
        }
    }

    /**
     * InterProcessMultiLock over one InterProcessMutex path per name (/curator/multi/NAME): it
     * acquires them in the order given, each with the whole wait (so a set of n may wait up to
     * n x waitMs), and releases those it took when one is not granted. A new recipe object per
     * set, as the recipe is built from its paths (it creates nothing on ZooKeeper until acquire).
     */
    @Override
    public MultiLock multiLock(int id, int ttlMs) throws Exception {
        CuratorFramework cf = connect(ttlMs);
        return new MultiLock() {
            private InterProcessMultiLock held;

            @Override
            public boolean acquire(List<String> names, int waitMs) throws Exception {
                List<String> paths = new ArrayList<>();
                for (String n : names)
                    paths.add("/curator/multi/" + n);
                InterProcessMultiLock m = new InterProcessMultiLock(cf, paths);
                if (!m.acquire(waitMs, TimeUnit.MILLISECONDS))
                    return false;
                held = m;
                return true;
            }

            @Override
            public void release() throws Exception {
                InterProcessMultiLock m = held;
                held = null;
                m.release();
            }

            @Override
            public void close() {
                cf.close();
            }
        };
    }

    @Override
    public void close() {}
}
