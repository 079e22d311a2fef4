-- The scores as one long frame: one row per (run, step, task, num_fewshot, metric, filter) of the
-- `scores` view (the newest evaluation of each key), or of `campaign_scores` for one $campaign;
-- each argument that is not NULL narrows it ($runs and $tasks are lists).
SELECT run, step, task, num_fewshot, metric, filter, value, stderr, n_samples, campaign, evaluation_id
FROM (
    SELECT run, step, task, num_fewshot, metric, filter, value, stderr, n_samples, campaign, evaluation_id
    FROM scores
    WHERE $campaign IS NULL
    UNION ALL
    SELECT run, step, task, num_fewshot, metric, filter, value, stderr, n_samples, campaign, evaluation_id
    FROM campaign_scores
    WHERE campaign = $campaign
)
WHERE ($runs IS NULL OR list_contains($runs, run))
  AND ($tasks IS NULL OR list_contains($tasks, task))
  AND ($metric IS NULL OR metric = $metric)
  AND ($filter IS NULL OR filter = $filter)
  AND ($num_fewshot IS NULL OR num_fewshot = $num_fewshot)
ORDER BY run, step NULLS LAST, task, num_fewshot, metric, filter;
