-- Tasks x runs: how many checkpoints (distinct steps; a checkpoint without a step counts once) of each run
-- hold a score of each task, of any metric.
SELECT s.task, e.run, count(DISTINCT coalesce(e.step, -1)) AS checkpoints
FROM evaluation_scores s
JOIN evaluations e USING (evaluation_id)
GROUP BY s.task, e.run
ORDER BY s.task, e.run
