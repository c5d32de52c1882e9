-- Initiatives move by status (issue 64): an update of one initiative of a
-- goal is audited as the `initiative` transition with its id and new
-- status, like `revise` and `decompose` (Goal::transition_detail).

CREATE OR REPLACE FUNCTION openvibe_audit_goals() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    who text := coalesce(nullif(current_setting('openvibe.principal', true), ''),
                         'db:' || session_user);
    via text := nullif(current_setting('openvibe.tool', true), '');
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool)
        SELECT n.tenant_id, who, 'insert', 'goal', n.namespace, n.project_id, n.id,
               nullif(n.source, ''), via
        FROM new_rows n;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool, filters)
        SELECT n.tenant_id, who, 'update', 'goal', n.namespace, n.project_id, n.id,
               nullif(n.source, ''), via,
               CASE WHEN n.version <> o.version
                    THEN jsonb_build_object('transition', 'revise', 'from', o.version, 'to', n.version)
                    WHEN n.decomposed IS DISTINCT FROM o.decomposed
                    THEN jsonb_build_object('transition', 'decompose',
                                            'initiatives', jsonb_array_length(n.initiatives))
                    WHEN n.initiatives IS DISTINCT FROM o.initiatives
                    THEN (SELECT jsonb_build_object('transition', 'initiative',
                                                    'initiative', ni.value ->> 'id',
                                                    'status', ni.value ->> 'status')
                          FROM jsonb_array_elements(n.initiatives) WITH ORDINALITY AS ni(value, ord)
                          LEFT JOIN jsonb_array_elements(o.initiatives) WITH ORDINALITY AS oi(value, ord)
                                 ON oi.ord = ni.ord
                          WHERE ni.value IS DISTINCT FROM oi.value
                          ORDER BY ni.ord
                          LIMIT 1)
                    ELSE NULL END
        FROM new_rows n JOIN old_rows o ON o.tenant_id = n.tenant_id AND o.id = n.id
        WHERE n.updated_at IS DISTINCT FROM o.updated_at;
    ELSE
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool)
        SELECT o.tenant_id, who, 'delete', 'goal', o.namespace, o.project_id, o.id,
               nullif(o.source, ''), via
        FROM old_rows o;
    END IF;
    RETURN NULL;
END;
$$;
