-- A project-scoped namespace read (seed 003: Cursor's `developer` memories of
-- one project) in result order (issue 37, item 6). A query within one
-- namespace compares it with `=` (see `access::push_namespace_scope`), so
-- this index returns the most confident first and stops at the limit
-- instead of walking the tenant's `facts_order`. The seed's
-- `(project_id, scope)` index was measured and not added: the planner
-- cannot use it for `project_id IS NULL OR project_id = $p` in result order
-- (docs/decisions.md).
CREATE INDEX IF NOT EXISTS facts_namespace_order
    ON facts (tenant_id, namespace, confidence DESC, created_at DESC, id);
