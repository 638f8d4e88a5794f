-- SPDX-License-Identifier: Apache-2.0
-- fencelock guard for PostgreSQL: refuse writes from a lock holder whose fencing token is older
-- than one already seen for the same resource.
--
-- Load with:  psql -v ON_ERROR_STOP=1 -d DB -f contrib/postgresql/fencelock.sql
-- (as the role that is to own the guard; re-running it is safe: it only adds what is missing
-- and replaces the functions). Needs PostgreSQL >= 11 and the pgcrypto extension (Debian:
-- postgresql-contrib); pgcrypto is created in schema fencelock if the database lacks it.
--
-- What it owns:
--   fencelock.tokens  highest token seen per resource. A row only ever grows, and only inside
--                     fence(), under the row's lock, in the caller's transaction: a rolled-back
--                     transaction leaves no trace of its token. `fences` counts the
--                     fenced transactions.
--   fencelock.keys    HMAC keys for signed tokens (none: signatures are not checked). Readable
--                     and writable by the owner only; fence() reads them as SECURITY DEFINER.
--   fencelock.fence(resource, token [, signature])  the guard; see README.md.
-- SQLSTATEs raised (class FL): FL001 stale token, FL002 missing or bad signature, FL003 bad
-- argument (NULL, empty name, token < 1); and PostgreSQL's own 40001 under REPEATABLE READ and
-- SERIALIZABLE when another fenced transaction of the resource committed after this one's
-- snapshot (retry the transaction).

\set ON_ERROR_STOP 1

CREATE SCHEMA IF NOT EXISTS fencelock;

