-- The per-item outcomes behind one analysis' series: one row per (run, task, step, document) of one metric
-- and filter, from the samples of the evaluations series.sql reads (the `scores` view's newest evaluation of
-- each key, or with $campaign that campaign's), run and task as their positions in $runs and $tasks, the
-- document's hash hashed to a number, `value` its metric (NULL where its sample has none); sorted so that each
-- (run, task) is a block of steps, each step a block of documents.
WITH chosen AS (
    SELECT run, step, task, evaluation_id
    FROM ood_series_scores($campaign, $metric, $filter, $num_fewshot, $tasks, $runs)
)
SELECT
    list_position($runs, c.run) - 1 AS run_index,
    list_position($tasks, c.task) - 1 AS task_index,
    c.step,
    s.doc_id AS item,
    hash(s.doc_hash) AS doc,
    CAST(s.metrics[$metric] AS DOUBLE) AS value
FROM chosen AS c
JOIN samples AS s ON s.evaluation_id = c.evaluation_id AND s.task = c.task
WHERE s.filter = $filter
ORDER BY run_index, task_index, c.step, item;
