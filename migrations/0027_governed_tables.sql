-- One function installs a governed table's row-level security and audit
-- triggers (issue 58): a kind's migration creates its table and calls
--
--     SELECT openvibe_govern('<table>', '<kind>');
--
-- passing only what differs: whether its records expire, and the audit
-- `filters` of an update (an expression over the old row `o` and the new
-- row `n`, naming the transition). The per-transaction settings the stores
-- set (crates/openvibe-postgres/src/tx.rs: tenant, namespaces, project,
-- principal, the namespaces it may delete in, whether expired rows show)
-- are spelled here once.
--
-- What it installs, forced on the table's owner too:
-- * `tenant_isolation`: rows of the caller's tenant, in a namespace it may
--   read (any when it names none: a trusted runtime), of no project or
--   its own;
-- * `unexpired` (kinds that expire): an expired row is gone, unless the
--   transaction asks to see them (cleanup, erasure);
-- * `owner_deletes`: a governed caller deletes its own rows, or those of a
--   namespace where it may delete any (and expired rows);
-- * audit triggers for insert, update and delete, each statement's rows in
--   the audit trail: the shared `openvibe_audit_rows(kind)`, or, for a
--   kind with transitions, a function `openvibe_audit_<table>` generated
--   with its `transition` expression.
--
-- The tables of migrations 0001-0023 are installed again through it below
-- (raw calls, append-only, keep their own update rule); the policies and
-- triggers the catalog holds afterwards are exactly those the earlier
-- migrations wrote (tests/governed_tables.rs compares them).
CREATE OR REPLACE FUNCTION openvibe_govern(
    tbl text,
    kind text,
    expires boolean DEFAULT true,
    transition text DEFAULT NULL
) RETURNS void
LANGUAGE plpgsql AS $govern$
DECLARE
    everywhere constant text :=
        $s$(SELECT coalesce(current_setting('openvibe.namespaces', true), '') = '')$s$;
    readable constant text := format(
        $s$(tenant_id = current_setting('openvibe.tenant_id', true) AND (
            %s
            OR (namespace = ANY ((SELECT current_setting('openvibe.namespaces', true))::text[])
                AND (project_id IS NULL
                     OR project_id = (SELECT nullif(current_setting('openvibe.project_id', true), ''))))))$s$,
        everywhere);
    deletable constant text := format(
        $s$(%s
            OR owner = (SELECT current_setting('openvibe.principal', true))
            OR '*' = ANY ((SELECT current_setting('openvibe.delete_any', true))::text[])
            OR namespace = ANY ((SELECT current_setting('openvibe.delete_any', true))::text[])%s)$s$,
        everywhere,
        CASE WHEN expires THEN $s$
            OR expires_at <= now()$s$ ELSE '' END);
    audit text := 'openvibe_audit_rows';
    args text := quote_literal(kind);
BEGIN
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', tbl);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', tbl);
    EXECUTE format('DROP POLICY IF EXISTS tenant_isolation ON %I', tbl);
    EXECUTE format('CREATE POLICY tenant_isolation ON %I USING %s WITH CHECK %s',
                   tbl, readable, readable);
    EXECUTE format('DROP POLICY IF EXISTS unexpired ON %I', tbl);
    IF expires THEN
        EXECUTE format($p$CREATE POLICY unexpired ON %I AS RESTRICTIVE FOR SELECT
            USING (expires_at IS NULL OR expires_at > now()
                   OR (SELECT coalesce(current_setting('openvibe.include_expired', true), '') = 'on'))$p$,
            tbl);
    END IF;
    EXECUTE format('DROP POLICY IF EXISTS owner_deletes ON %I', tbl);
    EXECUTE format('CREATE POLICY owner_deletes ON %I AS RESTRICTIVE FOR DELETE USING %s',
                   tbl, deletable);

    IF transition IS NOT NULL THEN
        audit := 'openvibe_audit_' || tbl;
        args := '';
        EXECUTE format($f$CREATE OR REPLACE FUNCTION %I() RETURNS trigger
LANGUAGE plpgsql AS $audit$
DECLARE
    who text := coalesce(nullif(current_setting('openvibe.principal', true), ''),
                         'db:' || session_user);
    via text := nullif(current_setting('openvibe.tool', true), '');
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool)
        SELECT n.tenant_id, who, 'insert', %L, n.namespace, n.project_id, n.id,
               nullif(n.source, ''), via
        FROM new_rows n;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool, filters)
        SELECT n.tenant_id, who, 'update', %L, n.namespace, n.project_id, n.id,
               nullif(n.source, ''), via, %s
        FROM new_rows n JOIN old_rows o ON o.tenant_id = n.tenant_id AND o.id = n.id
        WHERE n.updated_at IS DISTINCT FROM o.updated_at;
    ELSE
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool)
        SELECT o.tenant_id, who, 'delete', %L, o.namespace, o.project_id, o.id,
               nullif(o.source, ''), via
        FROM old_rows o;
    END IF;
    RETURN NULL;
