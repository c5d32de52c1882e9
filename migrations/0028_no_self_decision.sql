-- No one decides what they proposed or own, privileged or not (issue 65),
-- held by the database too, so that a client connected as the application
-- role cannot record a verdict the stores would refuse. A verdict is an
-- open record's status changing to one of the verdict statuses (a pending
-- proposal approved or rejected, a proposed belief made active or
-- rejected). It is refused when the row's owner is the transaction's
-- principal (`openvibe.principal`, set by the stores: tx.rs) or the decider
-- the row records; and where a principal is set, the decider recorded is
-- that principal. The refusal's SQLSTATE `OV403` reads as the store error
-- `Unauthorized` (crates/openvibe-postgres/src/error.rs).
CREATE OR REPLACE FUNCTION openvibe_no_self_decision() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    who constant text := nullif(current_setting('openvibe.principal', true), '');
    open_status constant text := TG_ARGV[0];
    verdicts constant text[] := TG_ARGV[1]::text[];
BEGIN
    IF OLD.status = open_status AND NEW.status <> OLD.status
       AND NEW.status = ANY (verdicts) THEN
        IF OLD.owner = who OR OLD.owner = NEW.decided_by THEN
            RAISE EXCEPTION 'no one approves a proposal of their own'
                USING ERRCODE = 'OV403',
                      DETAIL = coalesce(who, NEW.decided_by),
                      HINT = format('decide %s %s', TG_ARGV[2], OLD.id);
        END IF;
        IF who IS NOT NULL AND NEW.decided_by IS DISTINCT FROM who THEN
            RAISE EXCEPTION 'a verdict records its decider as the principal who gives it'
                USING ERRCODE = 'OV403',
                      DETAIL = who,
                      HINT = format('decide %s %s', TG_ARGV[2], OLD.id);
        END IF;
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER proposals_no_self_decision BEFORE UPDATE OF status ON proposals
    FOR EACH ROW EXECUTE FUNCTION openvibe_no_self_decision('pending', '{approved,rejected}', 'proposal');
CREATE OR REPLACE TRIGGER beliefs_no_self_decision BEFORE UPDATE OF status ON beliefs
    FOR EACH ROW EXECUTE FUNCTION openvibe_no_self_decision('proposed', '{active,rejected}', 'belief');
