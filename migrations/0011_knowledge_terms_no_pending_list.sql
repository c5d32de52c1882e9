-- Full-text candidates without a pending list (issue 16). With GIN's
-- default `fastupdate`, new rows' terms wait in an unsorted pending list
-- that every search scans in full until VACUUM merges it: after a burst of
-- knowledge writes a hybrid query's full-text side took twice as long
-- (docs/decisions.md). Inserting a dozen terms into the index directly is
-- cheap; a search then never pays for recent writes.
ALTER INDEX knowledge_terms SET (fastupdate = off);
