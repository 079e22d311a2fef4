-- The scores an analysis' series are made of, for the queries that read them (series.sql, items.sql,
-- slices.sql, item_noise.sql): a temporary macro, created on the store's connection before each of them.

-- One row per (run, step, task) score of metric `metric_name` under filter `filter_name`: from the `scores`
-- view (the newest evaluation of each key) when `campaign_name` is NULL, else from `campaign_scores` (the
-- newest evaluation of the key in that campaign); checkpoints without a step (a final model evaluated once)
-- are not part of a series. `shots`, `task_list` and `run_list` narrow it down when not NULL.
CREATE OR REPLACE TEMP MACRO ood_series_scores(campaign_name, metric_name, filter_name, shots, task_list, run_list)
AS TABLE
SELECT run, step, task, num_fewshot, value, stderr, n_samples, evaluation_id
FROM (
    SELECT run, step, task, num_fewshot, metric, filter, value, stderr, n_samples, evaluation_id
    FROM scores WHERE campaign_name IS NULL
    UNION ALL
    SELECT run, step, task, num_fewshot, metric, filter, value, stderr, n_samples, evaluation_id
    FROM campaign_scores WHERE campaign = campaign_name
)
WHERE metric = metric_name
  AND filter = filter_name
  AND step IS NOT NULL
  AND (shots IS NULL OR num_fewshot = shots)
  AND (task_list IS NULL OR list_contains(task_list, task))
  AND (run_list IS NULL OR list_contains(run_list, run));
