-- Governance (issue 10): row-level security on the owner for deletes.
--
-- A governed caller's transaction also sets `openvibe.delete_any`: the
-- namespaces where it may delete records owned by others (its `manage`
-- right there; `{*}` when privileged). A DELETE then reaches only its own
-- records or records of those namespaces. Ungoverned transactions are
-- unaffected. Updates are not restricted here: readers update access
-- statistics of records they do not own; the stores' predicates check
-- ownership of every other update.
DO $$
DECLARE
    t text;
    rule text := '((SELECT coalesce(current_setting(''openvibe.namespaces'', true), '''') = '''') '
        || 'OR owner = (SELECT current_setting(''openvibe.principal'', true)) '
        || 'OR ''*'' = ANY ((SELECT current_setting(''openvibe.delete_any'', true))::text[]) '
        || 'OR namespace = ANY ((SELECT current_setting(''openvibe.delete_any'', true))::text[]))';
BEGIN
    FOREACH t IN ARRAY ARRAY['facts', 'episodes', 'insights', 'memory_entries', 'sessions',
                             'plans', 'task_contexts', 'knowledge'] LOOP
        EXECUTE format('DROP POLICY IF EXISTS owner_deletes ON %I', t);
        EXECUTE format('CREATE POLICY owner_deletes ON %I AS RESTRICTIVE FOR DELETE USING %s',
                       t, rule);
    END LOOP;
END;
$$;
