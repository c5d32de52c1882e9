-- The durable event inbox (issue 59): events for the roles' cognitive
-- loops, kept until a loop process has worked them. Governed like every
-- kept kind (tenant, namespace, project, owner, classification on the
-- event's domain, expiry), with the lease's columns. A lease is one
-- `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED)`
-- (crates/openvibe-postgres/src/inbox.rs); the audit trigger names each
-- transition.
CREATE TABLE IF NOT EXISTS inbox_events (
    tenant_id      text NOT NULL,
    id             text NOT NULL,
    namespace      text NOT NULL DEFAULT '',
    project_id     text,
    owner          text NOT NULL,
    classification text NOT NULL DEFAULT 'internal'
        CONSTRAINT inbox_events_classification_check
        CHECK (classification IN ('public', 'internal', 'confidential', 'restricted')),
    source         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz,
    role_id        text NOT NULL,
    domain         text NOT NULL DEFAULT '',
    event          jsonb NOT NULL,
    origin         text NOT NULL DEFAULT 'code',
    status         text NOT NULL DEFAULT 'pending' CONSTRAINT inbox_events_status_check
        CHECK (status IN ('pending', 'leased', 'done', 'failed')),
    holder         text,
    lease_until    timestamptz,
    attempts       integer NOT NULL DEFAULT 0,
    finished_at    timestamptz,
    note           text,
    PRIMARY KEY (tenant_id, id)
);
-- Lists are newest first; a lease takes a role's oldest free events.
CREATE INDEX IF NOT EXISTS inbox_events_order ON inbox_events (tenant_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS inbox_events_free
    ON inbox_events (tenant_id, role_id, created_at, id) WHERE status IN ('pending', 'leased');

SELECT openvibe_govern('inbox_events', 'inbox_event', transition => $t$jsonb_build_object(
                   'transition', CASE
                       WHEN o.status = 'pending' AND n.status = 'leased' THEN 'lease'
                       WHEN o.status = 'leased' AND n.status = 'leased'
                            AND o.holder IS NOT DISTINCT FROM n.holder
                            AND n.attempts > o.attempts THEN 'lease'
                       WHEN o.status = 'leased' AND n.status = 'leased'
                            AND o.holder IS NOT DISTINCT FROM n.holder THEN 'renew'
                       WHEN o.status = 'leased' AND n.status = 'leased' THEN 'take_over'
                       WHEN o.status = 'leased' AND n.status = 'done' THEN 'done'
                       WHEN o.status = 'leased' AND n.status = 'failed' THEN 'failed'
                       ELSE 'update' END,
                   'from', o.status, 'to', n.status, 'holder', n.holder,
                   'attempts', n.attempts)$t$);
