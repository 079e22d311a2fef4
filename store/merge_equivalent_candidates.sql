-- The scores of the incoming evaluations $ids whose checkpoint the store holds evaluations of from another
-- source format: the only ones the store may already hold in that other format
-- (ood_store._ingest.equivalence), in its frame's columns (pos is the incoming evaluation's id).
SELECT i.evaluation_id AS pos, i.run, i.step, i.source_format, s.task, s.num_fewshot, s.metric, s.filter, s.value
FROM ood_store_incoming.evaluations i
JOIN ood_store_incoming.evaluation_scores s USING (evaluation_id)
WHERE list_contains($ids, i.evaluation_id)
  AND EXISTS (
      SELECT 1 FROM evaluations e
      WHERE e.run = i.run AND e.step IS NOT DISTINCT FROM i.step AND e.source_format <> i.source_format
  )
ORDER BY pos
