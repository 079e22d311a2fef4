-- Keys where evaluations disagree, limited to the keys of the evaluations just ingested ($new_ids).
-- `chosen` is the evaluation that the `scores` view shows for the key (newest date, then ingested last).
-- A NaN (stored as NULL) differs from every number, as in the `score_conflicts` view.
WITH touched AS (
    SELECT DISTINCT run, step, task, num_fewshot, metric, filter
    FROM scores_all
    WHERE list_contains($new_ids::INTEGER[], evaluation_id)
)
SELECT
    s.run, s.step, s.task, s.num_fewshot, s.metric, s.filter,
    list(s.evaluation_id ORDER BY s.evaluation_id) AS evaluation_ids,
    list(s.value ORDER BY s.evaluation_id) AS value_list,
    list(s.source_path ORDER BY s.evaluation_id) AS source_paths,
    list(s.campaign ORDER BY s.evaluation_id) AS campaigns,
    first(s.evaluation_id ORDER BY s.date DESC NULLS LAST, s.evaluation_id DESC) AS chosen
FROM scores_all s
JOIN touched t
  ON s.run = t.run AND s.step IS NOT DISTINCT FROM t.step AND s.task = t.task
 AND s.num_fewshot IS NOT DISTINCT FROM t.num_fewshot AND s.metric = t.metric AND s.filter = t.filter
GROUP BY s.run, s.step, s.task, s.num_fewshot, s.metric, s.filter
HAVING count(DISTINCT s.value) + max(CASE WHEN s.value IS NULL THEN 1 ELSE 0 END) > 1
ORDER BY s.run, s.step, s.task, s.metric, s.filter
