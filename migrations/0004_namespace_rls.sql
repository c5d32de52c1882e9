-- Governance (issue 10): row-level security on namespace and project, in
-- addition to the tenant.
--
-- A governed caller's transaction sets, next to `openvibe.tenant_id`:
--   openvibe.namespaces  the namespaces it may read, as a text[] literal
--   openvibe.project_id  its project ('' for none)
-- and then sees only rows of those namespaces whose project is none or its
-- own. An ungoverned caller (the embedded default) sets no namespaces and
-- keeps the tenant-only policy. The settings are read once per statement
-- (scalar subqueries become init plans), not per row.
DO $$
DECLARE
    t text;
    rule text := '(tenant_id = current_setting(''openvibe.tenant_id'', true) AND ('
        || '(SELECT coalesce(current_setting(''openvibe.namespaces'', true), '''') = '''') '
        || 'OR (namespace = ANY ((SELECT current_setting(''openvibe.namespaces'', true))::text[]) '
        || 'AND (project_id IS NULL OR project_id = '
        || '(SELECT nullif(current_setting(''openvibe.project_id'', true), ''''))))))';
BEGIN
    FOREACH t IN ARRAY ARRAY['facts', 'episodes', 'insights', 'memory_entries', 'sessions',
                             'plans', 'task_contexts', 'knowledge'] LOOP
        EXECUTE format('DROP POLICY IF EXISTS tenant_isolation ON %I', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING %s WITH CHECK %s',
                       t, rule, rule);
    END LOOP;
END;
$$;