END;
$audit$$f$, audit, kind, kind, transition, kind);
    END IF;

    EXECUTE format('CREATE OR REPLACE TRIGGER %I AFTER INSERT ON %I '
                   'REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT '
                   'EXECUTE FUNCTION %I(%s)', tbl || '_audit_insert', tbl, audit, args);
    EXECUTE format('CREATE OR REPLACE TRIGGER %I AFTER UPDATE ON %I '
                   'REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT '
                   'EXECUTE FUNCTION %I(%s)', tbl || '_audit_update', tbl, audit, args);
    EXECUTE format('CREATE OR REPLACE TRIGGER %I AFTER DELETE ON %I '
                   'REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT '
                   'EXECUTE FUNCTION %I(%s)', tbl || '_audit_delete', tbl, audit, args);
END;
$govern$;

-- Facts, episodes and insights (0001), knowledge (0002, 0008).
SELECT openvibe_govern('facts', 'fact');
SELECT openvibe_govern('episodes', 'episode');
SELECT openvibe_govern('insights', 'insight');
SELECT openvibe_govern('knowledge', 'knowledge');
-- Working memory (0002): ends with its plan or session.
SELECT openvibe_govern('sessions', 'session', expires => false);
SELECT openvibe_govern('plans', 'plan', expires => false);
SELECT openvibe_govern('task_contexts', 'task_context', expires => false);

-- Proposals (0020): each transition named.
SELECT openvibe_govern('proposals', 'proposal', transition => $t$jsonb_build_object(
                   'transition', CASE
                       WHEN o.status = 'pending' AND n.status = 'approved' THEN 'approve'
                       WHEN o.status = 'pending' AND n.status = 'rejected' THEN 'reject'
                       WHEN o.status = 'pending' AND n.status = 'expired' THEN 'expire'
                       WHEN o.status = 'approved' AND n.status = 'executed' THEN 'executed'
                       WHEN o.status = 'approved' AND n.status = 'failed' THEN 'failed'
                       WHEN o.status = 'approved' AND n.status = 'approved'
                            AND o.claimed_by IS NULL AND n.claimed_by IS NOT NULL THEN 'claim'
                       ELSE 'update' END,
                   'from', o.status, 'to', n.status, 'reason', n.reason)$t$);

-- Goals (0021): a revision with its versions, a decomposition with its
-- initiatives' count; priorities and metric reports as every table.
SELECT openvibe_govern('goals', 'goal', transition => $t$CASE WHEN n.version <> o.version
                    THEN jsonb_build_object('transition', 'revise', 'from', o.version, 'to', n.version)
                    WHEN n.decomposed IS DISTINCT FROM o.decomposed
                    THEN jsonb_build_object('transition', 'decompose',
                                            'initiatives', jsonb_array_length(n.initiatives))
                    ELSE NULL END$t$);
SELECT openvibe_govern('goal_priorities', 'priorities');
SELECT openvibe_govern('metric_reports', 'metric');

-- Beliefs (0022): approve, reject, supersede, retire.
SELECT openvibe_govern('beliefs', 'belief', transition => $t$jsonb_build_object(
                   'transition', CASE
                       WHEN o.status = 'proposed' AND n.status = 'active' THEN 'approve'
                       WHEN o.status = 'proposed' AND n.status = 'rejected' THEN 'reject'
                       WHEN o.status = 'active' AND n.status = 'retired'
                            AND n.superseded_by IS NOT NULL THEN 'supersede'
                       WHEN o.status = 'active' AND n.status = 'retired' THEN 'retire'
                       ELSE 'update' END,
                   'from', o.status, 'to', n.status, 'reason', n.reason,
                   'superseded_by', n.superseded_by)$t$);

-- Spaces (0023): a member change as the store named it in
-- `openvibe.space_change` (a head bump alone is a post, audited by its
-- messages); messages as every table.
SELECT openvibe_govern('spaces', 'space', transition => $t$CASE
                   WHEN n.member_keys IS DISTINCT FROM o.member_keys
                        OR n.members IS DISTINCT FROM o.members
                   THEN nullif(current_setting('openvibe.space_change', true), '')::jsonb END$t$);
SELECT openvibe_govern('space_messages', 'message');
