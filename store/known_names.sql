-- The names a scores selection may use: every run, task, metric, filter and campaign the store holds.
SELECT 'runs' AS kind, run AS name FROM runs
UNION ALL SELECT DISTINCT 'tasks', task FROM evaluation_scores
UNION ALL SELECT DISTINCT 'metric', metric FROM evaluation_scores
UNION ALL SELECT DISTINCT 'filter', filter FROM evaluation_scores
UNION ALL SELECT DISTINCT 'campaign', campaign FROM evaluations WHERE campaign IS NOT NULL;
