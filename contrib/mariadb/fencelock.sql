-- SPDX-License-Identifier: Apache-2.0
-- fencelock guard for MariaDB: refuse writes from a lock holder whose fencing token is older
-- than one already seen for the same resource. The same guard as contrib/postgresql's.
--
-- Load with:  mariadb DB < contrib/mariadb/fencelock.sql
-- (as the account that is to own the guard, into a database of its own so that the grants of
-- the application's database do not cover the keys: README.md; re-running it is safe: it only
-- adds what is missing and replaces the functions). Needs MariaDB >= 10.3 (CHECK constraints,
-- CREATE OR REPLACE FUNCTION); tested with Debian 12's 10.11.
--
-- What it owns:
--   fencelock_tokens  highest token seen per resource. A row only ever grows, and only inside
--                     fencelock_fence(), under the row's lock, in the caller's transaction: a
--                     rolled-back transaction leaves no trace of its token. Its `fences`
--                     counts the fenced transactions, so that a caller reading from a snapshot
--                     older than the last one is refused (40001) instead of acting on stale data.
--   fencelock_keys    HMAC keys for signed tokens (none: signatures are not checked). Grant it
--                     to nobody; the functions read it as SQL SECURITY DEFINER.
--   fencelock_fence(resource, token, signature)  the guard (signature NULL when no keys are
--                     set: MariaDB functions have no optional parameters); README.md.
--   fencelock_hmac_sha256(key, msg)  HMAC-SHA256 (RFC 2104) built from SHA2(): MariaDB has no
--                     HMAC function.
-- SQLSTATEs signalled (class FL, as PostgreSQL's guard): FL001 stale token, FL002 missing or bad
-- signature, FL003 bad argument (NULL, empty or longer than 1024 bytes name, token < 1), and
-- 40001 (serialization failure: retry) when the caller's snapshot is older than the last fenced
-- transaction of the resource. A signal fails the statement, not the transaction: the caller
-- must ROLLBACK (README.md).

CREATE TABLE IF NOT EXISTS fencelock_tokens (
    resource   VARBINARY(1024) NOT NULL PRIMARY KEY, -- the name's UTF-8 bytes: exact match
    token      BIGINT NOT NULL,
    updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    CONSTRAINT fencelock_token_positive CHECK (token > 0)
) ENGINE = InnoDB;
-- fences: how many fenced transactions wrote the row (every fencelock_fence() adds one). The
-- guard compares it between a locking and a snapshot read to find a caller whose snapshot is
-- older than the last fenced transaction (fencelock_fence below). Added to installs made before.
ALTER TABLE fencelock_tokens ADD COLUMN IF NOT EXISTS fences BIGINT UNSIGNED NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS fencelock_keys (
    key_id   VARCHAR(64) NOT NULL PRIMARY KEY,
    secret   VARBINARY(1024) NOT NULL,
    added_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    CONSTRAINT fencelock_key_length CHECK (LENGTH(secret) >= 16)
) ENGINE = InnoDB;

DELIMITER //

-- HMAC-SHA256 per RFC 2104 from SHA2(), the only SHA-256 MariaDB has:
--   K' = the key, hashed first if longer than the block (64 bytes), padded with zero bytes to 64
--   HMAC = SHA256((K' XOR 0x5c..) || SHA256((K' XOR 0x36..) || msg))
-- The XOR runs byte by byte (MariaDB's ^ works on integers, not on binary strings). Checked
-- against RFC 4231's test vectors and Python's hmac by tests/fencing (the mariadb row).
CREATE OR REPLACE FUNCTION fencelock_hmac_sha256(k VARBINARY(1024), m BLOB)
RETURNS BINARY(32) DETERMINISTIC NO SQL
BEGIN
    DECLARE kp VARBINARY(64);
    DECLARE ipad VARBINARY(64) DEFAULT _binary'';
    DECLARE opad VARBINARY(64) DEFAULT _binary'';
    DECLARE i INT DEFAULT 1;
    DECLARE b INT;
    IF LENGTH(k) > 64 THEN
        SET k = UNHEX(SHA2(k, 256));
    END IF;
    SET kp = CONCAT(k, REPEAT(_binary X'00', 64 - LENGTH(k)));
    WHILE i <= 64 DO
        SET b = ASCII(SUBSTRING(kp, i, 1));
        SET ipad = CONCAT(ipad, CHAR(b ^ 54)); -- 0x36
        SET opad = CONCAT(opad, CHAR(b ^ 92)); -- 0x5c
        SET i = i + 1;
    END WHILE;
    RETURN UNHEX(SHA2(CONCAT(opad, UNHEX(SHA2(CONCAT(ipad, m), 256))), 256));
END //

-- The signed message, exactly as fencelockd's FENCE.SIGN builds it:
--   'fencelock-token-v1:' || byte length of name || ':' || name || ':' || decimal token
-- The name is taken as UTF-8 bytes whatever the connection's character set is.
CREATE OR REPLACE FUNCTION fencelock_signed_message(p_resource VARCHAR(1024) CHARACTER SET utf8mb4,
                                                    p_token BIGINT)
RETURNS BLOB DETERMINISTIC NO SQL
RETURN CONCAT(_binary'fencelock-token-v1:', CAST(LENGTH(p_resource) AS CHAR), _binary':',
              CAST(p_resource AS BINARY), _binary':', CAST(p_token AS CHAR)) //

-- True if sig (64 hex digits) is the HMAC of (resource, token) under one of the keys. Compares
-- SHA-256 digests of both sides, so the time a mismatch takes says nothing about the prefix.
CREATE OR REPLACE FUNCTION fencelock_signature_ok(p_resource VARCHAR(1024) CHARACTER SET utf8mb4,
                                                  p_token BIGINT,
                                                  p_sig VARCHAR(128) CHARACTER SET ascii)
RETURNS BOOLEAN NOT DETERMINISTIC READS SQL DATA SQL SECURITY DEFINER
BEGIN
    DECLARE msg BLOB;
    IF p_sig IS NULL OR p_sig NOT REGEXP '^[0-9a-fA-F]{64}$' THEN
        RETURN FALSE;
    END IF;
    SET msg = fencelock_signed_message(p_resource, p_token);
    RETURN EXISTS (
        SELECT 1 FROM fencelock_keys k
         WHERE SHA2(fencelock_hmac_sha256(k.secret, msg), 256) = SHA2(UNHEX(p_sig), 256)
        LOCK IN SHARE MODE); -- a locking read: no snapshot yet (fencelock_fence)
END //

-- The guard. Call it inside the transaction that does the protected write, before the write
-- and before the reads the write depends on:
--   START TRANSACTION; SELECT fencelock_fence('inventory', 42, NULL); UPDATE ...; COMMIT;
-- It locks the resource's row until the transaction ends (INSERT ... ON DUPLICATE KEY UPDATE
-- takes the row's exclusive lock at once, also for a new name: no shared-then-exclusive upgrade
-- for concurrent first callers to deadlock on), so writers of one resource are serialized and a
-- holder's write cannot land after a newer holder's. Returns the token.
--
-- Snapshots. Under REPEATABLE READ (InnoDB's default) a transaction's plain SELECTs read the
-- snapshot taken at its first plain SELECT. Taken before the row lock's wait, that snapshot
-- would miss what the transaction waited for: a newer holder would read the stock an older
-- one's fenced transaction changed while it waited, and write from the old value (an oversell
-- the fencing suite caught). So nothing here reads from a snapshot before the row is locked
-- (the key table is read with LOCK IN SHARE MODE), and after locking, a snapshot read of the
-- row's `fences` must equal the locked row's: a caller whose snapshot was taken earlier (it read
-- before fencing) and misses a fenced transaction is refused with SQLSTATE 40001, to retry from
-- START TRANSACTION. Without an earlier snapshot the snapshot read takes one now, after the wait.
-- p_resource is wider than the 1024 bytes allowed, so that a longer name gets FL003, not the
-- parameter's "data too long".
CREATE OR REPLACE FUNCTION fencelock_fence(p_resource VARCHAR(2048) CHARACTER SET utf8mb4,
                                           p_token BIGINT,
                                           p_signature VARCHAR(128) CHARACTER SET ascii)
