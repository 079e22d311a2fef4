-- The training curves of one run: one row per (task, step) of one metric and
-- filter, with the score's standard error (NULL where the file gave none),
-- from the `scores` view (newest evaluation of each key). $num_fewshot narrows
-- it down when not NULL; checkpoints without a step are not part of a curve.
SELECT task, step, num_fewshot, value, stderr
FROM scores
WHERE run = $run
  AND metric = $metric
  AND filter = $filter
  AND step IS NOT NULL
  AND list_contains($tasks, task)
  AND ($num_fewshot IS NULL OR num_fewshot = $num_fewshot)
ORDER BY task, step;
