-- openvibe: working memory (sessions, plans, task and plan contexts, plan
-- state) and semantic memory (knowledge with embeddings).
--
-- Idempotent like 0001. Every record table carries the governance columns
-- of 0001 (tenant_id, namespace, project_id, owner, classification, domain,
-- entity, tags, source, created_at, updated_at), so the stores' read and
-- modify predicates apply unchanged; every table has tenant row-level
-- security. Lookups the API promises by a secondary id (a task by any of
-- its sub-task ids, a plan context by any of its correlation ids) are side
-- tables with a b-tree primary key, not array scans: forced RLS keeps
-- PostgreSQL from using GIN indexes for them (docs/decisions.md).

-- --------------------------------------------------------------- sessions
CREATE TABLE IF NOT EXISTS sessions (
    tenant_id      text NOT NULL,
    id             text COLLATE "C" NOT NULL,
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT sessions_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    domain         text NOT NULL DEFAULT '',
    entity         text NOT NULL DEFAULT '',
    tags           text[] NOT NULL DEFAULT '{}',
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    name           text,
    metadata       jsonb NOT NULL DEFAULT '{}',
    plan_count     bigint NOT NULL DEFAULT 0 CONSTRAINT sessions_plan_count_check CHECK (plan_count >= 0),
    last_activity  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX IF NOT EXISTS sessions_list ON sessions (tenant_id, created_at DESC, id DESC);

-- ------------------------------------------------------------------ plans
CREATE TABLE IF NOT EXISTS plans (
    tenant_id      text NOT NULL,
    id             text COLLATE "C" NOT NULL,
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT plans_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    domain         text NOT NULL DEFAULT '',
    entity         text NOT NULL DEFAULT '',
    tags           text[] NOT NULL DEFAULT '{}',
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    goal_event     text NOT NULL,
    goal_data      jsonb NOT NULL DEFAULT '{}',
    response_event text NOT NULL DEFAULT '',
    status         text NOT NULL DEFAULT 'active'
        CONSTRAINT plans_status_check CHECK (status IN ('active', 'completed', 'failed', 'paused')),
    session_id     text COLLATE "C",
    parent_plan_id text COLLATE "C",
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT plans_session_fk FOREIGN KEY (tenant_id, session_id)
        REFERENCES sessions (tenant_id, id) ON DELETE SET NULL (session_id),
    CONSTRAINT plans_parent_fk FOREIGN KEY (tenant_id, parent_plan_id)
        REFERENCES plans (tenant_id, id) ON DELETE SET NULL (parent_plan_id)
);
CREATE INDEX IF NOT EXISTS plans_list ON plans (tenant_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS plans_by_status ON plans (tenant_id, status, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS plans_by_session ON plans (tenant_id, session_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS plans_by_parent ON plans (tenant_id, parent_plan_id);

-- ---------------------------------------------------------- task contexts
CREATE TABLE IF NOT EXISTS task_contexts (
    tenant_id      text NOT NULL,
    id             text COLLATE "C" NOT NULL,
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT task_contexts_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    domain         text NOT NULL DEFAULT '',
    entity         text NOT NULL DEFAULT '',
    tags           text[] NOT NULL DEFAULT '{}',
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    plan_id        text COLLATE "C",
    context        jsonb NOT NULL DEFAULT '{}',
    sub_task_ids   text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT task_contexts_plan_fk FOREIGN KEY (tenant_id, plan_id)
        REFERENCES plans (tenant_id, id) ON DELETE SET NULL (plan_id)
);
CREATE INDEX IF NOT EXISTS task_contexts_by_plan ON task_contexts (tenant_id, plan_id);

-- A sub-task id belongs to one task: the primary key enforces it.
CREATE TABLE IF NOT EXISTS task_subtasks (
    tenant_id   text NOT NULL,
    sub_task_id text COLLATE "C" NOT NULL,
    task_id     text COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant_id, sub_task_id),
    CONSTRAINT task_subtasks_task_fk FOREIGN KEY (tenant_id, task_id)
        REFERENCES task_contexts (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS task_subtasks_by_task ON task_subtasks (tenant_id, task_id);

-- ---------------------------------------------------------- plan contexts
-- Governed by their plan (no governance columns of their own).
CREATE TABLE IF NOT EXISTS plan_contexts (
    tenant_id       text NOT NULL,
    plan_id         text COLLATE "C" NOT NULL,
    session_id      text COLLATE "C",
    context         jsonb NOT NULL DEFAULT '{}',
    correlation_ids text[] NOT NULL DEFAULT '{}',
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, plan_id),
    CONSTRAINT plan_contexts_plan_fk FOREIGN KEY (tenant_id, plan_id)
        REFERENCES plans (tenant_id, id) ON DELETE CASCADE,
    CONSTRAINT plan_contexts_session_fk FOREIGN KEY (tenant_id, session_id)
        REFERENCES sessions (tenant_id, id) ON DELETE SET NULL (session_id)
);

-- A correlation id belongs to one plan: the primary key enforces it.
CREATE TABLE IF NOT EXISTS plan_correlations (
    tenant_id      text NOT NULL,
    correlation_id text COLLATE "C" NOT NULL,
    plan_id        text COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant_id, correlation_id),
    CONSTRAINT plan_correlations_context_fk FOREIGN KEY (tenant_id, plan_id)
        REFERENCES plan_contexts (tenant_id, plan_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS plan_correlations_by_plan ON plan_correlations (tenant_id, plan_id);

-- ------------------------------------------------------------- plan state
-- One row per key; `version` is the optimistic lock. Atomic append and
-- increment are one INSERT ... ON CONFLICT DO UPDATE each.
CREATE TABLE IF NOT EXISTS plan_state (
    tenant_id  text NOT NULL,
    plan_id    text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    value      jsonb NOT NULL,
    version    bigint NOT NULL DEFAULT 1 CONSTRAINT plan_state_version_check CHECK (version >= 1),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, plan_id, key),
    CONSTRAINT plan_state_plan_fk FOREIGN KEY (tenant_id, plan_id)
        REFERENCES plans (tenant_id, id) ON DELETE CASCADE
);

-- -------------------------------------------------------------- knowledge
CREATE TABLE IF NOT EXISTS knowledge (
    tenant_id      text NOT NULL,
    id             text COLLATE "C" NOT NULL,
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT knowledge_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    domain         text NOT NULL DEFAULT '',
    entity         text NOT NULL DEFAULT '',
    tags           text[] NOT NULL DEFAULT '{}',
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    content        text NOT NULL,
    external_id    text,
    is_public      boolean NOT NULL DEFAULT false,
    plan_id        text COLLATE "C",
    session_id     text COLLATE "C",
    metadata       jsonb NOT NULL DEFAULT '{}',
    content_hash   text NOT NULL,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT knowledge_plan_fk FOREIGN KEY (tenant_id, plan_id)
        REFERENCES plans (tenant_id, id) ON DELETE SET NULL (plan_id),
    CONSTRAINT knowledge_session_fk FOREIGN KEY (tenant_id, session_id)
        REFERENCES sessions (tenant_id, id) ON DELETE SET NULL (session_id)
);
-- The upsert keys: (tenant, owner, external id), else (tenant, owner, content hash).
CREATE UNIQUE INDEX IF NOT EXISTS knowledge_external_key
    ON knowledge (tenant_id, owner, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS knowledge_hash_key
    ON knowledge (tenant_id, owner, content_hash) WHERE external_id IS NULL;

-- Knowledge keeps its embeddings in the per-model side tables of 0001.
ALTER TABLE embeddings_all_minilm_l6_v2
    DROP CONSTRAINT IF EXISTS embeddings_all_minilm_l6_v2_kind_check;
ALTER TABLE embeddings_all_minilm_l6_v2
    ADD CONSTRAINT embeddings_all_minilm_l6_v2_kind_check
    CHECK (record_kind IN ('fact', 'episode', 'insight', 'memory_entry', 'knowledge'));
CREATE OR REPLACE TRIGGER knowledge_drop_embeddings AFTER DELETE ON knowledge
    FOR EACH ROW EXECUTE FUNCTION openvibe_drop_embeddings('knowledge');

-- Register an embedding model: its side table (fixed-dimension vector
-- column, HNSW cosine index, tenant row-level security) is created when it
-- does not exist. Returns the table's name. Called by the stores when they
-- are configured with an embedder.
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
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I USING hnsw (embedding vector_cosine_ops)',
        t || '_hnsw', t);
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

-- ----------------------------------------------------- row-level security
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['sessions', 'plans', 'task_contexts', 'task_subtasks',
                             'plan_contexts', 'plan_correlations', 'plan_state',
                             'knowledge'] LOOP
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