RETURNS BIGINT NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
    DECLARE seen BIGINT;
    DECLARE locked_fences BIGINT UNSIGNED;
    DECLARE snapshot_fences BIGINT UNSIGNED;
    DECLARE msg VARCHAR(128);
    DECLARE shown VARCHAR(200) CHARACTER SET utf8mb4 DEFAULT QUOTE(LEFT(p_resource, 32));
    IF p_resource IS NULL OR LENGTH(p_resource) = 0 OR LENGTH(p_resource) > 1024 OR p_token IS NULL
       OR p_token < 1 THEN
        SET msg = LEFT(CONCAT('fencelock: bad fence arguments (resource ', COALESCE(shown, 'NULL'),
                              ', token ', COALESCE(CAST(p_token AS CHAR), 'NULL'), ')'), 128);
        SIGNAL SQLSTATE 'FL003' SET MESSAGE_TEXT = msg;
    END IF;
    IF EXISTS (SELECT 1 FROM fencelock_keys LOCK IN SHARE MODE) THEN -- no snapshot yet
        IF p_signature IS NULL THEN
            SET msg = LEFT(CONCAT('fencelock: token ', p_token, ' for ', shown,
                                  ' has no signature (keys are set)'), 128);
            SIGNAL SQLSTATE 'FL002' SET MESSAGE_TEXT = msg;
        END IF;
        IF NOT fencelock_signature_ok(p_resource, p_token, p_signature) THEN
            SET msg = LEFT(CONCAT('fencelock: bad signature for token ', p_token, ' of ', shown),
                           128);
            SIGNAL SQLSTATE 'FL002' SET MESSAGE_TEXT = msg;
        END IF;
    END IF;

    INSERT INTO fencelock_tokens (resource, token) VALUES (CAST(p_resource AS BINARY), p_token)
        ON DUPLICATE KEY UPDATE token = fencelock_tokens.token;
    SELECT t.token, t.fences INTO seen, locked_fences FROM fencelock_tokens t
     WHERE t.resource = CAST(p_resource AS BINARY) FOR UPDATE;
    -- a snapshot read (no row: newer than the snapshot; it stays NULL)
    SELECT t.fences INTO snapshot_fences FROM fencelock_tokens t
     WHERE t.resource = CAST(p_resource AS BINARY);

    IF p_token < seen THEN
        SET msg = LEFT(CONCAT('fencelock: stale token ', p_token, ' for ', shown, ': token ', seen,
                              ' was already seen'), 128);
        SIGNAL SQLSTATE 'FL001' SET MESSAGE_TEXT = msg;
    END IF;
    IF snapshot_fences IS NULL OR snapshot_fences <> locked_fences THEN
        SET msg = LEFT(CONCAT('fencelock: snapshot older than a fenced write of ', shown,
                              ': fence before reading; retry the transaction'), 128);
        SIGNAL SQLSTATE '40001' SET MESSAGE_TEXT = msg;
    END IF;
    UPDATE fencelock_tokens
       SET token = p_token, fences = fences + 1,
           updated_at = IF(p_token > seen, CURRENT_TIMESTAMP(6), updated_at)
     WHERE resource = CAST(p_resource AS BINARY);
    RETURN p_token;
END //

DELIMITER ;
