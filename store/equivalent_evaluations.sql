-- The evaluations of the registered frame `candidate_scores` (one row per score: pos, run, step,
-- source_format, task, num_fewshot, metric, filter, value) that are already held, under the equivalence
-- key of ood_store._ingest.equivalence: every one of their scores is held, at the same checkpoint (run,
-- step), under the same task, metric and filter, with shots equal or unknown on either side, with the
-- same value (NaN, stored as NULL, equal to NULL), by an evaluation from another source format: one in
-- the store, or one of the frame with a smaller pos.
-- Returns each such pos with the store's evaluations and the frame's positions that hold its scores.
WITH checkpoints AS (
    SELECT DISTINCT run, step FROM candidate_scores
),
held AS (
    SELECT e.evaluation_id, -1 AS pos, e.run, e.step, e.source_format,
           s.task, s.num_fewshot, s.metric, s.filter, s.value
    FROM evaluation_scores s
    JOIN evaluations e USING (evaluation_id)
    JOIN checkpoints c ON e.run = c.run AND e.step IS NOT DISTINCT FROM c.step
    UNION ALL
    SELECT NULL, pos, run, step, source_format, task, num_fewshot, metric, filter, value
    FROM candidate_scores
),
matches AS (
    SELECT b.pos, b.task, b.metric, b.filter, h.evaluation_id, h.pos AS held_pos
    FROM candidate_scores b
    JOIN held h
      ON h.run = b.run AND h.step IS NOT DISTINCT FROM b.step AND h.source_format <> b.source_format
     AND h.pos < b.pos
     AND h.task = b.task AND h.metric = b.metric AND h.filter = b.filter
     AND (h.num_fewshot IS NOT DISTINCT FROM b.num_fewshot OR h.num_fewshot IS NULL OR b.num_fewshot IS NULL)
     AND h.value IS NOT DISTINCT FROM b.value
),
per_score AS (
    SELECT b.pos, b.task, b.metric, b.filter,
           count(m.held_pos) AS matched,
           coalesce(list(DISTINCT m.evaluation_id) FILTER (WHERE m.evaluation_id IS NOT NULL), []) AS evaluation_ids,
           coalesce(list(DISTINCT m.held_pos) FILTER (WHERE m.held_pos >= 0), []) AS positions
    FROM candidate_scores b
    LEFT JOIN matches m USING (pos, task, metric, filter)
    GROUP BY b.pos, b.task, b.metric, b.filter
)
SELECT pos,
       list_sort(list_distinct(flatten(list(evaluation_ids)))) AS evaluation_ids,
       list_sort(list_distinct(flatten(list(positions)))) AS positions
FROM per_score
GROUP BY pos
HAVING bool_and(matched > 0)
ORDER BY pos
