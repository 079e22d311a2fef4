-- The score series behind one analysis: one row per (run, step, task) of one metric and filter
-- (series_macros.sql: the `scores` view's, or with $campaign that campaign's; $tasks / $runs / $num_fewshot
-- narrow it down when not NULL).
SELECT run, step, task, num_fewshot, value
FROM ood_series_scores($campaign, $metric, $filter, $num_fewshot, $tasks, $runs)
ORDER BY run, step, task;
