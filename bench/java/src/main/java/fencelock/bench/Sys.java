// SPDX-License-Identifier: Apache-2.0
package fencelock.bench;

/**
 * One system reached through its own Java client (CuratorSys: ZooKeeper through Apache Curator;
 * RedissonSys: Redis through Redisson), behind the small tables the harness (Bench) drives, as
 * bench/driver.h is for lockbench's C drivers.
 *
 * <p>Ownership: a Sys lives for the JVM's whole run (shared resources such as Redisson's event
 * loop); every client it makes is one benchmark client, with a connection (session) of its own,
 * used by one harness thread at a time, and closed by the harness. A client's calls return
 * true (granted) or false (not granted within waitMs) and throw on any other failure; the
 * harness counts a throw as an error and never lets one escape the run.
 */
interface Sys extends AutoCloseable {
    /** The "driver" of the JSON lines: curator, redisson, redisson-fenced. */
    String driver();

    /** The client library and version, for the report's label ("client" of every line). */
    String client();

    /** A mutex client (W1-W3, W8). */
    Mutex mutex(int id, int ttlMs) throws Exception;

    /** A read-write lock client (W9), or null when the system's client has none. */
    RwLock rwLock(int id, int ttlMs) throws Exception;

    /** A semaphore client (W11), or null when the system's client has none. */
    Semaphore semaphore(int id, int ttlMs) throws Exception;

    /** W12's election, or null when the system's client has no election recipe. */
    Election election(int ttlMs) throws Exception;

    /** A multi-lock client (W13: the client library's own multi-lock), or null when it has none. */
    MultiLock multiLock(int id, int ttlMs) throws Exception;

    /**
     * W14 (bench/primbench.c): the rows of the coordination primitives this client has a recipe
     * for, as the JSON fields of lockbench's W14 line (",\"SEM_PERMITS\":{...}"; Bench.w14Row
     * makes each), every row at most `count` operations (rounds) and `seconds`; null when it has
     * none of them.
     */
    default String w14Rows(int ttlMs, int count, int seconds) throws Exception {
        return null;
    }

    @Override
    void close();

    interface Mutex extends AutoCloseable {
        /** Acquire `name`, waiting at most waitMs; true when granted. */
        boolean acquire(String name, int waitMs) throws Exception;

        /** The fencing token of the grant just made (0: the recipe gives none). */
        long token();

        void release(String name) throws Exception;

        @Override
        void close();
    }

    interface RwLock extends AutoCloseable {
        boolean acquire(String name, boolean shared, int waitMs) throws Exception;

        void release(String name, boolean shared) throws Exception;

        @Override
        void close();
    }

    /** Several locks as one: names in the order the recipe takes them (W13 passes them sorted). */
    interface MultiLock extends AutoCloseable {
        /** Acquire all of names, waiting at most waitMs (the recipe's own rule); true when held. */
        boolean acquire(java.util.List<String> names, int waitMs) throws Exception;

        /** Release the set the last acquire took. */
        void release() throws Exception;

        @Override
        void close();
    }

    interface Semaphore extends AutoCloseable {
        boolean acquire(String name, int limit, int waitMs) throws Exception;

        void release(String name) throws Exception;

        @Override
        void close();
    }

    /**
     * W12's system side, as elect.h's el_ops: a round is a fresh election with its leader
     * elected, a candidate and observers, each on a session of its own.
     */
    interface Election extends AutoCloseable {
        Round round(int r, int observers) throws Exception;

        @Override
        void close();
    }

    interface Round extends AutoCloseable {
        /** The leader's token (its position in the election). */
        long leaderToken();

        /** Campaigns as the candidate; returns its token once it leads (throws past deadline). */
        long candidate(long deadlineNanos) throws Exception;

        /** Observer idx: returns once it sees the candidate lead (throws past deadline). */
        void observe(int idx, long deadlineNanos) throws Exception;

        /** Ends the leader's session from outside its recipe. */
        void killLeader() throws Exception;

        @Override
        void close();
    }
}
