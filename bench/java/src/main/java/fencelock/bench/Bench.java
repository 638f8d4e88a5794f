// SPDX-License-Identifier: Apache-2.0
package fencelock.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Java side of the lock benchmark: lockbench's workloads (bench/lockbench.c, rwbench.c,
 * sembench.c, electbench.c) run on a system reached through its own Java client, writing the
 * same JSON lines, so that bench/run.sh puts them in the one report beside the C drivers' rows.
 * Every line also carries "client": the library and version.
 *
 * <pre>
 * java -cp build/java/fencelock-bench.jar:build/java/lib/* fencelock.bench.Bench
 *      --system curator|redisson|redisson-fenced --endpoints h:p,h:p [--ttl ms]
 *      [--sentinel-master NAME]   (Redisson: the endpoints are Sentinels watching NAME)
 * </pre>
 *
 * then one command a line on standard input, answered by one JSON line on standard output:
 * lockbench's options ({@code --workload W1|W2|W3|W8|W9|W11|W12|W13|W14 [--clients N] [--pairs N]
 * [--seconds S] [--warmup N] [--hold ms] [--writer-pause ms] [--limit N] [--rounds N] [--k N]
 * [--way multi]}), with
 * {@code --kill-cmd} last (W8: the rest of the line is the shell command); {@code --workload
 * warmup --seconds S} runs W1, W2, W3 (and W9, W11, W13 where the client has them) for S seconds each
 * and discards them (the JIT's warm-up: bench/run.sh sends it first); {@code quit} or the end of
 * input ends the JVM. So the JVM starts once per system and serves all its workloads. The
 * workloads' bounds are lockbench's: --pairs operations or --seconds, every call waits at most
 * 5 s, W1-W3 are preceded by lockbench's own warm-up (--warmup operations, default 300, at most
 * 3 s). Nothing but the JSON lines is written to standard output (the clients log to standard
 * error). A command that fails gets a line with "errors" and "error"; the JVM goes on.
 */
public final class Bench {
    static final int WAIT_MS = 5000; // every acquire's wait, as lockbench's WAIT_MS
    static final int WARMUP_MAX_MS = 3000;
    static final int EL_ROUND_MS = 8000; // elect.h
    static final int EL_SETTLE_MS = 150;
    static final int W8_CLIENTS = 8, W8_GUARD_MS = 100;

    private final Sys sys;
    private final int ttlMs;

    private Bench(Sys sys, int ttlMs) {
        this.sys = sys;
        this.ttlMs = ttlMs;
    }

    // ---- options ----

    static final class Opts {
        String workload, killCmd;
        int clients = 0, pairs = 100000, seconds = 10, warmup = 300, hold = 1, writerPause = 10;
        int limit = 4, rounds = 10, k = 2;
    }

    static int num(String v, int lo, int hi) {
        int n = Integer.parseInt(v);
        if (n < lo || n > hi)
            throw new IllegalArgumentException(v + " not in " + lo + ".." + hi);
        return n;
    }

    /** One command line; --kill-cmd takes the rest of the line. */
    static Opts parse(String line) {
        Opts o = new Opts();
        String rest = line.trim();
        int k = rest.indexOf("--kill-cmd ");
        if (k >= 0) {
            o.killCmd = rest.substring(k + "--kill-cmd ".length()).trim();
            rest = rest.substring(0, k).trim();
        }
        String[] a = rest.isEmpty() ? new String[0] : rest.split("\\s+");
        for (int i = 0; i < a.length; i++) {
            if (i + 1 >= a.length)
                throw new IllegalArgumentException("option " + a[i] + " without a value");
            String v = a[++i];
            switch (a[i - 1]) {
                case "--workload" -> o.workload = v;
                case "--clients" -> o.clients = num(v, 1, 256);
                case "--pairs" -> o.pairs = num(v, 1, 10000000);
                case "--seconds" -> o.seconds = num(v, 1, 3600);
                case "--warmup" -> o.warmup = num(v, 0, 1000000);
                case "--hold" -> o.hold = num(v, 0, 1000);
                case "--writer-pause" -> o.writerPause = num(v, 0, 60000);
                case "--limit" -> o.limit = num(v, 1, 1048576);
                case "--rounds" -> o.rounds = num(v, 1, 1000);
                case "--k" -> o.k = num(v, 1, 8);
                case "--way" -> {
                    if (!v.equals("multi"))
                        throw new IllegalArgumentException("--way " + v + ": the Java clients run their multi-lock");
                }
                default -> throw new IllegalArgumentException("unknown option " + a[i - 1]);
            }
        }
        if (o.workload == null)
            throw new IllegalArgumentException("no --workload");
        if (o.clients == 0)
            o.clients = switch (o.workload) {
                case "W1" -> 1;
                case "W2", "W8" -> 8;
                case "W12" -> 4;
                case "W13" -> 8;
                default -> 16;
            };
        return o;
    }

