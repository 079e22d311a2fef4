-- The toy demo's scores: accuracy per checkpoint and task of one run.
SELECT step, task, round(value, 3) AS acc
FROM scores
WHERE run = $run AND metric = 'acc'
ORDER BY step, task;
