-- The L1 raw log (issue 17): every LLM call a role's operators make,
-- append-only, governed like every record kind (tenant, namespace and
-- project row-level security, owner-restricted deletes, expiry, audit).
CREATE TABLE IF NOT EXISTS raw_calls (
    tenant_id      text NOT NULL,
    id             text COLLATE "C" NOT NULL,
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT raw_calls_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    domain         text NOT NULL DEFAULT '',
    entity         text NOT NULL DEFAULT '',
    tags           text[] NOT NULL DEFAULT '{}',
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz,
    agent_id       text NOT NULL DEFAULT '',
    operator_id    text NOT NULL DEFAULT '',
    node_name      text NOT NULL DEFAULT '',
    episode_id     text,
    "timestamp"    timestamptz NOT NULL,
    model          text NOT NULL DEFAULT '',
    request        jsonb NOT NULL,
    response       jsonb,
    error          text,
    tokens_in      bigint NOT NULL DEFAULT 0 CONSTRAINT raw_calls_tokens_in_check CHECK (tokens_in >= 0),
    tokens_out     bigint NOT NULL DEFAULT 0 CONSTRAINT raw_calls_tokens_out_check CHECK (tokens_out >= 0),
    latency_us     bigint NOT NULL DEFAULT 0 CONSTRAINT raw_calls_latency_check CHECK (latency_us >= 0),
    stop_reason    jsonb,
    search         tsvector NOT NULL DEFAULT ''::tsvector,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX IF NOT EXISTS raw_calls_agent_time
    ON raw_calls (tenant_id, agent_id, "timestamp" DESC, id);
CREATE INDEX IF NOT EXISTS raw_calls_time ON raw_calls (tenant_id, "timestamp" DESC, id);
CREATE INDEX IF NOT EXISTS raw_calls_episode
    ON raw_calls (tenant_id, episode_id) WHERE episode_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS raw_calls_search ON raw_calls USING gin (search);
CREATE INDEX IF NOT EXISTS raw_calls_expires_at
    ON raw_calls (tenant_id, expires_at) WHERE expires_at IS NOT NULL;

ALTER TABLE raw_calls ENABLE ROW LEVEL SECURITY;
ALTER TABLE raw_calls FORCE ROW LEVEL SECURITY;

-- The same policies as the other record tables (0004, 0006, 0007).
DO $$
DECLARE
    rule text := '(tenant_id = current_setting(''openvibe.tenant_id'', true) AND ('
        || '(SELECT coalesce(current_setting(''openvibe.namespaces'', true), '''') = '''') '
        || 'OR (namespace = ANY ((SELECT current_setting(''openvibe.namespaces'', true))::text[]) '
        || 'AND (project_id IS NULL OR project_id = '
        || '(SELECT nullif(current_setting(''openvibe.project_id'', true), ''''))))))';
    visible text := '(expires_at IS NULL OR expires_at > now() '
        || 'OR (SELECT coalesce(current_setting(''openvibe.include_expired'', true), '''') = ''on''))';
    deletable text := '((SELECT coalesce(current_setting(''openvibe.namespaces'', true), '''') = '''') '
        || 'OR owner = (SELECT current_setting(''openvibe.principal'', true)) '
        || 'OR ''*'' = ANY ((SELECT current_setting(''openvibe.delete_any'', true))::text[]) '
        || 'OR namespace = ANY ((SELECT current_setting(''openvibe.delete_any'', true))::text[]) '
        || 'OR expires_at <= now())';
BEGIN
    EXECUTE 'DROP POLICY IF EXISTS tenant_isolation ON raw_calls';
    EXECUTE format('CREATE POLICY tenant_isolation ON raw_calls USING %s WITH CHECK %s',
                   rule, rule);
    EXECUTE 'DROP POLICY IF EXISTS unexpired ON raw_calls';
    EXECUTE format('CREATE POLICY unexpired ON raw_calls AS RESTRICTIVE FOR SELECT USING %s',
                   visible);
    EXECUTE 'DROP POLICY IF EXISTS owner_deletes ON raw_calls';
    EXECUTE format('CREATE POLICY owner_deletes ON raw_calls AS RESTRICTIVE FOR DELETE USING %s',
                   deletable);
END;
$$;

-- Append-only for the application: no updates.
REVOKE UPDATE ON raw_calls FROM CURRENT_USER;

CREATE OR REPLACE TRIGGER raw_calls_audit_insert AFTER INSERT ON raw_calls
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_rows('raw_call');
CREATE OR REPLACE TRIGGER raw_calls_audit_delete AFTER DELETE ON raw_calls
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_rows('raw_call');
