-- The (metric, filter) pairs with scores, of one run ($run) or one task ($task) when given, the most used first.
SELECT s.metric, s.filter, count(DISTINCT s.task) AS tasks, count(*) AS scores
FROM evaluation_scores s
JOIN evaluations e USING (evaluation_id)
WHERE ($run IS NULL OR e.run = $run)
  AND ($task IS NULL OR s.task = $task)
GROUP BY s.metric, s.filter
ORDER BY scores DESC, s.metric, s.filter
