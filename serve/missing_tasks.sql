-- The runs that lack tasks other runs have (holes in the tasks x runs table), with the tasks they lack.
WITH present AS (
    SELECT DISTINCT e.run, s.task FROM evaluation_scores s JOIN evaluations e USING (evaluation_id)
),
tasks AS (
    SELECT DISTINCT task FROM present
)
SELECT r.run, count(*) AS missing, list(t.task ORDER BY t.task) AS tasks
FROM runs r
CROSS JOIN tasks t
WHERE NOT EXISTS (SELECT 1 FROM present p WHERE p.run = r.run AND p.task = t.task)
GROUP BY r.run
ORDER BY r.run
