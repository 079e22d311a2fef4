-- The runs whose checkpoints come from more than one evaluation campaign, with each campaign's checkpoints:
-- their series mix campaigns unless an analysis picks one (`campaign`).
SELECT run, campaign, count(DISTINCT step) AS checkpoints
FROM evaluations
WHERE step IS NOT NULL
  AND run IN (
    SELECT run FROM evaluations WHERE step IS NOT NULL
    GROUP BY run HAVING count(DISTINCT campaign) + max(CASE WHEN campaign IS NULL THEN 1 ELSE 0 END) > 1
  )
GROUP BY run, campaign
ORDER BY run, campaign NULLS FIRST
