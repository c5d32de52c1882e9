-- Identity on every edge (issue 37): audit entries of writes carry where the
-- record came from (its `source`, which a service stamps from the caller's
-- API key) and the tool or route the call came through (`mcp:saveMemory`,
-- `http:storeFact`: the transaction setting `openvibe.tool` the stores set
-- with the tenant and principal). Seed 003's audit `details`: creator (the
-- principal), source, tool name.
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS source text;
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS tool text;

CREATE OR REPLACE FUNCTION openvibe_audit_rows() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    who text := coalesce(nullif(current_setting('openvibe.principal', true), ''),
                         'db:' || session_user);
    via text := nullif(current_setting('openvibe.tool', true), '');
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool)
        SELECT n.tenant_id, who, 'insert', TG_ARGV[0], n.namespace, n.project_id, n.id,
               nullif(n.source, ''), via
        FROM new_rows n;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool)
        SELECT n.tenant_id, who, 'update', TG_ARGV[0], n.namespace, n.project_id, n.id,
               nullif(n.source, ''), via
        FROM new_rows n JOIN old_rows o ON o.tenant_id = n.tenant_id AND o.id = n.id
        WHERE n.updated_at IS DISTINCT FROM o.updated_at;
    ELSE
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool)
        SELECT o.tenant_id, who, 'delete', TG_ARGV[0], o.namespace, o.project_id, o.id,
               nullif(o.source, ''), via
        FROM old_rows o;
    END IF;
    RETURN NULL;
END;
$$;
