-- The (step, task) pairs of a run that already have scores: what evaluate skips.
-- $num_fewshot NULL matches any number of shots.
SELECT DISTINCT step, task
FROM scores_all
WHERE run = $run
  AND ($num_fewshot IS NULL OR num_fewshot = $num_fewshot);
