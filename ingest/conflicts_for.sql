-- Keys where evaluations disagree, limited to those touching the evaluations just ingested.
-- `chosen` is the evaluation that the `scores` view shows for the key.
SELECT
    c.run, c.step, c.task, c.num_fewshot, c.metric, c.filter,
    c.evaluation_ids, c.value_list, c.source_paths,
    s.evaluation_id AS chosen
FROM score_conflicts c
JOIN scores s
  ON s.run = c.run AND s.step IS NOT DISTINCT FROM c.step AND s.task = c.task
 AND s.num_fewshot IS NOT DISTINCT FROM c.num_fewshot AND s.metric = c.metric AND s.filter = c.filter
WHERE list_has_any(c.evaluation_ids, $new_ids::INTEGER[])
ORDER BY c.run, c.step, c.task, c.metric, c.filter;
