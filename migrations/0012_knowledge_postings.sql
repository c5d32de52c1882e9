-- Full-text postings for knowledge (issue 16). A hybrid query's full-text
-- candidates came from the GIN index on `knowledge.terms`: every candidate
-- a random heap visit (2-5 us) before the read rule rejected about two in
-- three. Here each (record, term) is one row of a B-tree keyed by tenant
-- and term that carries what BM25 and the read rule need, so a query's
-- candidates are an index-only scan (docs/decisions.md).
--
-- Derived data: a trigger on knowledge keeps it, in the writer's own
-- transaction and under the writer's own row-level security (the rows it
-- writes and deletes are those of the knowledge row the writer may write).
-- The policies mirror knowledge's read rules: tenant and namespace/project
-- (0004) and expiry (0007).
CREATE TABLE IF NOT EXISTS knowledge_postings (
    tenant_id  text NOT NULL,
    term       text COLLATE "C" NOT NULL,
    id         text COLLATE "C" NOT NULL,
    tf         integer NOT NULL,
    len        integer NOT NULL,
    created_at timestamptz NOT NULL,
    owner      text NOT NULL,
    is_public  boolean NOT NULL,
    namespace  text NOT NULL,
    project_id text,
    expires_at timestamptz,
    PRIMARY KEY (tenant_id, term, id)
        INCLUDE (tf, len, created_at, owner, is_public, namespace, project_id, expires_at)
);

-- The rows already stored. The owner reads every tenant's while knowledge's
-- row-level security is not forced, in this migration's transaction only.
ALTER TABLE knowledge NO FORCE ROW LEVEL SECURITY;
INSERT INTO knowledge_postings
    SELECT k.tenant_id, u.term, k.id, u.tf, k.term_total, k.created_at, k.owner, k.is_public,
           k.namespace, k.project_id, k.expires_at
    FROM knowledge k, unnest(k.terms, k.term_counts) AS u(term, tf)
ON CONFLICT DO NOTHING;
ALTER TABLE knowledge FORCE ROW LEVEL SECURITY;

ALTER TABLE knowledge_postings ENABLE ROW LEVEL SECURITY;
ALTER TABLE knowledge_postings FORCE ROW LEVEL SECURITY;
DO $$
DECLARE
    rule text := '(tenant_id = current_setting(''openvibe.tenant_id'', true) AND ('
        || '(SELECT coalesce(current_setting(''openvibe.namespaces'', true), '''') = '''') '
        || 'OR (namespace = ANY ((SELECT current_setting(''openvibe.namespaces'', true))::text[]) '
        || 'AND (project_id IS NULL OR project_id = '
        || '(SELECT nullif(current_setting(''openvibe.project_id'', true), ''''))))))';
    visible text := '(expires_at IS NULL OR expires_at > now() '
        || 'OR (SELECT coalesce(current_setting(''openvibe.include_expired'', true), '''') = ''on''))';
BEGIN
    EXECUTE 'DROP POLICY IF EXISTS tenant_isolation ON knowledge_postings';
    EXECUTE format('CREATE POLICY tenant_isolation ON knowledge_postings USING %s WITH CHECK %s',
                   rule, rule);
    EXECUTE 'DROP POLICY IF EXISTS unexpired ON knowledge_postings';
    EXECUTE format('CREATE POLICY unexpired ON knowledge_postings AS RESTRICTIVE FOR SELECT '
                   'USING %s', visible);
END;
$$;

CREATE OR REPLACE FUNCTION openvibe_knowledge_postings() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM knowledge_postings
        WHERE tenant_id = OLD.tenant_id AND term = ANY (OLD.terms) AND id = OLD.id;
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
CREATE OR REPLACE TRIGGER knowledge_postings_write AFTER INSERT OR DELETE
    ON knowledge FOR EACH ROW EXECUTE FUNCTION openvibe_knowledge_postings();
CREATE OR REPLACE TRIGGER knowledge_postings_update AFTER UPDATE
    ON knowledge FOR EACH ROW
    WHEN (OLD.terms IS DISTINCT FROM NEW.terms
          OR OLD.term_counts IS DISTINCT FROM NEW.term_counts
          OR OLD.term_total IS DISTINCT FROM NEW.term_total
          OR OLD.created_at IS DISTINCT FROM NEW.created_at
          OR OLD.owner IS DISTINCT FROM NEW.owner
          OR OLD.is_public IS DISTINCT FROM NEW.is_public
          OR OLD.namespace IS DISTINCT FROM NEW.namespace
          OR OLD.project_id IS DISTINCT FROM NEW.project_id
          OR OLD.expires_at IS DISTINCT FROM NEW.expires_at)
    EXECUTE FUNCTION openvibe_knowledge_postings();

-- The postings replace the GIN index as the way to candidates.
DROP INDEX IF EXISTS knowledge_terms;
