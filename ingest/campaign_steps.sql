-- For each run that the evaluations just ingested ($new_ids) belong to: its checkpoints by campaign,
-- and whether this ingest added evaluations to that campaign of the run.
WITH new AS (
    SELECT unnest($new_ids::INTEGER[]) AS evaluation_id
),
touched AS (
    SELECT DISTINCT e.run FROM evaluations e JOIN new USING (evaluation_id)
)
SELECT e.run, e.campaign, e.step, count(n.evaluation_id) > 0 AS new
FROM evaluations e
JOIN touched USING (run)
LEFT JOIN new n ON n.evaluation_id = e.evaluation_id
GROUP BY e.run, e.campaign, e.step
ORDER BY e.run, e.campaign, e.step
