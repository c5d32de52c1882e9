-- The audit chain's head, kept where it costs nothing per entry (issue 43,
-- `audit_chain_overhead_pct`). 0024 linked each entry by upserting and then
-- updating the tenant's row in `audit_chain_heads`: two statements and a
-- dead row version per audited change. Now:
--
-- * a transaction's first entry of a tenant takes a transaction-level
--   advisory lock on the tenant's chain (writers of one tenant still take
--   turns until they commit, so the chain still has one entry per number)
--   and reads the head from the trail itself: the tenant's last linked
--   entry, through the `(tenant_id, chain_seq)` index;
-- * the head then lives in a transaction-local setting
--   (`openvibe.audit_chain` = `<seq>:<hex hash>:<tenant>`) that each later
--   entry of the transaction reads and moves on. A rolled-back savepoint
--   restores the setting and releases a lock it took, with the entries it
--   wrote, so the cache never runs ahead of the trail.
--
-- The head is the last entry of the trail: `openvibe audit anchor` reads
-- it there, and `audit_chain_heads` goes.

CREATE OR REPLACE FUNCTION openvibe_audit_link() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    cached text := current_setting('openvibe.audit_chain', true);
    seq_part text;
    hash_part text;
    head_seq bigint;
    head_hash bytea;
BEGIN
    seq_part := split_part(cached, ':', 1);
    hash_part := split_part(cached, ':', 2);
    IF cached IS NOT NULL AND cached <> ''
       AND substr(cached, length(seq_part) + length(hash_part) + 3) = NEW.tenant_id THEN
        head_seq := seq_part::bigint;
        head_hash := decode(hash_part, 'hex');
    ELSE
        -- 4305: this trail's class of advisory locks ("43", the issue, "05",
        -- the audit migration); the tenant's hash picks the lock.
        PERFORM pg_advisory_xact_lock(4305, hashtext(NEW.tenant_id));
        SELECT a.chain_seq, a.hash INTO head_seq, head_hash
            FROM audit_log a
            WHERE a.tenant_id = NEW.tenant_id AND a.chain_seq IS NOT NULL
            ORDER BY a.chain_seq DESC LIMIT 1;
        IF NOT FOUND THEN
            head_seq := 0;
            head_hash := '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea;
        END IF;
    END IF;
    NEW.chain_seq := head_seq + 1;
    NEW.prev_hash := head_hash;
    NEW.hash := openvibe_audit_hash(NEW);
    PERFORM set_config('openvibe.audit_chain',
        NEW.chain_seq::text || ':' || encode(NEW.hash, 'hex') || ':' || NEW.tenant_id, true);
    RETURN NEW;
END;
$$;

DROP TABLE IF EXISTS audit_chain_heads;
