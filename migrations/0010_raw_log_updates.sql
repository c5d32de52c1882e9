-- The raw log stays append-only by a trigger, not by revoking UPDATE:
-- the expiry cleanup picks its batch with `SELECT … FOR UPDATE SKIP LOCKED`,
-- which needs the UPDATE privilege (0009 revoked it). Row locks fire no
-- update trigger; an actual UPDATE is refused.
GRANT UPDATE ON raw_calls TO CURRENT_USER;

CREATE OR REPLACE FUNCTION openvibe_raw_calls_are_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the raw log is append-only: UPDATE refused'
        USING ERRCODE = '42501';
END;
$$;
CREATE OR REPLACE TRIGGER raw_calls_no_update BEFORE UPDATE ON raw_calls
    FOR EACH ROW EXECUTE FUNCTION openvibe_raw_calls_are_append_only();
