-- Goals' audit trigger back on the kernel (issue 64): 0030 wrote the
-- `initiative` transition into a hand-written copy of the trigger function
-- `openvibe_govern` generates (0027). The same transitions, declared where
-- every other table's are: a revision with its versions, a decomposition
-- with its initiatives' count, an initiative's move with its id and status.
SELECT openvibe_govern('goals', 'goal', transition => $t$CASE WHEN n.version <> o.version
                    THEN jsonb_build_object('transition', 'revise', 'from', o.version, 'to', n.version)
                    WHEN n.decomposed IS DISTINCT FROM o.decomposed
                    THEN jsonb_build_object('transition', 'decompose',
                                            'initiatives', jsonb_array_length(n.initiatives))
                    WHEN n.initiatives IS DISTINCT FROM o.initiatives
                    THEN (SELECT jsonb_build_object('transition', 'initiative',
                                                    'initiative', ni.value ->> 'id',
                                                    'status', ni.value ->> 'status')
                          FROM jsonb_array_elements(n.initiatives) WITH ORDINALITY AS ni(value, ord)
                          LEFT JOIN jsonb_array_elements(o.initiatives) WITH ORDINALITY AS oi(value, ord)
                                 ON oi.ord = ni.ord
                          WHERE ni.value IS DISTINCT FROM oi.value
                          ORDER BY ni.ord
                          LIMIT 1)
                    ELSE NULL END$t$);
