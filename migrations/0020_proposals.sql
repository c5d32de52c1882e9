-- Proposals (issue 38): what waits for a person. Governed like every record
-- table (tenant, namespace, project, owner, classification, expiry: the same
-- row-level security), with the status machine's columns. Transitions are
-- compare-and-set updates under `SELECT … FOR UPDATE` in the store; the audit
-- trigger names each one (approve, reject, claim, executed, failed, expire).
CREATE TABLE IF NOT EXISTS proposals (
    tenant_id      text NOT NULL,
    id             text NOT NULL,
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT proposals_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz,
    role_id        text NOT NULL,
    domain         text NOT NULL DEFAULT '',
    summary        text NOT NULL,
    outcome        text NOT NULL CONSTRAINT proposals_outcome_check
        CHECK (outcome IN ('propose', 'escalate')),
    decision       jsonb,
    action         jsonb,
    assignee       text,
    deadline       timestamptz,
    status         text NOT NULL DEFAULT 'pending' CONSTRAINT proposals_status_check
        CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'executed', 'failed')),
    decided_by     text,
    decided_at     timestamptz,
    reason         text,
    claimed_by     text,
    claimed_at     timestamptz,
    finished_at    timestamptz,
    result         jsonb,
    error          text,
    PRIMARY KEY (tenant_id, id)
);
-- Lists are newest first, filtered by status, role or assignee.
CREATE INDEX IF NOT EXISTS proposals_order ON proposals (tenant_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS proposals_status
    ON proposals (tenant_id, status, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS proposals_role
    ON proposals (tenant_id, role_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS proposals_assignee
    ON proposals (tenant_id, assignee, created_at DESC, id DESC) WHERE assignee IS NOT NULL;

ALTER TABLE proposals ENABLE ROW LEVEL SECURITY;
ALTER TABLE proposals FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON proposals;
CREATE POLICY tenant_isolation ON proposals
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
DROP POLICY IF EXISTS unexpired ON proposals;
CREATE POLICY unexpired ON proposals AS RESTRICTIVE FOR SELECT
    USING (expires_at IS NULL OR expires_at > now()
           OR (SELECT coalesce(current_setting('openvibe.include_expired', true), '') = 'on'));
DROP POLICY IF EXISTS owner_deletes ON proposals;
CREATE POLICY owner_deletes ON proposals AS RESTRICTIVE FOR DELETE
    USING ((SELECT coalesce(current_setting('openvibe.namespaces', true), '') = '')
           OR owner = (SELECT current_setting('openvibe.principal', true))
           OR '*' = ANY ((SELECT current_setting('openvibe.delete_any', true))::text[])
           OR namespace = ANY ((SELECT current_setting('openvibe.delete_any', true))::text[])
           OR expires_at <= now());

-- The audit trail of proposals: inserts and deletes as every table's, and
-- each update with the transition it made.
CREATE OR REPLACE FUNCTION openvibe_audit_proposals() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    who text := coalesce(nullif(current_setting('openvibe.principal', true), ''),
                         'db:' || session_user);
    via text := nullif(current_setting('openvibe.tool', true), '');
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool)
        SELECT n.tenant_id, who, 'insert', 'proposal', n.namespace, n.project_id, n.id,
               nullif(n.source, ''), via
        FROM new_rows n;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool, filters)
        SELECT n.tenant_id, who, 'update', 'proposal', n.namespace, n.project_id, n.id,
               nullif(n.source, ''), via,
               jsonb_build_object(
                   'transition', CASE
                       WHEN o.status = 'pending' AND n.status = 'approved' THEN 'approve'
                       WHEN o.status = 'pending' AND n.status = 'rejected' THEN 'reject'
                       WHEN o.status = 'pending' AND n.status = 'expired' THEN 'expire'
                       WHEN o.status = 'approved' AND n.status = 'executed' THEN 'executed'
                       WHEN o.status = 'approved' AND n.status = 'failed' THEN 'failed'
                       WHEN o.status = 'approved' AND n.status = 'approved'
                            AND o.claimed_by IS NULL AND n.claimed_by IS NOT NULL THEN 'claim'
                       ELSE 'update' END,
                   'from', o.status, 'to', n.status, 'reason', n.reason)
        FROM new_rows n JOIN old_rows o ON o.tenant_id = n.tenant_id AND o.id = n.id
        WHERE n.updated_at IS DISTINCT FROM o.updated_at;
    ELSE
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool)
        SELECT o.tenant_id, who, 'delete', 'proposal', o.namespace, o.project_id, o.id,
               nullif(o.source, ''), via
        FROM old_rows o;
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER proposals_audit_insert AFTER INSERT ON proposals
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_proposals();
CREATE OR REPLACE TRIGGER proposals_audit_update AFTER UPDATE ON proposals
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_proposals();
CREATE OR REPLACE TRIGGER proposals_audit_delete AFTER DELETE ON proposals
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_proposals();
