-- Erasure that proves itself (issue 43): an erasure redacts the audit
-- entries that quoted its subject (their `filters` and `reason`), and the
-- chain records it: in the same transaction a redaction entry names each
-- redacted entry with the hash it still carries and the hash its redacted
-- form computes to, so that `openvibe audit verify` passes and shows where
-- redaction happened.
--
-- The trail stays append-only otherwise: the one update the guard lets
-- through replaces a non-null `filters` with {"redacted": true} and a
-- non-null `reason` with 'redacted', every other column unchanged. An
-- update no redaction entry names is still a break `verify` reports.

CREATE OR REPLACE FUNCTION openvibe_audit_is_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE'
       AND NEW.filters IS NOT DISTINCT FROM
           (CASE WHEN OLD.filters IS NULL THEN NULL ELSE '{"redacted": true}'::jsonb END)
       AND NEW.reason IS NOT DISTINCT FROM
           (CASE WHEN OLD.reason IS NULL THEN NULL ELSE 'redacted' END)
       AND to_jsonb(NEW) - '{filters,reason}'::text[] = to_jsonb(OLD) - '{filters,reason}'::text[]
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only: % refused', TG_OP
        USING ERRCODE = '42501';
END;
$$;

GRANT UPDATE (filters, reason) ON audit_log TO CURRENT_USER;
DROP POLICY IF EXISTS audit_redact ON audit_log;
CREATE POLICY audit_redact ON audit_log FOR UPDATE
    USING (tenant_id = current_setting('openvibe.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('openvibe.tenant_id', true));
