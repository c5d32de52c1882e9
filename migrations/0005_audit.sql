-- Governance (issue 10): the audit trail.
--
-- Record changes are audited by statement-level triggers, in the same
-- transaction as the change: an insert, an update that changed the record
-- (`updated_at` moved; access statistics do not count) and a delete each
-- append one row per record. The principal comes from the transaction
-- setting `openvibe.principal` the stores set with the tenant. Searches,
-- promotions' notes and refusals are appended by the stores themselves.
--
-- Append only: the application role may SELECT and INSERT; UPDATE, DELETE
-- and TRUNCATE are revoked and, should a privilege come back, refused by
-- triggers.
CREATE TABLE IF NOT EXISTS audit_log (
    tenant_id   text NOT NULL,
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    principal   text NOT NULL,
    operation   text NOT NULL
        CHECK (operation IN ('insert', 'update', 'delete', 'search', 'promote')),
    record_kind text NOT NULL,
    namespace   text,
    project_id  text,
    record_id   text,
    filters     jsonb,
    top_k       bigint,
    status      text NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'refused')),
    reason      text,
    PRIMARY KEY (tenant_id, seq)
);
CREATE INDEX IF NOT EXISTS audit_log_principal ON audit_log (tenant_id, principal, seq DESC);
CREATE INDEX IF NOT EXISTS audit_log_namespace ON audit_log (tenant_id, namespace, seq DESC);
CREATE INDEX IF NOT EXISTS audit_log_at ON audit_log (tenant_id, at DESC);

ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS audit_read ON audit_log;
CREATE POLICY audit_read ON audit_log FOR SELECT
    USING (tenant_id = current_setting('openvibe.tenant_id', true));
DROP POLICY IF EXISTS audit_append ON audit_log;
CREATE POLICY audit_append ON audit_log FOR INSERT
    WITH CHECK (tenant_id = current_setting('openvibe.tenant_id', true));

CREATE OR REPLACE FUNCTION openvibe_audit_is_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only: % refused', TG_OP
        USING ERRCODE = '42501';
END;
$$;
CREATE OR REPLACE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION openvibe_audit_is_append_only();
CREATE OR REPLACE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION openvibe_audit_is_append_only();
REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM CURRENT_USER;

-- The record triggers: TG_ARGV[0] is the record kind.
CREATE OR REPLACE FUNCTION openvibe_audit_rows() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    who text := coalesce(nullif(current_setting('openvibe.principal', true), ''),
                         'db:' || session_user);
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id)
        SELECT n.tenant_id, who, 'insert', TG_ARGV[0], n.namespace, n.project_id, n.id
        FROM new_rows n;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id)
        SELECT n.tenant_id, who, 'update', TG_ARGV[0], n.namespace, n.project_id, n.id
        FROM new_rows n JOIN old_rows o ON o.tenant_id = n.tenant_id AND o.id = n.id
        WHERE n.updated_at IS DISTINCT FROM o.updated_at;
    ELSE
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id)
        SELECT o.tenant_id, who, 'delete', TG_ARGV[0], o.namespace, o.project_id, o.id
        FROM old_rows o;
    END IF;
    RETURN NULL;
END;
$$;

DO $$
DECLARE
    t text[];
BEGIN
    FOREACH t SLICE 1 IN ARRAY ARRAY[
        ARRAY['facts', 'fact'], ARRAY['episodes', 'episode'], ARRAY['insights', 'insight'],
        ARRAY['sessions', 'session'], ARRAY['plans', 'plan'],
        ARRAY['task_contexts', 'task_context'], ARRAY['knowledge', 'knowledge']] LOOP
        EXECUTE format('CREATE OR REPLACE TRIGGER %I AFTER INSERT ON %I '
                       'REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT '
                       'EXECUTE FUNCTION openvibe_audit_rows(%L)', t[1] || '_audit_insert', t[1], t[2]);
        EXECUTE format('CREATE OR REPLACE TRIGGER %I AFTER UPDATE ON %I '
                       'REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT '
                       'EXECUTE FUNCTION openvibe_audit_rows(%L)', t[1] || '_audit_update', t[1], t[2]);
        EXECUTE format('CREATE OR REPLACE TRIGGER %I AFTER DELETE ON %I '
                       'REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT '
                       'EXECUTE FUNCTION openvibe_audit_rows(%L)', t[1] || '_audit_delete', t[1], t[2]);
    END LOOP;
END;
$$;
