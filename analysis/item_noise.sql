-- What item noise each score of a pilot's series carries: one row per (run, step, task) of one metric and
-- filter (the rows series.sql reads), with what the store knows of the items behind it: lm-eval's stderr, the
-- number of documents, and, where the per-sample rows were ingested, their count and the population variance of
-- the per-item metric (the variance of the mean over items resampled with replacement is that over the count).
WITH chosen AS (
    SELECT run, step, task, value, stderr, n_samples, evaluation_id
    FROM ood_series_scores($campaign, $metric, $filter, $num_fewshot, $tasks, $runs)
),
items AS (
    SELECT evaluation_id, task, count(*) AS items, var_pop(CAST(metrics[$metric] AS DOUBLE)) AS item_variance
    FROM samples
    WHERE filter = $filter
      AND metrics[$metric] IS NOT NULL
      AND evaluation_id IN (SELECT evaluation_id FROM chosen)
    GROUP BY evaluation_id, task
)
SELECT c.run, c.step, c.task, c.value, c.stderr, c.n_samples, i.items, i.item_variance
FROM chosen AS c
LEFT JOIN items AS i USING (evaluation_id, task)
ORDER BY c.run, c.step, c.task;
