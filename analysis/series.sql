-- The score series behind one analysis: one row per (run, step, task) of one
-- metric and filter, from the `scores` view (newest evaluation of each key), or
-- with $campaign from `campaign_scores` (newest evaluation of the key in that campaign).
-- $tasks / $runs / $num_fewshot narrow it down when not NULL; checkpoints
-- without a step (a final model evaluated once) are not part of a series.
SELECT run, step, task, num_fewshot, value
FROM (
    SELECT run, step, task, num_fewshot, metric, filter, value FROM scores WHERE $campaign IS NULL
    UNION ALL
    SELECT run, step, task, num_fewshot, metric, filter, value FROM campaign_scores WHERE campaign = $campaign
)
WHERE metric = $metric
  AND filter = $filter
  AND step IS NOT NULL
  AND ($tasks IS NULL OR list_contains($tasks, task))
  AND ($runs IS NULL OR list_contains($runs, run))
  AND ($num_fewshot IS NULL OR num_fewshot = $num_fewshot)
ORDER BY run, step, task;
