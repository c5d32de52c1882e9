-- Loop processes hear of pushes (issue 59): each statement that inserts
-- inbox events notifies channel `openvibe_inbox` (delivered when it
-- commits; no payload, so nothing of a tenant's events leaves the table):
-- an idle loop process that LISTENs leases at once instead of polling.
CREATE OR REPLACE FUNCTION openvibe_inbox_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('openvibe_inbox', '');
    RETURN NULL;
END;
$$;

DROP TRIGGER IF EXISTS inbox_events_notify ON inbox_events;
CREATE TRIGGER inbox_events_notify
    AFTER INSERT ON inbox_events
    FOR EACH STATEMENT EXECUTE FUNCTION openvibe_inbox_notify();