CREATE TABLE IF NOT EXISTS fencelock.tokens (
    resource   text PRIMARY KEY,
    token      bigint NOT NULL CHECK (token > 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);
-- fences: how many fenced transactions wrote the row. Every fence() writes it (a new row
-- version), so that under REPEATABLE READ and SERIALIZABLE a transaction whose snapshot is older
-- than the last fenced one fails in fence() with 40001 instead of reading stale data (fence()
-- below). Added to installs made before.
ALTER TABLE fencelock.tokens ADD COLUMN IF NOT EXISTS fences bigint NOT NULL DEFAULT 0;

-- Keys live in a table, not a GUC: any role can read a GUC (SHOW, current_setting) and
-- ALTER DATABASE ... SET stores it in pg_db_role_setting for all to see. The table is closed to
-- everyone but its owner (and superusers), and only fence() reads it.
CREATE TABLE IF NOT EXISTS fencelock.keys (
    key_id   text PRIMARY KEY,
    secret   bytea NOT NULL CHECK (octet_length(secret) >= 16),
    added_at timestamptz NOT NULL DEFAULT now()
);

REVOKE ALL ON fencelock.tokens, fencelock.keys FROM PUBLIC;

-- hmac() is wherever pgcrypto lives; bind to that schema now, so that the SECURITY DEFINER
-- function below can run with a fixed search_path (nothing a caller creates is looked up).
DO $install$
DECLARE
    s text;
BEGIN
    SELECT n.nspname INTO s
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pgcrypto';
    IF s IS NULL THEN
        CREATE EXTENSION pgcrypto WITH SCHEMA fencelock;
        s := 'fencelock';
    END IF;
    EXECUTE format(
        'CREATE OR REPLACE FUNCTION fencelock.hmac_sha256(msg bytea, key bytea) RETURNS bytea '
        'LANGUAGE sql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp '
        'AS %L', format('SELECT %I.hmac(msg, key, %L)', s, 'sha256'));
END
$install$;

-- The signed message, exactly as fencelockd's FENCE.SIGN builds it:
--   'fencelock-token-v1:' || byte length of name || ':' || name || ':' || decimal token
-- The name is taken as UTF-8 bytes whatever the database encoding is.
CREATE OR REPLACE FUNCTION fencelock.signed_message(resource text, token bigint)
RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp
AS $$
    SELECT convert_to('fencelock-token-v1:', 'UTF8')
        || convert_to(octet_length(convert_to(resource, 'UTF8'))::text || ':', 'UTF8')
        || convert_to(resource, 'UTF8')
        || convert_to(':' || token::text, 'UTF8')
$$;

-- True if sig (64 hex digits) is the HMAC of (resource, token) under one of the keys. Compares
-- SHA-256 digests of both sides, so the time a mismatch takes says nothing about the prefix.
CREATE OR REPLACE FUNCTION fencelock.signature_ok(resource text, token bigint, sig text)
RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    msg bytea;
BEGIN
    IF sig IS NULL OR sig !~ '^[0-9a-fA-F]{64}$' THEN
        RETURN false;
    END IF;
    msg := fencelock.signed_message(resource, token);
    RETURN EXISTS (
        SELECT 1 FROM fencelock.keys k
         WHERE sha256(fencelock.hmac_sha256(msg, k.secret)) = sha256(decode(lower(sig), 'hex')));
END
$$;
REVOKE ALL ON FUNCTION fencelock.signature_ok(text, bigint, text) FROM PUBLIC;

-- The guard. Call it inside the transaction that does the protected write, before the write:
--   BEGIN; SELECT fencelock.fence('inventory', 42); UPDATE ...; COMMIT;
-- It locks the resource's row until the transaction ends, so writers of one resource are
-- serialized and a holder's write cannot land after a newer holder's. Returns the token.
--
-- Snapshots. The fence may wait for the row while an older holder's fenced transaction
-- finishes. Under READ COMMITTED (the default) each later statement of the caller takes a new
-- snapshot and sees what that transaction wrote. Under REPEATABLE READ and SERIALIZABLE the
-- caller's snapshot was taken by its first statement, before the wait, and would miss it: a
-- newer holder would act on the stock an older one changed meanwhile. That is why every fence()
-- writes the row (fences + 1): the row then changed after the caller's snapshot, and
-- PostgreSQL's SELECT ... FOR UPDATE fails with 40001 (serialization failure): retry.
CREATE OR REPLACE FUNCTION fencelock.fence(resource text, token bigint, signature text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    seen bigint;
BEGIN
    IF fence.resource IS NULL OR fence.resource = '' OR fence.token IS NULL OR fence.token < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'FL003',
            MESSAGE = format('fencelock: bad fence arguments (resource %L, token %s)',
                             fence.resource, coalesce(fence.token::text, 'NULL'));
    END IF;
    IF EXISTS (SELECT 1 FROM fencelock.keys) THEN
        IF fence.signature IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'FL002',
                MESSAGE = format('fencelock: token %s for %L has no signature (keys are set)',
                                 fence.token, fence.resource);
        END IF;
        IF NOT fencelock.signature_ok(fence.resource, fence.token, fence.signature) THEN
            RAISE EXCEPTION USING ERRCODE = 'FL002',
                MESSAGE = format('fencelock: bad signature for token %s of %L',
                                 fence.token, fence.resource);
        END IF;
    END IF;

    -- Make sure the row exists, then lock it. A concurrent first INSERT makes this one wait
    -- for that transaction; the SELECT (a new snapshot under READ COMMITTED) then sees its row.
    INSERT INTO fencelock.tokens AS t (resource, token)
    VALUES (fence.resource, fence.token)
    ON CONFLICT ON CONSTRAINT tokens_pkey DO NOTHING;
    SELECT t.token INTO seen FROM fencelock.tokens t WHERE t.resource = fence.resource FOR UPDATE;

    IF fence.token < seen THEN
        RAISE EXCEPTION USING ERRCODE = 'FL001',
            MESSAGE = format('fencelock: stale token %s for %L: token %s was already seen',
                             fence.token, fence.resource, seen),
            HINT = 'the lock passed to a newer holder; this holder must stop writing';
    END IF;
    UPDATE fencelock.tokens t
       SET token = fence.token, fences = t.fences + 1,
           updated_at = CASE WHEN fence.token > seen THEN now() ELSE t.updated_at END
     WHERE t.resource = fence.resource;
    RETURN fence.token;
END
$$;
-- Calling fence() advances a resource's token (it can lock out the real holder until its next
-- grant), so it is not for everyone: GRANT EXECUTE to the roles that write protected data.
REVOKE ALL ON FUNCTION fencelock.fence(text, bigint, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fencelock.hmac_sha256(bytea, bytea) FROM PUBLIC;
