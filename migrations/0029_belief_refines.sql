-- A belief may refine an active one on the same subject (issue 64): both
-- hold once it is approved, unless the person approving chooses to
-- supersede the refined one; then `refines` moves to `supersedes` in the
-- same transaction that retires it (crates/openvibe-postgres/src/beliefs.rs).
ALTER TABLE beliefs ADD COLUMN IF NOT EXISTS refines text;