    // ---- JSON ----

    static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\')
                b.append('\\').append(c);
            else if (c < 0x20)
                b.append(String.format("\\u%04x", (int) c));
            else
                b.append(c);
        }
        return b.append('"').toString();
    }

    static String f(double v, int d) {
        return String.format(java.util.Locale.ROOT, "%." + d + "f", v);
    }

    private StringBuilder head(String workload) {
        return new StringBuilder("{\"driver\":").append(str(sys.driver())).append(",\"workload\":")
                .append(str(workload));
    }

    private String tail(StringBuilder b, String err) {
        if (err != null && !err.isEmpty())
            b.append(",\"error\":").append(str(err));
        return b.append(",\"client\":").append(str(sys.client())).append('}').toString();
    }

    private String errorLine(String workload, String err) {
        return tail(head(workload).append(",\"errors\":1"), err);
    }

    static String msg(Throwable t) {
        String m = t.getMessage();
        return t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    static double ms(long nanos) {
        return nanos / 1e6;
    }

    static void sleepMs(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** p50, p99, max of v[0..n) as lockbench takes them: sorted[n/2], sorted[n*99/100]. */
    static double[] pct(double[] v, int n) {
        if (n == 0)
            return new double[] {0, 0, 0};
        double[] s = Arrays.copyOf(v, n);
        Arrays.sort(s);
        return new double[] {s[n / 2], s[(int) ((long) n * 99 / 100)], s[n - 1]};
    }

    /** pct over the first `clients` clients' samples together (lat[i][0..n[i])). */
    static double[] pctMerged(double[][] lat, int[] n, int clients) {
        int total = 0;
        for (int i = 0; i < clients; i++)
            total += n[i];
        double[] all = new double[total];
        int k = 0;
        for (int i = 0; i < clients; i++) {
            System.arraycopy(lat[i], 0, all, k, n[i]);
            k += n[i];
        }
        return pct(all, total);
    }

    /** Starts n threads behind one barrier; returns the time the barrier opened, after joining. */
    static long runThreads(int n, java.util.function.IntConsumer body, long[] start) throws Exception {
        CyclicBarrier go = new CyclicBarrier(n + 1);
        Thread[] t = new Thread[n];
        for (int i = 0; i < n; i++) {
            final int id = i;
            t[i] = new Thread(() -> {
                try {
                    go.await();
                } catch (Exception e) {
                    return;
                }
                body.accept(id);
            }, "bench-" + i);
            t[i].start();
        }
        start[0] = System.nanoTime();
        go.await();
        for (Thread x : t)
            x.join();
        return start[0];
    }

    // ---- W1-W3: lockbench's loop ----

    static final class Worker {
        Sys.Mutex cl;
        int id, done, timeouts, errors, handoffs;
        String lock, err = "";
        double[] lat;
        long lastNs, lastToken = -1;
        boolean tokenBack; // a grant's token not above the previous grant's (fenced only)
    }

    static final class Phase {
        boolean contended;
        int total;
        long endNs;
        final AtomicInteger taken = new AtomicInteger(), lastOwner = new AtomicInteger(-1);
        final AtomicLong lastToken = new AtomicLong(-1); // W2's one lock
        volatile boolean stop;
    }

    private void work(Phase ph, Worker w) {
        while (!ph.stop && System.nanoTime() < ph.endNs) {
            if (ph.taken.getAndIncrement() >= ph.total)
                break;
            double lat;
            boolean handoff = false;
            try {
                long t0 = System.nanoTime();
                if (!w.cl.acquire(w.lock, WAIT_MS)) {
                    w.timeouts++;
                    continue;
                }
                long t1 = System.nanoTime(), tok = w.cl.token();
                if (ph.contended) {
                    handoff = ph.lastOwner.getAndSet(w.id) != w.id;
                    if (tok != 0 && tok <= ph.lastToken.getAndSet(tok))
                        w.tokenBack = true;
                } else if (tok != 0) {
                    if (tok <= w.lastToken)
                        w.tokenBack = true;
                    w.lastToken = tok;
                }
                w.cl.release(w.lock);
                lat = ms(ph.contended ? t1 - t0 : System.nanoTime() - t0);
            } catch (Exception e) {
                w.errors++;
                w.err = msg(e);
                ph.stop = true;
                break;
            }
            long t = System.nanoTime();
            if (t > ph.endNs)
                break;
            if (w.done < w.lat.length)
                w.lat[w.done] = lat;
            w.done++;
            if (handoff)
                w.handoffs++;
            w.lastNs = t;
        }
    }

    private double phase(Phase ph, Worker[] ws) throws Exception {
        for (Worker w : ws) {
            w.done = w.timeouts = w.errors = w.handoffs = 0;
            w.lastNs = 0;
        }
        long[] start = new long[1];
        runThreads(ws.length, i -> work(ph, ws[i]), start);
        long last = start[0];
        for (Worker w : ws)
            last = Math.max(last, w.lastNs);
        return ms(last - start[0]);
    }

    private String w123(Opts o) throws Exception {
        int n = o.clients;
        boolean contended = o.workload.equals("W2");
        int cap = contended ? o.pairs : Math.min(o.pairs / n + 1, 2000000);
        Worker[] ws = new Worker[n];
        long pid = ProcessHandle.current().pid();
        String tag = "lb-" + pid + "-" + System.nanoTime() + "-" + o.workload;
        try {
            for (int i = 0; i < n; i++) {
                Worker w = new Worker();
                w.id = i;
                w.lat = new double[cap];
                w.lock = contended ? tag + "-shared" : tag + "-" + i;
                w.cl = sys.mutex(i, ttlMs);
                ws[i] = w;
            }
            if (o.warmup > 0) {
                Phase warm = new Phase();
                warm.contended = contended;
                warm.total = o.warmup;
                warm.endNs = System.nanoTime() + WARMUP_MAX_MS * 1000000L;
                phase(warm, ws);
                for (Worker w : ws)
                    if (w.errors > 0)
                        return errorLine(o.workload, "warm-up: " + w.err);
            }
            Phase meas = new Phase();
            meas.contended = contended;
            meas.total = o.pairs;
            meas.endNs = System.nanoTime() + o.seconds * 1000000000L;
            double el = phase(meas, ws);
            return w123Line(o, ws, el);
        } catch (Exception e) {
            return errorLine(o.workload, msg(e));
        } finally {
            for (Worker w : ws)
                if (w != null && w.cl != null)
                    w.cl.close();
        }
    }

    private String w123Line(Opts o, Worker[] ws, double elapsedMs) {
        int ops = 0, handoffs = 0, timeouts = 0, errors = 0, fmin = -1, fmax = 0, cnt = 0;
        boolean back = false;
        String err = "";
        for (Worker w : ws) {
            ops += w.done;
            handoffs += w.handoffs;
            timeouts += w.timeouts;
            errors += w.errors;
            if (w.errors > 0 && err.isEmpty())
                err = w.err;
            fmin = fmin < 0 || w.done < fmin ? w.done : fmin;
            fmax = Math.max(fmax, w.done);
            cnt += Math.min(w.done, w.lat.length);
            back |= w.tokenBack;
        }
        double[] all = new double[cnt];
        int k = 0;
        for (Worker w : ws) {
            int m = Math.min(w.done, w.lat.length);
            System.arraycopy(w.lat, 0, all, k, m);
            k += m;
        }
        double[] p = pct(all, cnt);
        double s = elapsedMs > 0 ? elapsedMs / 1e3 : 1;
        StringBuilder b = head(o.workload);
        b.append(",\"clients\":").append(o.clients).append(",\"ttl_ms\":").append(ttlMs)
                .append(",\"seconds\":").append(f(s, 3)).append(",\"ops\":").append(ops)
                .append(",\"ops_per_s\":").append(f(ops / s, 1)).append(",\"p50_ms\":").append(f(p[0], 3))
                .append(",\"p99_ms\":").append(f(p[1], 3)).append(",\"max_ms\":").append(f(p[2], 3))
                .append(",\"timeouts\":").append(timeouts).append(",\"errors\":").append(errors);
        if (o.workload.equals("W2"))
            b.append(",\"grants_per_s\":").append(f(ops / s, 1)).append(",\"handoffs_per_s\":")
                    .append(f(handoffs / s, 1)).append(",\"fair_min\":").append(fmin).append(",\"fair_max\":")
                    .append(fmax).append(",\"fairness\":").append(f(fmax > 0 ? (double) fmin / fmax : 0, 3));
        if (sys.driver().endsWith("-fenced"))
            b.append(",\"tokens_increasing\":").append(!back);
        return tail(b, err);
    }

    // ---- W8: fail-over ----

    private String w8(Opts o) throws Exception {
        if (o.killCmd == null)
            return errorLine("W8", "W8 needs --kill-cmd");
        String lock = "lb-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + "-W8";
        AtomicLong killNs = new AtomicLong(), grantNs = new AtomicLong();
        AtomicInteger errors = new AtomicInteger();
        String[] firstErr = {""};
        List<Sys.Mutex> cls = new ArrayList<>();
        List<Thread> ts = new ArrayList<>();
        StopFlag stop = new StopFlag();
        double failover = -1;
        String err = "";
        boolean ok = false;
        try {
            for (int i = 0; i < W8_CLIENTS; i++)
                cls.add(sys.mutex(i, ttlMs));
            for (Sys.Mutex cl : cls) {
                Thread t = new Thread(() -> {
                    while (!stop.v) {
                        try {
                            if (!cl.acquire(lock, WAIT_MS))
                                continue;
                            long t1 = System.nanoTime(), kill = killNs.get();
                            if (kill != 0 && t1 > kill + W8_GUARD_MS * 1000000L)
                                grantNs.compareAndSet(0, t1);
                            cl.release(lock);
                        } catch (Exception e) {
                            // counted; the same client goes on, as its recipe recovers
                            if (errors.getAndIncrement() == 0)
                                firstErr[0] = msg(e);
                            sleepMs(20);
                        }
                    }
                }, "w8");
                t.start();
                ts.add(t);
            }
            sleepMs(1500);
            Process p = new ProcessBuilder("sh", "-c", o.killCmd).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            int killed = p.waitFor();
            killNs.set(System.nanoTime());
            long end = System.nanoTime() + 60000000000L;
            while (grantNs.get() == 0 && System.nanoTime() < end)
                sleepMs(1);
            long g = grantNs.get();
            if (killed != 0)
                err = "kill command failed (status " + killed + ")";
            else if (g != 0) {
                failover = ms(g - killNs.get());
                ok = true;
            } else
                err = "no grant within 60 s of the kill";
        } catch (Exception e) {
            err = msg(e);
        } finally {
            stop.v = true;
            for (Thread t : ts)
                t.join(2L * WAIT_MS + 30000);
            for (Sys.Mutex cl : cls)
                cl.close();
        }
        StringBuilder b = head("W8").append(",\"clients\":").append(W8_CLIENTS).append(",\"failover_ms\":")
                .append(f(failover, 1)).append(",\"errors\":").append(errors.get());
        if (!ok && err.isEmpty())
            err = firstErr[0];
        if (!ok)
            return tail(b, err);
        if (!firstErr[0].isEmpty())
            b.append(",\"note\":").append(str(firstErr[0]));
        return tail(b, "");
    }

    static final class StopFlag {
        volatile boolean v;
    }

    // ---- W9: read-write locks (rwbench.c) ----

    private String w9(Opts o) throws Exception {
        int readers = o.clients;
        String lock = "lb-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + "-W9";
        List<AutoCloseable> cls = new ArrayList<>();
        Sys.RwLock[] rw = new Sys.RwLock[readers + 1];
        Sys.Mutex[] mx = new Sys.Mutex[readers + 1];
        try {
            for (int i = 0; i <= readers; i++) {
                rw[i] = sys.rwLock(i, ttlMs);
                if (rw[i] == null)
                    mx[i] = sys.mutex(i, ttlMs);
                cls.add(rw[i] != null ? rw[i] : mx[i]);
            }
        } catch (Exception e) {
            for (AutoCloseable c : cls)
                c.close();
            return errorLine("W9", msg(e));
        }
        boolean shared = rw[0] != null;
        int cap = 1000000 / (readers + 1);
        double[][] lat = new double[readers + 1][];
        int[] n = new int[readers + 1];
        long[] grants = new long[readers + 1], timeouts = new long[readers + 1], errs = new long[readers + 1];
        String[] err = new String[readers + 1];
        AtomicLong granted = new AtomicLong();
        AtomicInteger holding = new AtomicInteger(), maxHolding = new AtomicInteger();
        StopFlag stop = new StopFlag();
        long[] start = new long[1];
        long endNs = System.nanoTime() + o.seconds * 1000000000L;
        runThreads(readers + 1, i -> {
            boolean writer = i == readers;
            lat[i] = new double[writer ? 1000000 : cap];
            while (!stop.v && System.nanoTime() < endNs && granted.get() < o.pairs) {
                if (writer)
                    sleepMs(o.writerPause);
                boolean sh = !writer && shared;
                try {
                    long t0 = System.nanoTime();
                    boolean ok = rw[i] != null ? rw[i].acquire(lock, sh, WAIT_MS) : mx[i].acquire(lock, WAIT_MS);
                    if (!ok) {
                        timeouts[i]++;
                        continue;
                    }
                    long t1 = System.nanoTime();
                    if (!writer) {
                        int h = holding.incrementAndGet();
                        maxHolding.accumulateAndGet(h, Math::max);
                    }
                    if (o.hold > 0)
                        sleepMs(o.hold);
                    if (!writer)
                        holding.decrementAndGet();
                    if (rw[i] != null)
                        rw[i].release(lock, sh);
                    else
                        mx[i].release(lock);
                    if (n[i] < lat[i].length)
                        lat[i][n[i]++] = ms(t1 - t0);
                    grants[i]++;
                    if (!writer)
                        granted.incrementAndGet();
                } catch (Exception e) {
                    errs[i]++;
                    err[i] = msg(e);
                    stop.v = true;
                }
            }
            stop.v = true; // the writer stops with the readers, and they with it
        }, start);
        double secs = (System.nanoTime() - start[0]) / 1e9;
        for (AutoCloseable c : cls)
            c.close();
        long rg = 0, rt = 0, errors = 0;
        String e1 = "";
        for (int i = 0; i <= readers; i++) {
            errors += errs[i];
            if (err[i] != null && e1.isEmpty())
                e1 = err[i];
        }
        for (int i = 0; i < readers; i++) {
            rg += grants[i];
            rt += timeouts[i];
        }
        double[] r = pctMerged(lat, n, readers), w = pct(lat[readers], n[readers]);
        StringBuilder b = head("W9").append(",\"readers\":").append(readers).append(",\"reader_mode\":")
                .append(str(shared ? "shared" : "exclusive")).append(",\"writer_pause_ms\":").append(o.writerPause)
                .append(",\"hold_ms\":").append(o.hold).append(",\"seconds\":").append(f(secs, 3))
                .append(",\"reader_grants\":").append(rg).append(",\"reader_grants_per_s\":")
                .append(f(secs > 0 ? rg / secs : 0, 1)).append(",\"reader_wait_p50_ms\":").append(f(r[0], 3))
                .append(",\"reader_wait_p99_ms\":").append(f(r[1], 3)).append(",\"reader_timeouts\":").append(rt)
                .append(",\"max_readers_holding\":").append(maxHolding.get()).append(",\"writer_grants\":")
                .append(grants[readers]).append(",\"writer_grants_per_s\":")
                .append(f(secs > 0 ? grants[readers] / secs : 0, 1)).append(",\"writer_wait_p50_ms\":")
                .append(f(w[0], 3)).append(",\"writer_wait_p99_ms\":").append(f(w[1], 3))
                .append(",\"writer_wait_max_ms\":").append(f(w[2], 3)).append(",\"writer_timeouts\":")
                .append(timeouts[readers]).append(",\"errors\":").append(errors);
        return tail(b, e1);
    }

    // ---- W11: semaphores (sembench.c) ----

    private String w11(Opts o) throws Exception {
        int nc = o.clients;
        String name = "lb-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + "-W11";
        Sys.Semaphore[] cl = new Sys.Semaphore[nc];
        String early = null;
        try {
            for (int i = 0; i < nc && early == null; i++) {
                cl[i] = sys.semaphore(i, ttlMs);
                if (cl[i] == null)
                    early = tail(head("W11").append(",\"skipped\":").append(str("no semaphore in this client")), "");
            }
        } catch (Exception e) {
            early = errorLine("W11", msg(e));
        }
        if (early != null) {
            for (Sys.Semaphore c : cl)
                if (c != null)
                    c.close();
            return early;
        }
        int cap = 1000000 / nc;
        double[][] lat = new double[nc][cap];
        int[] n = new int[nc];
        long[] grants = new long[nc], timeouts = new long[nc], errs = new long[nc];
        String[] err = new String[nc];
        AtomicLong granted = new AtomicLong();
        AtomicInteger holding = new AtomicInteger(), maxHolding = new AtomicInteger();
        StopFlag stop = new StopFlag();
        long[] start = new long[1];
        long endNs = System.nanoTime() + o.seconds * 1000000000L;
        try {
            runThreads(nc, i -> {
                while (!stop.v && System.nanoTime() < endNs && granted.get() < o.pairs) {
                    try {
                        long t0 = System.nanoTime();
                        if (!cl[i].acquire(name, o.limit, WAIT_MS)) {
                            timeouts[i]++;
                            continue;
                        }
                        long t1 = System.nanoTime();
                        maxHolding.accumulateAndGet(holding.incrementAndGet(), Math::max);
                        if (o.hold > 0)
                            sleepMs(o.hold);
                        holding.decrementAndGet();
                        cl[i].release(name);
                        if (n[i] < cap)
                            lat[i][n[i]++] = ms(t1 - t0);
                        grants[i]++;
                        granted.incrementAndGet();
                    } catch (Exception e) {
                        errs[i]++;
                        err[i] = msg(e);
                        break;
                    }
                }
                stop.v = true;
            }, start);
        } finally {
            for (Sys.Semaphore c : cl)
                if (c != null)
                    c.close();
        }
        double secs = (System.nanoTime() - start[0]) / 1e9;
        long g = 0, to = 0, errors = 0;
        String e1 = "";
        for (int i = 0; i < nc; i++) {
            g += grants[i];
            to += timeouts[i];
            errors += errs[i];
            if (err[i] != null && e1.isEmpty())
                e1 = err[i];
        }
        double[] p = pctMerged(lat, n, nc);
        StringBuilder b = head("W11").append(",\"clients\":").append(nc).append(",\"limit\":").append(o.limit)
                .append(",\"hold_ms\":").append(o.hold).append(",\"seconds\":").append(f(secs, 3))
                .append(",\"grants\":").append(g).append(",\"handoffs_per_s\":").append(f(secs > 0 ? g / secs : 0, 1))
                .append(",\"wait_p50_ms\":").append(f(p[0], 3)).append(",\"wait_p99_ms\":").append(f(p[1], 3))
                .append(",\"timeouts\":").append(to).append(",\"max_holding\":").append(maxHolding.get())
                .append(",\"errors\":").append(errors);
        return tail(b, e1);
    }

    // ---- W14: the coordination primitives (primbench.c) ----

    static final int W14_PARTS = 4, W14_WAITERS = 4, W14_SEM_LIMIT = 10, W14_SEM_PERMITS = 3;
    static final int W14_ROUNDS_MAX = 2000, W14_OPS_MAX = 200000;

    /** One timed operation (or round) of a W14 row: {its latency ms} or {latency, second figure}. */
    interface W14Step {
        double[] run(int i) throws Exception;
    }

    /**
     * One W14 row as primbench.c writes it: step repeated at most count times (rounds: at most
     * W14_ROUNDS_MAX) and seconds; extra names the second figure (round, leave) or is null.
     */
    static String w14Row(String key, String extra, int count, int seconds, W14Step step) throws Exception {
        int cap = Math.min(count, extra != null ? W14_ROUNDS_MAX : W14_OPS_MAX);
        double[] a = new double[cap], b = new double[cap];
        int n = 0;
        long t0 = System.nanoTime(), end = t0 + seconds * 1000000000L;
        while (n < cap && System.nanoTime() < end) {
            double[] r = step.run(n);
            a[n] = r[0];
            b[n] = r.length > 1 ? r[1] : 0;
            n++;
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        double[] p = pct(a, n), q = pct(b, n);
        StringBuilder s = new StringBuilder(",\"").append(key).append("\":{\"n\":").append(n)
                .append(",\"p50_ms\":").append(f(p[0], 3)).append(",\"p99_ms\":").append(f(p[1], 3))
                .append(",\"per_s\":").append(f(secs > 0 ? n / secs : 0, 0));
        if (extra != null)
            s.append(",\"").append(extra).append("_p50_ms\":").append(f(q[0], 3)).append(",\"").append(extra)
                    .append("_p99_ms\":").append(f(q[1], 3));
        return s.append("}").toString();
    }

    private String w14(Opts o) {
        try {
            String rows = sys.w14Rows(ttlMs, o.pairs, o.seconds);
            if (rows == null)
                return tail(head("W14").append(",\"skipped\":")
                        .append(str("no latch, barrier or weighted semaphore in this client")), "");
            StringBuilder b = head("W14").append(",\"parts\":").append(W14_PARTS).append(",\"waiters\":")
                    .append(W14_WAITERS).append(",\"sem_limit\":").append(W14_SEM_LIMIT)
                    .append(",\"sem_permits\":").append(W14_SEM_PERMITS).append(rows).append(",\"errors\":0");
            return tail(b, "");
        } catch (Exception e) {
            return errorLine("W14", msg(e));
        }
    }

    // ---- W13: multi-lock under contention (multibench.c) ----

    static final int W13_POOL = 16;

    /** Client id's set at its t-th turn: k names in ascending order (multibench.c's w13_set). */
    static List<String> w13Set(String prefix, int id, long t, int k) {
        int start = (int) ((7L * id + 3L * t) % W13_POOL);
        int[] idx = new int[k];
        for (int j = 0; j < k; j++)
            idx[j] = (start + j) % W13_POOL;
        Arrays.sort(idx);
        List<String> names = new ArrayList<>(k);
        for (int i : idx)
            names.add(String.format(java.util.Locale.ROOT, "%s/n%02d", prefix, i));
        return names;
    }

    /**
     * --clients clients (default 8) each take their sets of --k names with the client's own
     * multi-lock (the names sorted), hold --hold ms, release: sets/s and acquire + release time
     * per set (the hold left out) p50/p99/max, multibench.c's rules and fields.
     */
    private String w13(Opts o) throws Exception {
        int nc = o.clients, k = o.k;
        String prefix = "lb-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + "-W13-k" + k;
        Sys.MultiLock[] cl = new Sys.MultiLock[nc];
        String early = null;
        try {
            for (int i = 0; i < nc && early == null; i++) {
                cl[i] = sys.multiLock(i, ttlMs);
                if (cl[i] == null)
                    early = tail(head("W13").append(",\"skipped\":").append(str("no multi-lock in this client")), "");
            }
        } catch (Exception e) {
            early = errorLine("W13", msg(e));
        }
        if (early != null) {
            for (Sys.MultiLock c : cl)
                if (c != null)
                    c.close();
            return early;
        }
        int cap = 1000000 / nc;
        double[][] lat = new double[nc][cap];
        int[] n = new int[nc];
        long[] sets = new long[nc], timeouts = new long[nc], errs = new long[nc];
        String[] err = new String[nc];
        AtomicLong taken = new AtomicLong();
        StopFlag stop = new StopFlag();
        long[] start = new long[1];
        long endNs = System.nanoTime() + o.seconds * 1000000000L;
        try {
            runThreads(nc, i -> {
                for (long t = 0; !stop.v && System.nanoTime() < endNs; t++) {
                    if (taken.incrementAndGet() > o.pairs)
                        break;
                    List<String> names = w13Set(prefix, i, t, k);
                    try {
                        long t0 = System.nanoTime();
                        if (!cl[i].acquire(names, WAIT_MS)) {
                            timeouts[i]++;
                            continue;
                        }
                        long t1 = System.nanoTime();
                        if (o.hold > 0)
                            sleepMs(o.hold);
                        long t2 = System.nanoTime();
                        cl[i].release();
                        long t3 = System.nanoTime();
                        if (t3 > endNs) // finished after the time bound: not counted
                            break;
                        if (n[i] < cap)
                            lat[i][n[i]++] = ms((t1 - t0) + (t3 - t2));
                        sets[i]++;
                    } catch (Exception e) {
                        errs[i]++;
                        err[i] = "client " + i + ": " + msg(e);
                        stop.v = true;
                        break;
                    }
                }
            }, start);
        } finally {
            for (Sys.MultiLock c : cl)
                if (c != null)
                    c.close();
        }
        double secs = (System.nanoTime() - start[0]) / 1e9;
        long g = 0, to = 0, errors = 0;
        String e1 = "";
        for (int i = 0; i < nc; i++) {
            g += sets[i];
            to += timeouts[i];
            errors += errs[i];
            if (err[i] != null && e1.isEmpty())
                e1 = err[i];
        }
        double[] p = pctMerged(lat, n, nc);
        StringBuilder b = head("W13").append(",\"way\":\"multi\",\"k\":").append(k).append(",\"pool\":").append(W13_POOL)
                .append(",\"clients\":").append(nc).append(",\"hold_ms\":").append(o.hold)
                .append(",\"seconds\":").append(f(secs, 3)).append(",\"sets\":").append(g)
                .append(",\"sets_per_s\":").append(f(secs > 0 ? g / secs : 0, 1))
                .append(",\"p50_ms\":").append(f(p[0], 3)).append(",\"p99_ms\":").append(f(p[1], 3))
                .append(",\"max_ms\":").append(f(p[2], 3)).append(",\"timeouts\":").append(to)
                .append(",\"errors\":").append(errors);
        return tail(b, e1);
    }

    // ---- W12: election fail-over (electbench.c) ----

    private String w12(Opts o) throws Exception {
        int nobs = o.clients, rounds = o.rounds;
        Sys.Election el = sys.election(ttlMs);
        if (el == null)
            return tail(head("W12").append(",\"skipped\":").append(str("no election recipe in this client")), "");
        double[] perRound = new double[rounds], allObs = new double[rounds * nobs];
        int done = 0, observed = 0, tokenOk = 0, nObs = 0;
        String err = "";
        long end = System.nanoTime() + o.seconds * 1000000000L;
        try {
            for (int r = 0; r < rounds && System.nanoTime() < end && err.isEmpty(); r++) {
                Sys.Round rd;
                try {
                    rd = el.round(r, nobs);
                } catch (Exception e) {
                    err = "round " + r + ": " + msg(e);
                    break;
                }
                try {
                    long deadline = System.nanoTime() + EL_ROUND_MS * 1000000L;
                    long ltok = rd.leaderToken();
                    long[] ctok = {-1};
                    String[] cerr = {""};
                    Thread ct = new Thread(() -> {
                        try {
                            ctok[0] = rd.candidate(deadline);
                        } catch (Exception e) {
                            cerr[0] = msg(e);
                        }
                    }, "w12-candidate");
                    long[] seen = new long[nobs];
                    String[] oerr = new String[nobs];
                    Thread[] ot = new Thread[nobs];
                    ct.start();
                    for (int i = 0; i < nobs; i++) {
                        final int idx = i;
                        ot[i] = new Thread(() -> {
                            try {
                                rd.observe(idx, deadline);
                                seen[idx] = System.nanoTime();
                            } catch (Exception e) {
                                oerr[idx] = msg(e);
                            }
                        }, "w12-observer");
                        ot[i].start();
                    }
                    sleepMs(EL_SETTLE_MS); // C queued, the observers parked
                    long t0 = System.nanoTime();
                    String kerr = "";
                    try {
                        rd.killLeader();
                    } catch (Exception e) {
                        kerr = msg(e);
                    }
                    for (Thread t : ot)
                        t.join();
                    ct.join();
                    double worst = 0;
                    boolean all = kerr.isEmpty();
                    String rerr = kerr;
                    for (int i = 0; i < nobs; i++) {
                        if (seen[i] == 0) {
                            all = false;
                            if (rerr.isEmpty())
                                rerr = "observer " + i + ": " + oerr[i];
                            continue;
                        }
                        double d = ms(seen[i] - t0);
                        allObs[nObs++] = d;
                        worst = Math.max(worst, d);
                    }
                    if (!cerr[0].isEmpty() && rerr.isEmpty())
                        rerr = "candidate: " + cerr[0];
                    done++;
                    if (all)
                        perRound[observed++] = worst;
                    if (cerr[0].isEmpty() && ctok[0] > ltok)
                        tokenOk++;
                    if (!rerr.isEmpty())
                        err = "round " + r + ": " + rerr;
                } finally {
                    rd.close();
                }
            }
        } finally {
            el.close();
        }
        double[] a = pct(perRound, observed), b = pct(allObs, nObs);
        StringBuilder s = head("W12").append(",\"observers\":").append(nobs).append(",\"rounds\":").append(done)
                .append(",\"observed\":").append(observed).append(",\"token_newer\":").append(tokenOk)
                .append(",\"all_seen_p50_ms\":").append(f(a[0], 2)).append(",\"all_seen_p99_ms\":").append(f(a[1], 2))
                .append(",\"all_seen_max_ms\":").append(f(a[2], 2)).append(",\"observer_p50_ms\":").append(f(b[0], 2))
                .append(",\"observer_p99_ms\":").append(f(b[1], 2)).append(",\"observer_max_ms\":").append(f(b[2], 2))
                .append(",\"errors\":").append(err.isEmpty() ? 0 : 1);
        return tail(s, err);
    }

    // ---- the JIT's warm-up ----

    private String warmup(Opts o) throws Exception {
        long t0 = System.nanoTime();
        List<String> bad = new ArrayList<>();
        for (String w : new String[] {"W1", "W2", "W3", "W9", "W11", "W13"}) {
            if (sys.driver().endsWith("-fenced") && (w.equals("W9") || w.equals("W11") || w.equals("W13")))
                continue;
            Opts x = parse("--workload " + w + " --seconds " + o.seconds + " --pairs " + o.pairs + " --warmup 0"
                    + (w.equals("W13") ? " --k 4" : ""));
            String line = run(x);
            if (line.contains("\"error\""))
                bad.add(w + ": " + line);
        }
        StringBuilder b = head("warmup").append(",\"seconds\":").append(f((System.nanoTime() - t0) / 1e9, 3))
                .append(",\"errors\":").append(bad.size());
        return tail(b, String.join("; ", bad));
    }

    String run(Opts o) throws Exception {
        return switch (o.workload) {
            case "W1", "W2", "W3" -> w123(o);
            case "W8" -> w8(o);
            case "W9" -> w9(o);
            case "W11" -> w11(o);
            case "W12" -> w12(o);
            case "W13" -> w13(o);
            case "W14" -> w14(o);
            case "warmup" -> warmup(o);
            default -> tail(head(o.workload).append(",\"skipped\":").append(str("not implemented for this client")), "");
        };
    }

    static String versions(String key) {
        Properties p = new Properties();
        try (InputStream in = Bench.class.getResourceAsStream("/versions.properties")) {
            if (in != null)
                p.load(in);
        } catch (IOException e) {
            // no label beats no run
        }
        return p.getProperty(key, "?");
    }

    public static void main(String[] args) throws Exception {
        String system = null, endpoints = null, sentinel = null;
        int ttl = 10000;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--system" -> system = args[i + 1];
                case "--endpoints" -> endpoints = args[i + 1];
                case "--ttl" -> ttl = num(args[i + 1], 100, 3600000);
                case "--sentinel-master" -> sentinel = args[i + 1];
                default -> system = null;
            }
        }
        if (system == null || endpoints == null || args.length % 2 != 0) {
            System.err.println("usage: Bench --system curator|redisson|redisson-fenced --endpoints EP [--ttl ms]"
                    + " [--sentinel-master NAME]"
                    + " (then one command a line on stdin: --workload W1|W2|W3|W8|W9|W11|W12|W13|W14|warmup ...)");
            System.exit(2);
        }
        String redisson = "Redisson " + versions("redisson");
        Sys sys = switch (system) {
            case "curator" -> new CuratorSys(endpoints,
                    "Apache Curator " + versions("curator") + " (ZooKeeper client " + versions("zookeeper") + ")");
            case "redisson" -> new RedissonSys(endpoints, redisson, false, sentinel);
            case "redisson-fenced" -> new RedissonSys(endpoints, redisson, true, sentinel);
            default -> null;
        };
        if (sys == null) {
            System.err.println("unknown system " + system);
            System.exit(2);
        }
        Bench b = new Bench(sys, ttl);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty())
                continue;
            if (line.equals("quit"))
                break;
            String out;
            try {
                out = b.run(parse(line));
            } catch (Throwable t) {
                out = b.errorLine("?", "command '" + line + "': " + msg(t));
            }
            System.out.println(out);
            System.out.flush();
        }
        sys.close();
        System.exit(0); // client threads (Netty, ZooKeeper) need not keep the JVM
    }
}
