-- One run's training curves: every task's score at every step, of one metric and filter, with its standard
-- error and the campaign of the evaluation the `scores` view chose for it.
SELECT task, step, num_fewshot, value, stderr, campaign
FROM scores
WHERE run = $run
  AND metric = $metric
  AND filter = $filter
  AND step IS NOT NULL
ORDER BY task, num_fewshot NULLS FIRST, step
