-- Keys where evaluations disagree, among the checkpoints of the evaluations just ingested ($new_ids):
-- only a checkpoint held by more than one evaluation at the same shot count (an evaluation of
-- several shot counts, num_fewshot NULL, may share any) can disagree, so only their scores are
-- grouped, first by key alone, then with the details of the keys that disagree.
-- `chosen` is the evaluation that the `scores` view shows for the key (newest date, then ingested last).
-- A NaN (stored as NULL) differs from every number, as in the `score_conflicts` view.
WITH new AS (
    SELECT unnest($new_ids::INTEGER[]) AS evaluation_id
),
checkpoints AS (
    SELECT e.run, e.step, e.num_fewshot, count(*) AS evaluations, count(n.evaluation_id) AS new
    FROM evaluations e
    LEFT JOIN new n USING (evaluation_id)
    GROUP BY e.run, e.step, e.num_fewshot
),
shared AS (
    SELECT a.run, a.step, a.num_fewshot
    FROM checkpoints a
    JOIN checkpoints b
      ON a.run = b.run AND a.step IS NOT DISTINCT FROM b.step
     AND (a.num_fewshot IS NOT DISTINCT FROM b.num_fewshot OR a.num_fewshot IS NULL OR b.num_fewshot IS NULL)
    GROUP BY a.run, a.step, a.num_fewshot
    HAVING sum(b.evaluations) > 1 AND sum(b.new) + max(a.new) > 0
),
candidates AS (
    SELECT e.evaluation_id, e.run, e.step
    FROM evaluations e
    JOIN shared s
      ON e.run = s.run AND e.step IS NOT DISTINCT FROM s.step AND e.num_fewshot IS NOT DISTINCT FROM s.num_fewshot
),
conflicting AS (
    SELECT c.run, c.step, v.task, v.num_fewshot, v.metric, v.filter
    FROM evaluation_scores v
    JOIN candidates c USING (evaluation_id)
    GROUP BY c.run, c.step, v.task, v.num_fewshot, v.metric, v.filter
    HAVING count(DISTINCT v.value) + max(CASE WHEN v.value IS NULL THEN 1 ELSE 0 END) > 1
)
SELECT
    s.run, s.step, s.task, s.num_fewshot, s.metric, s.filter,
    list(s.evaluation_id ORDER BY s.evaluation_id) AS evaluation_ids,
    list(s.value ORDER BY s.evaluation_id) AS value_list,
    list(s.source_path ORDER BY s.evaluation_id) AS source_paths,
    list(s.campaign ORDER BY s.evaluation_id) AS campaigns,
    arg_max(s.evaluation_id, (coalesce(s.date, TIMESTAMP '-infinity'), s.evaluation_id)) AS chosen
FROM scores_all s
SEMI JOIN candidates USING (evaluation_id)
JOIN conflicting c
  ON s.run = c.run AND s.step IS NOT DISTINCT FROM c.step AND s.task = c.task
 AND s.num_fewshot IS NOT DISTINCT FROM c.num_fewshot AND s.metric = c.metric AND s.filter = c.filter
GROUP BY s.run, s.step, s.task, s.num_fewshot, s.metric, s.filter
ORDER BY s.run, s.step, s.task, s.metric, s.filter
