-- The loop's journal in the inbox (issue 59): an event's path through the
-- loop, saved by its holder with a renewal or the finish, so a process
-- that takes the event over resumes it at its first unfinished stage.
ALTER TABLE inbox_events ADD COLUMN IF NOT EXISTS trace jsonb;
