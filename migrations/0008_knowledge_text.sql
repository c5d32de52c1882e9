-- Full-text retrieval for knowledge (issue 16). Each row keeps its analyzed
-- text as the shared analyzer of openvibe_protocols::memory::retrieval
-- produces it (Rust computes it on write, so every backend tokenizes and
-- stems alike): the distinct terms, their counts, and the length in terms.
-- A GIN index on the terms finds the candidates of a query; BM25 is scored
-- in Rust from these columns and the tenant's corpus statistics below.
ALTER TABLE knowledge ADD COLUMN IF NOT EXISTS terms text[] NOT NULL DEFAULT '{}';
ALTER TABLE knowledge ADD COLUMN IF NOT EXISTS term_counts integer[] NOT NULL DEFAULT '{}';
ALTER TABLE knowledge ADD COLUMN IF NOT EXISTS term_total integer NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS knowledge_terms ON knowledge USING gin (terms);

-- The tenant's corpus statistics (documents, terms over all documents) for
-- BM25, kept by a trigger. Sharded 16 ways by record id so that concurrent
-- writers of one tenant rarely wait on the same row; a query sums the shards.
CREATE TABLE IF NOT EXISTS knowledge_text_stats (
    tenant_id text NOT NULL,
    shard     smallint NOT NULL,
    docs      bigint NOT NULL DEFAULT 0,
    total_len bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, shard)
);
ALTER TABLE knowledge_text_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE knowledge_text_stats FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON knowledge_text_stats;
CREATE POLICY tenant_isolation ON knowledge_text_stats
    USING (tenant_id = current_setting('openvibe.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('openvibe.tenant_id', true));

CREATE OR REPLACE FUNCTION openvibe_knowledge_text_stats() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO knowledge_text_stats AS s (tenant_id, shard, docs, total_len)
        VALUES (OLD.tenant_id, (hashtext(OLD.id) & 15)::smallint, -1, -OLD.term_total)
        ON CONFLICT (tenant_id, shard) DO UPDATE
            SET docs = s.docs - 1, total_len = s.total_len - OLD.term_total;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO knowledge_text_stats AS s (tenant_id, shard, docs, total_len)
        VALUES (NEW.tenant_id, (hashtext(NEW.id) & 15)::smallint, 1, NEW.term_total)
        ON CONFLICT (tenant_id, shard) DO UPDATE
            SET docs = s.docs + 1, total_len = s.total_len + NEW.term_total;
    END IF;
    RETURN NULL;
END;
$$;
CREATE OR REPLACE TRIGGER knowledge_text_stats AFTER INSERT OR DELETE OR UPDATE OF term_total
    ON knowledge FOR EACH ROW EXECUTE FUNCTION openvibe_knowledge_text_stats();
