-- Goals (issue 39): objectives people set for roles, their decomposition,
-- each role's priorities of a day, and the metric reports that move key
-- results. Governed like every record table (tenant, namespace, project,
-- owner, classification, expiry: the same row-level security). A metric is
-- a stream per (tenant, namespace, role, metric): `metric_streams` holds its
-- value and count, moved by the same statement that inserts a report (the
-- row lock of the upsert orders concurrent reports, so none is lost), and
-- each report keeps its number in the stream (`seq`) and the value after
-- it. A goal's progress reads the streams of its namespace: moving a goal's
-- metric takes the write right there.
CREATE TABLE IF NOT EXISTS goals (
    tenant_id      text NOT NULL,
    id             text NOT NULL,
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT goals_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz,
    -- Goals have no domain: clearance applies as to any record without one.
    domain         text NOT NULL DEFAULT '' CONSTRAINT goals_no_domain CHECK (domain = ''),
    role_id        text NOT NULL,
    objective      jsonb NOT NULL,
    version        integer NOT NULL,
    fingerprint    text NOT NULL,
    initiatives    jsonb NOT NULL DEFAULT '[]',
    decomposed     text,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX IF NOT EXISTS goals_role ON goals (tenant_id, role_id, id);

CREATE TABLE IF NOT EXISTS goal_priorities (
    tenant_id      text NOT NULL,
    id             text NOT NULL,
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT goal_priorities_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz,
    domain         text NOT NULL DEFAULT '' CONSTRAINT goal_priorities_no_domain CHECK (domain = ''),
    role_id        text NOT NULL,
    day            date NOT NULL,
    items          jsonb NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX IF NOT EXISTS goal_priorities_day
    ON goal_priorities (tenant_id, role_id, day DESC, updated_at DESC);

CREATE TABLE IF NOT EXISTS metric_reports (
    tenant_id      text NOT NULL,
    id             text NOT NULL,
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT metric_reports_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    -- Reports do not expire (a stream's value is the sum of its reports);
    -- the column keeps the tables' shared read rule.
    expires_at     timestamptz CONSTRAINT metric_reports_never_expire CHECK (expires_at IS NULL),
    domain         text NOT NULL DEFAULT '' CONSTRAINT metric_reports_no_domain CHECK (domain = ''),
    role_id        text NOT NULL,
    metric         text NOT NULL,
    value          double precision NOT NULL,
    mode           text NOT NULL CONSTRAINT metric_reports_mode_check CHECK (mode IN ('add', 'set')),
    episode_id     text,
    note           text NOT NULL DEFAULT '',
    seq            bigint NOT NULL,
    total          double precision NOT NULL,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT metric_reports_seq UNIQUE (tenant_id, namespace, role_id, metric, seq)
);

CREATE TABLE IF NOT EXISTS metric_streams (
    tenant_id  text NOT NULL,
    namespace  text NOT NULL,
    role_id    text NOT NULL,
    metric     text NOT NULL,
    value      double precision NOT NULL,
    is_set     boolean NOT NULL,
    reports    bigint NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, namespace, role_id, metric)
);

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['goals', 'goal_priorities', 'metric_reports'] LOOP
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

-- A stream is read through a goal of its namespace the caller may read;
-- its rows are confined to the tenant and the caller's namespaces.
ALTER TABLE metric_streams ENABLE ROW LEVEL SECURITY;
ALTER TABLE metric_streams FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON metric_streams;
CREATE POLICY tenant_isolation ON metric_streams
    USING (tenant_id = current_setting('openvibe.tenant_id', true) AND (
        (SELECT coalesce(current_setting('openvibe.namespaces', true), '') = '')
        OR namespace = ANY ((SELECT current_setting('openvibe.namespaces', true))::text[])))
    WITH CHECK (tenant_id = current_setting('openvibe.tenant_id', true) AND (
        (SELECT coalesce(current_setting('openvibe.namespaces', true), '') = '')
        OR namespace = ANY ((SELECT current_setting('openvibe.namespaces', true))::text[])));

-- Reports are never changed after they are written, except moved between
-- namespaces by maintenance.
CREATE OR REPLACE FUNCTION openvibe_metric_reports_are_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.tenant_id, NEW.id, NEW.role_id, NEW.metric, NEW.value, NEW.mode, NEW.seq, NEW.total)
       IS DISTINCT FROM
       (OLD.tenant_id, OLD.id, OLD.role_id, OLD.metric, OLD.value, OLD.mode, OLD.seq, OLD.total) THEN
        RAISE EXCEPTION 'metric reports are append-only: only their namespace may change';
    END IF;
    RETURN NEW;
END;
$$;
CREATE OR REPLACE TRIGGER metric_reports_append_only BEFORE UPDATE ON metric_reports
    FOR EACH ROW EXECUTE FUNCTION openvibe_metric_reports_are_append_only();

-- The audit trail: priorities and reports as every table's; goals with the
-- change each update made (`revise` with the versions, `decompose`).
DO $$
DECLARE
    t text[];
BEGIN
    FOREACH t SLICE 1 IN ARRAY ARRAY[
        ARRAY['goal_priorities', 'priorities'], ARRAY['metric_reports', 'metric']] LOOP
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

CREATE OR REPLACE TRIGGER goals_audit_insert AFTER INSERT ON goals
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_goals();
CREATE OR REPLACE TRIGGER goals_audit_update AFTER UPDATE ON goals
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_goals();
CREATE OR REPLACE TRIGGER goals_audit_delete AFTER DELETE ON goals
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION openvibe_audit_goals();
