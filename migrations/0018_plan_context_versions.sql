-- Optimistic locking of plan contexts (issue 37, seed 002): each save moves
-- a context to the next version, and a save that expects a version that is
-- no longer there is refused (a conflict) and writes nothing.
ALTER TABLE plan_contexts ADD COLUMN IF NOT EXISTS version bigint NOT NULL DEFAULT 1;
