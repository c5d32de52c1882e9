-- A tamper-evident audit trail (issue 43): every entry carries its place in
-- its tenant's chain (`chain_seq`, from 1, without gaps), the hash of the
-- entry before it (`prev_hash`; 32 zero bytes for the first) and its own
-- hash: SHA-256 of `prev_hash` followed by the entry's canonical encoding
-- (`openvibe_audit_canonical`). A BEFORE INSERT trigger links each entry
-- in the inserting transaction, whichever path writes it (the record
-- triggers, the stores' batches), taking the tenant's head row
-- (`audit_chain_heads`) with a row lock: concurrent writers of one tenant
-- link in commit order, and their chain has one entry per number.
--
-- The head (`chain_seq`, `hash`) is what `openvibe audit anchor` prints for
-- a user to keep elsewhere; `openvibe audit verify` recomputes every hash
-- and reports the first entry that does not match.

ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS chain_seq bigint;
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS prev_hash bytea;
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS hash bytea;
CREATE UNIQUE INDEX IF NOT EXISTS audit_log_chain ON audit_log (tenant_id, chain_seq);

CREATE TABLE IF NOT EXISTS audit_chain_heads (
    tenant_id text PRIMARY KEY,
    chain_seq bigint NOT NULL,
    hash      bytea NOT NULL
);
ALTER TABLE audit_chain_heads ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_chain_heads FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS audit_chain_heads_tenant ON audit_chain_heads;
CREATE POLICY audit_chain_heads_tenant ON audit_chain_heads
    USING (tenant_id = current_setting('openvibe.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('openvibe.tenant_id', true));

-- A text field, length-prefixed so that no two entries encode alike
-- (`~` for NULL).
CREATE OR REPLACE FUNCTION openvibe_audit_field(value text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN value IS NULL THEN '~' ELSE length(value)::text || ':' || value END
$$;

-- The canonical encoding of an entry (the same, field for field, as
-- `openvibe_protocols::audit_canonical`, except `filters`, which is the
-- jsonb's own text here).
CREATE OR REPLACE FUNCTION openvibe_audit_canonical(e audit_log) RETURNS bytea
LANGUAGE sql STABLE AS $$
    SELECT convert_to(concat_ws(chr(31),
        'openvibe-audit-v1',
        openvibe_audit_field(e.tenant_id),
        e.chain_seq::text,
        e.seq::text,
        (extract(epoch FROM e.at) * 1000000)::bigint::text,
        openvibe_audit_field(e.principal),
        openvibe_audit_field(e.operation),
        openvibe_audit_field(e.record_kind),
        openvibe_audit_field(e.namespace),
        openvibe_audit_field(e.project_id),
        openvibe_audit_field(e.record_id),
        openvibe_audit_field(e.filters::text),
        openvibe_audit_field(e.top_k::text),
        openvibe_audit_field(e.status),
        openvibe_audit_field(e.reason),
        openvibe_audit_field(e.source),
        openvibe_audit_field(e.tool)), 'UTF8')
$$;

-- The hash an entry must carry.
CREATE OR REPLACE FUNCTION openvibe_audit_hash(e audit_log) RETURNS bytea
LANGUAGE sql STABLE AS $$
    SELECT sha256(e.prev_hash || openvibe_audit_canonical(e))
$$;

CREATE OR REPLACE FUNCTION openvibe_audit_link() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    head_seq bigint;
    head_hash bytea;
BEGIN
    INSERT INTO audit_chain_heads AS h (tenant_id, chain_seq, hash)
        VALUES (NEW.tenant_id, 1, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea)
        ON CONFLICT (tenant_id) DO UPDATE SET chain_seq = h.chain_seq + 1
        RETURNING h.chain_seq, h.hash INTO head_seq, head_hash;
    NEW.chain_seq := head_seq;
    NEW.prev_hash := head_hash;
    NEW.hash := openvibe_audit_hash(NEW);
    UPDATE audit_chain_heads SET hash = NEW.hash WHERE tenant_id = NEW.tenant_id;
    RETURN NEW;
END;
$$;
CREATE OR REPLACE TRIGGER audit_log_link BEFORE INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION openvibe_audit_link();

-- The entries written before the chain existed, linked in their order: one
-- pass over the trail (a large one takes a while: no statement timeout for
-- this migration), each tenant's head kept in variables and written once.
-- (As the tables' owner, which row-level security and the append-only
-- guard normally bind too: lifted for the backfill, restored after.)
SET LOCAL statement_timeout = 0;
DO $$
DECLARE
    r audit_log;
    tenant text := NULL;
    n bigint := 0;
    prev bytea;
    genesis constant bytea := '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea;
BEGIN
    ALTER TABLE audit_log NO FORCE ROW LEVEL SECURITY;
    ALTER TABLE audit_chain_heads NO FORCE ROW LEVEL SECURITY;
    ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update;
    EXECUTE 'GRANT UPDATE ON audit_log TO ' || quote_ident(current_user);
    FOR r IN SELECT * FROM audit_log WHERE chain_seq IS NULL ORDER BY tenant_id, seq LOOP
        IF tenant IS DISTINCT FROM r.tenant_id THEN
            IF tenant IS NOT NULL THEN
                INSERT INTO audit_chain_heads (tenant_id, chain_seq, hash) VALUES (tenant, n, prev)
                    ON CONFLICT (tenant_id) DO UPDATE SET chain_seq = excluded.chain_seq, hash = excluded.hash;
            END IF;
            tenant := r.tenant_id;
            SELECT h.chain_seq, h.hash INTO n, prev FROM audit_chain_heads h WHERE h.tenant_id = tenant;
            IF NOT FOUND THEN
                n := 0;
                prev := genesis;
            END IF;
        END IF;
        n := n + 1;
        r.chain_seq := n;
        r.prev_hash := prev;
        r.hash := openvibe_audit_hash(r);
        prev := r.hash;
        UPDATE audit_log SET chain_seq = r.chain_seq, prev_hash = r.prev_hash, hash = r.hash
            WHERE tenant_id = r.tenant_id AND seq = r.seq;
    END LOOP;
    IF tenant IS NOT NULL THEN
        INSERT INTO audit_chain_heads (tenant_id, chain_seq, hash) VALUES (tenant, n, prev)
            ON CONFLICT (tenant_id) DO UPDATE SET chain_seq = excluded.chain_seq, hash = excluded.hash;
    END IF;
    EXECUTE 'REVOKE UPDATE ON audit_log FROM ' || quote_ident(current_user);
    ALTER TABLE audit_log ENABLE TRIGGER audit_log_no_update;
    ALTER TABLE audit_log FORCE ROW LEVEL SECURITY;
    ALTER TABLE audit_chain_heads FORCE ROW LEVEL SECURITY;
END;
$$;
