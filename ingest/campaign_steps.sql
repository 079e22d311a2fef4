-- For each run that the evaluations just ingested ($new_ids) belong to: its checkpoints by campaign,
-- and whether this ingest added evaluations to that campaign of the run.
WITH touched AS (
    SELECT DISTINCT run FROM evaluations WHERE list_contains($new_ids::INTEGER[], evaluation_id)
)
SELECT e.run, e.campaign, e.step, bool_or(list_contains($new_ids::INTEGER[], e.evaluation_id)) AS new
FROM evaluations e
JOIN touched USING (run)
GROUP BY e.run, e.campaign, e.step
ORDER BY e.run, e.campaign, e.step
