-- Knowledge vectors are indexed after their write, not in it.
--
-- An HNSW insert costs ~1 ms of a 384-dimension vector at 100,000 rows (it
-- walks the graph and rewrites its neighbours' pages), a hundred times the
-- rest of a knowledge upsert. Each side table gets `indexed`: the HNSW
-- index becomes partial (`WHERE indexed`) and a B-tree finds the rows still
-- pending. Knowledge is written pending; the store's indexer then marks
-- it indexed (an update, which inserts the row into the HNSW graph) in
-- batches, after the write has committed. A vector query reads the HNSW
-- index for indexed rows and compares the pending ones exactly, so a row is
-- found from the moment its write commits. Other record kinds keep the
-- default (`indexed` true, indexed in the write).

-- The index of every side table is rebuilt below: no statement timeout.
SET LOCAL statement_timeout = 0;
SET LOCAL maintenance_work_mem = '256MB';

CREATE OR REPLACE FUNCTION openvibe_deferred_vector_index(t text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %I ADD COLUMN IF NOT EXISTS indexed boolean NOT NULL DEFAULT true', t);
    EXECUTE format('DROP INDEX IF EXISTS %I', t || '_hnsw');
    EXECUTE format(
        'CREATE INDEX IF NOT EXISTS %I ON %I USING hnsw (embedding vector_cosine_ops) WHERE indexed',
        t || '_hnsw', t);
    EXECUTE format(
        'CREATE INDEX IF NOT EXISTS %I ON %I (tenant_id, record_kind) WHERE NOT indexed',
        t || '_pending', t);
END;
$$;

DO $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT table_name FROM embedding_models LOOP
        PERFORM openvibe_deferred_vector_index(t);
    END LOOP;
END;
$$;

-- Register an embedding model: its side table (fixed-dimension vector
-- column, `indexed` flag, partial HNSW cosine index, index of the pending
-- rows, tenant row-level security) is created when it does not exist.
-- Returns the table's name. Called by the stores when they are configured
-- with an embedder.
CREATE OR REPLACE FUNCTION openvibe_register_embedding_model(p_model text, p_dimensions integer)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    existing embedding_models%ROWTYPE;
    t text;
BEGIN
    SELECT * INTO existing FROM embedding_models WHERE model = p_model;
    IF FOUND THEN
        IF existing.dimensions <> p_dimensions THEN
            RAISE EXCEPTION 'embedding model % is registered with % dimensions, not %',
                p_model, existing.dimensions, p_dimensions
                USING ERRCODE = '22023';
        END IF;
        RETURN existing.table_name;
    END IF;
    IF p_dimensions < 1 OR p_dimensions > 16000 THEN
        RAISE EXCEPTION 'embedding dimension % is out of range 1..16000', p_dimensions
            USING ERRCODE = '22023';
    END IF;
    t := left('embeddings_' || trim(both '_' from regexp_replace(lower(p_model), '[^a-z0-9]+', '_', 'g')), 63);
    EXECUTE format(
        'CREATE TABLE IF NOT EXISTS %I ('
        'tenant_id text NOT NULL, record_kind text NOT NULL, record_id text COLLATE "C" NOT NULL, '
        'model text NOT NULL DEFAULT %L CHECK (model = %L), embedding vector(%s) NOT NULL, '
        'content_hash text, created_at timestamptz NOT NULL DEFAULT now(), '
        'PRIMARY KEY (tenant_id, record_kind, record_id, model))',
        t, p_model, p_model, p_dimensions);
    PERFORM openvibe_deferred_vector_index(t);
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('DROP POLICY IF EXISTS tenant_isolation ON %I', t);
    EXECUTE format(
        'CREATE POLICY tenant_isolation ON %I '
        'USING (tenant_id = current_setting(''openvibe.tenant_id'', true)) '
        'WITH CHECK (tenant_id = current_setting(''openvibe.tenant_id'', true))', t);
    INSERT INTO embedding_models (model, dimensions, table_name)
    VALUES (p_model, p_dimensions, t);
    RETURN t;
END;
$$;
