-- Spaces (issue 41): shared environments of roles and people. A space is
-- governed like every record table (tenant, namespace, project, owner,
-- classification on its domain, expiry: the same row-level security); its
-- members live in the row (`members`, with `member_keys` for the index).
-- Messages form an append-only log per space: `seq` comes from the space's
-- `head`, bumped under the space row's lock, so a space has one total order
-- whoever posts. A trigger sends `NOTIFY openvibe_spaces` with the new head
-- when messages are inserted: readers in any process wake on it (the log
-- is the truth, the notification only a wake-up).
CREATE TABLE IF NOT EXISTS spaces (
    tenant_id      text NOT NULL,
    id             text NOT NULL,
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT spaces_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz,
    title          text NOT NULL,
    domain         text NOT NULL DEFAULT '',
    members        jsonb NOT NULL DEFAULT '[]',
    member_keys    text[] NOT NULL DEFAULT '{}',
    head           bigint NOT NULL DEFAULT 0 CONSTRAINT spaces_head_check CHECK (head >= 0),
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX IF NOT EXISTS spaces_order ON spaces (tenant_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS spaces_members ON spaces USING gin (member_keys);

-- A message id is unique in its tenant; (space, seq) is its place.
CREATE TABLE IF NOT EXISTS space_messages (
    tenant_id      text NOT NULL,
    id             text NOT NULL,
    space_id       text NOT NULL,
    seq            bigint NOT NULL CONSTRAINT space_messages_seq_check CHECK (seq > 0),
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT space_messages_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz,
    thread         text,
    domain         text,
    recipients     text[] NOT NULL DEFAULT '{}',
    escalated      boolean NOT NULL DEFAULT false,
    body           jsonb NOT NULL,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT space_messages_place UNIQUE (tenant_id, space_id, seq),
    CONSTRAINT space_messages_space FOREIGN KEY (tenant_id, space_id)
        REFERENCES spaces (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS space_messages_thread
    ON space_messages (tenant_id, space_id, thread, seq) WHERE thread IS NOT NULL;

-- Each member's cursor: the last seq it acknowledged. Confined to the
-- tenant; the store reads and moves only the caller's own, in a space it
-- may read.
CREATE TABLE IF NOT EXISTS space_cursors (
    tenant_id      text NOT NULL,
    space_id       text NOT NULL,
    member         text NOT NULL,
    seq            bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, space_id, member),
    CONSTRAINT space_cursors_space FOREIGN KEY (tenant_id, space_id)
        REFERENCES spaces (tenant_id, id) ON DELETE CASCADE
);

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['spaces', 'space_messages'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('DROP POLICY IF EXISTS tenant_isolation ON %I', t);
        EXECUTE format($p$CREATE POLICY tenant_isolation ON %I
            USING (tenant_id = current_setting('openvibe.tenant_id', true) AND (
                (SELECT coalesce(current_setting('openvibe.namespaces', true), '') = '')
                OR (namespace = ANY ((SELECT current_setting('openvibe.namespaces', true))::text[])
                    AND (project_id IS NULL
                         OR project_id = (SELECT nullif(current_setting('openvibe.project_id', true), ''))))))
            WITH CHECK (tenant_id = current_setting('openvibe.tenant_id', true) AND (
                (SELECT coalesce(current_setting('openvibe.namespaces', true), '') = '')
                OR (namespace = ANY ((SELECT current_setting('openvibe.namespaces', true))::text[])
                    AND (project_id IS NULL
                         OR project_id = (SELECT nullif(current_setting('openvibe.project_id', true), ''))))))$p$, t);
        EXECUTE format('DROP POLICY IF EXISTS unexpired ON %I', t);
        EXECUTE format($p$CREATE POLICY unexpired ON %I AS RESTRICTIVE FOR SELECT
            USING (expires_at IS NULL OR expires_at > now()
                   OR (SELECT coalesce(current_setting('openvibe.include_expired', true), '') = 'on'))$p$, t);
        EXECUTE format('DROP POLICY IF EXISTS owner_deletes ON %I', t);
        EXECUTE format($p$CREATE POLICY owner_deletes ON %I AS RESTRICTIVE FOR DELETE
            USING ((SELECT coalesce(current_setting('openvibe.namespaces', true), '') = '')
                   OR owner = (SELECT current_setting('openvibe.principal', true))
                   OR '*' = ANY ((SELECT current_setting('openvibe.delete_any', true))::text[])
                   OR namespace = ANY ((SELECT current_setting('openvibe.delete_any', true))::text[])
                   OR expires_at <= now())$p$, t);
    END LOOP;
END;
$$;

ALTER TABLE space_cursors ENABLE ROW LEVEL SECURITY;
ALTER TABLE space_cursors FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON space_cursors;
CREATE POLICY tenant_isolation ON space_cursors
    USING (tenant_id = current_setting('openvibe.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('openvibe.tenant_id', true));

-- The audit trail: messages as every table's; spaces with the member change
-- each update made (the store names it in `openvibe.space_change`). A head
-- bump alone (a post) leaves `updated_at` and is not audited twice: the
-- messages' own entries record it.
CREATE OR REPLACE TRIGGER space_messages_audit_insert AFTER INSERT ON space_messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_rows('message');
CREATE OR REPLACE TRIGGER space_messages_audit_update AFTER UPDATE ON space_messages
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_rows('message');
CREATE OR REPLACE TRIGGER space_messages_audit_delete AFTER DELETE ON space_messages
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_rows('message');

CREATE OR REPLACE FUNCTION openvibe_audit_spaces() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    who text := coalesce(nullif(current_setting('openvibe.principal', true), ''),
                         'db:' || session_user);
    via text := nullif(current_setting('openvibe.tool', true), '');
    change jsonb := nullif(current_setting('openvibe.space_change', true), '')::jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool)
        SELECT n.tenant_id, who, 'insert', 'space', n.namespace, n.project_id, n.id,
               nullif(n.source, ''), via
        FROM new_rows n;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool, filters)
        SELECT n.tenant_id, who, 'update', 'space', n.namespace, n.project_id, n.id,
               nullif(n.source, ''), via,
               CASE WHEN n.member_keys IS DISTINCT FROM o.member_keys
                         OR n.members IS DISTINCT FROM o.members THEN change END
        FROM new_rows n JOIN old_rows o ON o.tenant_id = n.tenant_id AND o.id = n.id
        WHERE n.updated_at IS DISTINCT FROM o.updated_at;
    ELSE
        INSERT INTO audit_log (tenant_id, principal, operation, record_kind, namespace,
                               project_id, record_id, source, tool)
        SELECT o.tenant_id, who, 'delete', 'space', o.namespace, o.project_id, o.id,
               nullif(o.source, ''), via
        FROM old_rows o;
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER spaces_audit_insert AFTER INSERT ON spaces
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_spaces();
CREATE OR REPLACE TRIGGER spaces_audit_update AFTER UPDATE ON spaces
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_spaces();
CREATE OR REPLACE TRIGGER spaces_audit_delete AFTER DELETE ON spaces
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_spaces();

-- The wake-up: one notification per space a statement appended to, with
-- its tenant, id and new head (delivered when the transaction commits).
CREATE OR REPLACE FUNCTION openvibe_notify_space_messages() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('openvibe_spaces', json_build_array(n.tenant_id, n.space_id, max(n.seq))::text)
    FROM new_rows n GROUP BY n.tenant_id, n.space_id;
    RETURN NULL;
END;
$$;
CREATE OR REPLACE TRIGGER space_messages_notify AFTER INSERT ON space_messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_notify_space_messages();
