-- Beliefs (issue 40): L4 of the memory pyramid, what a role holds true once a
-- person approved it. Governed like every record table (tenant, namespace,
-- project, owner, classification on the belief's domain, expiry: the same
-- row-level security). Transitions are compare-and-set updates under
-- `SELECT … FOR UPDATE` in the store (a superseding approval locks and
-- retires the old belief in the same transaction); the audit trigger names
-- each one (approve, reject, supersede, retire).
CREATE TABLE IF NOT EXISTS beliefs (
    tenant_id      text NOT NULL,
    id             text NOT NULL,
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT beliefs_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz,
    role_id        text NOT NULL,
    statement      text NOT NULL,
    domain         text NOT NULL DEFAULT '',
    confidence     double precision NOT NULL
        CONSTRAINT beliefs_confidence_check CHECK (confidence >= 0 AND confidence <= 1),
    is_constraint  boolean NOT NULL DEFAULT false,
    insight_ids    text[] NOT NULL DEFAULT '{}',
    evidence       integer NOT NULL DEFAULT 0,
    supersedes     text,
    version        integer NOT NULL DEFAULT 1,
    status         text NOT NULL DEFAULT 'proposed' CONSTRAINT beliefs_status_check
        CHECK (status IN ('proposed', 'active', 'rejected', 'retired')),
    superseded_by  text,
    decided_by     text,
    decided_at     timestamptz,
    reason         text,
    PRIMARY KEY (tenant_id, id)
);
-- Lists are newest first, filtered by status, role or domain; prompts read
-- a role's active beliefs.
CREATE INDEX IF NOT EXISTS beliefs_order ON beliefs (tenant_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS beliefs_role_status
    ON beliefs (tenant_id, role_id, status, created_at DESC, id DESC);

ALTER TABLE beliefs ENABLE ROW LEVEL SECURITY;
ALTER TABLE beliefs FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON beliefs;
CREATE POLICY tenant_isolation ON beliefs
    USING (tenant_id = current_setting('openvibe.tenant_id', true) AND (
        (SELECT coalesce(current_setting('openvibe.namespaces', true), '') = '')
        OR (namespace = ANY ((SELECT current_setting('openvibe.namespaces', true))::text[])
            AND (project_id IS NULL
                 OR project_id = (SELECT nullif(current_setting('openvibe.project_id', true), ''))))))
    WITH CHECK (tenant_id = current_setting('openvibe.tenant_id', true) AND (
        (SELECT coalesce(current_setting('openvibe.namespaces', true), '') = '')
        OR (namespace = ANY ((SELECT current_setting('openvibe.namespaces', true))::text[])
            AND (project_id IS NULL
                 OR project_id = (SELECT nullif(current_setting('openvibe.project_id', true), ''))))));
DROP POLICY IF EXISTS unexpired ON beliefs;
CREATE POLICY unexpired ON beliefs AS RESTRICTIVE FOR SELECT
    USING (expires_at IS NULL OR expires_at > now()
           OR (SELECT coalesce(current_setting('openvibe.include_expired', true), '') = 'on'));
DROP POLICY IF EXISTS owner_deletes ON beliefs;
CREATE POLICY owner_deletes ON beliefs AS RESTRICTIVE FOR DELETE
    USING ((SELECT coalesce(current_setting('openvibe.namespaces', true), '') = '')
           OR owner = (SELECT current_setting('openvibe.principal', true))
           OR '*' = ANY ((SELECT current_setting('openvibe.delete_any', true))::text[])
           OR namespace = ANY ((SELECT current_setting('openvibe.delete_any', true))::text[])
           OR expires_at <= now());

CREATE OR REPLACE FUNCTION openvibe_audit_beliefs() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    who text := coalesce(nullif(current_setting('openvibe.principal', true), ''),
                         'db:' || session_user);
    via text := nullif(current_setting('openvibe.tool', true), '');
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool)
        SELECT n.tenant_id, who, 'insert', 'belief', n.namespace, n.project_id, n.id,
               nullif(n.source, ''), via
        FROM new_rows n;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool, filters)
        SELECT n.tenant_id, who, 'update', 'belief', n.namespace, n.project_id, n.id,
               nullif(n.source, ''), via,
               jsonb_build_object(
                   'transition', CASE
                       WHEN o.status = 'proposed' AND n.status = 'active' THEN 'approve'
                       WHEN o.status = 'proposed' AND n.status = 'rejected' THEN 'reject'
                       WHEN o.status = 'active' AND n.status = 'retired'
                            AND n.superseded_by IS NOT NULL THEN 'supersede'
                       WHEN o.status = 'active' AND n.status = 'retired' THEN 'retire'
                       ELSE 'update' END,
                   'from', o.status, 'to', n.status, 'reason', n.reason,
                   'superseded_by', n.superseded_by)
        FROM new_rows n JOIN old_rows o ON o.tenant_id = n.tenant_id AND o.id = n.id
        WHERE n.updated_at IS DISTINCT FROM o.updated_at;
    ELSE
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool)
        SELECT o.tenant_id, who, 'delete', 'belief', o.namespace, o.project_id, o.id,
               nullif(o.source, ''), via
        FROM old_rows o;
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER beliefs_audit_insert AFTER INSERT ON beliefs
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_beliefs();
CREATE OR REPLACE TRIGGER beliefs_audit_update AFTER UPDATE ON beliefs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_beliefs();
CREATE OR REPLACE TRIGGER beliefs_audit_delete AFTER DELETE ON beliefs
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_beliefs();
