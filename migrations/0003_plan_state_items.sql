-- openvibe: appends to plan state without contention.
--
-- `append_state` inserts one row here instead of rewriting the key's JSON
-- array in `plan_state`: concurrent workers appending to one plan's action
-- history never wait for each other's row lock (and commit together), and
-- an append costs the same whatever the history's length. The logical
-- value of a key is `plan_state.value` (an array, or `[]` when the key has
-- no row) followed by its items in `seq` order; its version is the row's
-- version plus the number of items.
CREATE TABLE IF NOT EXISTS plan_state_items (
    tenant_id  text NOT NULL,
    plan_id    text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    seq        bigint GENERATED ALWAYS AS IDENTITY,
    item       jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, plan_id, key, seq),
    CONSTRAINT plan_state_items_plan_fk FOREIGN KEY (tenant_id, plan_id)
        REFERENCES plans (tenant_id, id) ON DELETE CASCADE
);

ALTER TABLE plan_state_items ENABLE ROW LEVEL SECURITY;
ALTER TABLE plan_state_items FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON plan_state_items;
CREATE POLICY tenant_isolation ON plan_state_items
    USING (tenant_id = current_setting('openvibe.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('openvibe.tenant_id', true));

-- The version of a key counts its row's changes and its items, so it may
-- now start at 0 for a key whose row was created by a set after appends.
ALTER TABLE plan_state DROP CONSTRAINT IF EXISTS plan_state_version_check;
ALTER TABLE plan_state ADD CONSTRAINT plan_state_version_check CHECK (version >= 0);
