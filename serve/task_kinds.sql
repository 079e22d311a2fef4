-- Each task's metrics (with their filter where it is not 'none') and shot counts, in any evaluation.
WITH kinds AS (
    SELECT DISTINCT task, metric, filter, num_fewshot FROM evaluation_scores
)
SELECT
    task,
    list(DISTINCT CASE WHEN filter = 'none' THEN metric ELSE metric || ' (' || filter || ')' END ORDER BY 1) AS metrics,
    list(DISTINCT num_fewshot ORDER BY num_fewshot) FILTER (num_fewshot IS NOT NULL) AS shots
FROM kinds
GROUP BY task
ORDER BY task
