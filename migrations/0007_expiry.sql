-- Expiry (issue 13): facts, episodes, insights and knowledge get an
-- optional `expires_at`. From that instant a record is invisible: a
-- RESTRICTIVE policy for SELECT (which UPDATE and DELETE also apply to the
-- rows they read) hides it from every statement, unless the transaction
-- sets `openvibe.include_expired` to `on` (what the cleanup, and a store
-- replacing an expired record, do for one statement).
--
-- Deleting an expired record is allowed to anyone who can reach its row
-- (tenant and namespace policies still apply): it is dead. Which expired
-- records a cleanup deletes is the store's decision (`cleanup_scope`).
DO $$
DECLARE
    t text;
    visible text := '(expires_at IS NULL OR expires_at > now() '
        || 'OR (SELECT coalesce(current_setting(''openvibe.include_expired'', true), '''') = ''on''))';
    deletable text := '((SELECT coalesce(current_setting(''openvibe.namespaces'', true), '''') = '''') '
        || 'OR owner = (SELECT current_setting(''openvibe.principal'', true)) '
        || 'OR ''*'' = ANY ((SELECT current_setting(''openvibe.delete_any'', true))::text[]) '
        || 'OR namespace = ANY ((SELECT current_setting(''openvibe.delete_any'', true))::text[]) '
        || 'OR expires_at <= now())';
BEGIN
    FOREACH t IN ARRAY ARRAY['facts', 'episodes', 'insights', 'knowledge'] LOOP
        EXECUTE format('ALTER TABLE %I ADD COLUMN IF NOT EXISTS expires_at timestamptz', t);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I (tenant_id, expires_at) '
                       'WHERE expires_at IS NOT NULL', t || '_expires_at', t);
        EXECUTE format('DROP POLICY IF EXISTS unexpired ON %I', t);
        EXECUTE format('CREATE POLICY unexpired ON %I AS RESTRICTIVE FOR SELECT USING %s',
                       t, visible);
        EXECUTE format('DROP POLICY IF EXISTS owner_deletes ON %I', t);
        EXECUTE format('CREATE POLICY owner_deletes ON %I AS RESTRICTIVE FOR DELETE USING %s',
                       t, deletable);
    END LOOP;
END;
$$;
