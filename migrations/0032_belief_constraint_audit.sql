-- A person may approve a belief as a constraint (issue 64: `Verdict::constraint`):
-- an action the belief bears on is then proposed, never taken alone. The
-- approval's audit record says so, beside the transition 0027 declared.
SELECT openvibe_govern('beliefs', 'belief', transition => $t$jsonb_build_object(
                   'transition', CASE
                       WHEN o.status = 'proposed' AND n.status = 'active' THEN 'approve'
                       WHEN o.status = 'proposed' AND n.status = 'rejected' THEN 'reject'
                       WHEN o.status = 'active' AND n.status = 'retired'
                            AND n.superseded_by IS NOT NULL THEN 'supersede'
                       WHEN o.status = 'active' AND n.status = 'retired' THEN 'retire'
                       ELSE 'update' END,
                   'from', o.status, 'to', n.status, 'reason', n.reason,
                   'superseded_by', n.superseded_by, 'constraint', n.is_constraint)$t$);
