-- Facts get seed 003's metadata (issue 37): a JSON object of free provenance
-- (`agent`, `tool_name`, `notes`, ...), written and read with the fact, not
-- searched. A constant default: no table rewrite.
ALTER TABLE facts ADD COLUMN IF NOT EXISTS metadata jsonb NOT NULL DEFAULT '{}'::jsonb;
