-- Every run's score on one task at every step, of one metric and filter, from the `scores` view.
SELECT run, step, num_fewshot, value, stderr
FROM scores
WHERE task = $task
  AND metric = $metric
  AND filter = $filter
  AND step IS NOT NULL
ORDER BY run, num_fewshot NULLS FIRST, step
