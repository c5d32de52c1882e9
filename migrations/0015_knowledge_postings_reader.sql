-- Full-text postings keyed by who may read them (issue 16). A knowledge
-- record is read by its owner, and by everyone when it is public; the
-- postings (0012) were keyed by tenant, term and record, so a query's scan
-- of a term visited every record holding it and the read rule then
-- dropped the ones of other owners (two in three at the benchmark's
-- 100,000 records: 1,443 postings visited for 427 kept).
--
-- `reader` is '*' for a public record's postings and the owner's key
-- otherwise (owner keys are `kind:id`, never '*'), so a caller's
-- candidates are the index ranges (tenant, term, reader) for its own key
-- and '*': the scan visits only what the read rule may keep. The read rule
-- itself still applies (a caller asking for its own records only drops the
-- public ones of other owners).
ALTER TABLE knowledge_postings ADD COLUMN IF NOT EXISTS reader text COLLATE "C"
    GENERATED ALWAYS AS (CASE WHEN is_public THEN '*' ELSE owner END) STORED;

ALTER TABLE knowledge_postings DROP CONSTRAINT IF EXISTS knowledge_postings_pkey;
ALTER TABLE knowledge_postings ADD CONSTRAINT knowledge_postings_pkey
    PRIMARY KEY (tenant_id, term, reader, id)
    INCLUDE (tf, len, created_at, owner, is_public, namespace, project_id, expires_at);

-- A record's postings are found by the whole key again: its reader is
-- '*' or its old owner (both asked, so that the delete never depends on
-- repeating the column's expression).
CREATE OR REPLACE FUNCTION openvibe_knowledge_postings() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM knowledge_postings
        WHERE tenant_id = OLD.tenant_id AND term = ANY (OLD.terms)
          AND reader = ANY (ARRAY['*', OLD.owner])
          AND id = OLD.id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO knowledge_postings
            SELECT NEW.tenant_id, u.term, NEW.id, u.tf, NEW.term_total, NEW.created_at,
                   NEW.owner, NEW.is_public, NEW.namespace, NEW.project_id, NEW.expires_at
            FROM unnest(NEW.terms, NEW.term_counts) AS u(term, tf);
    END IF;
    RETURN NULL;
END;
$$;

-- Statistics for the new column and key, before the first query plans.
ANALYZE knowledge_postings;
