-- How many keys repeated evaluations disagree on (the rows of the `score_conflicts` view), and in how many
-- runs. Only a checkpoint that more than one evaluation holds can disagree, so only their scores are grouped;
-- a NaN (stored as NULL) differs from every number, as in the view.
WITH repeated AS (
    SELECT run, step FROM evaluations GROUP BY run, step HAVING count(*) > 1
),
candidates AS (
    SELECT e.evaluation_id, e.run, e.step
    FROM evaluations e
    JOIN repeated r ON e.run = r.run AND e.step IS NOT DISTINCT FROM r.step
),
conflicting AS (
    SELECT c.run, c.step, s.task, s.num_fewshot, s.metric, s.filter
    FROM evaluation_scores s
    JOIN candidates c USING (evaluation_id)
    GROUP BY c.run, c.step, s.task, s.num_fewshot, s.metric, s.filter
    HAVING count(DISTINCT s.value) + max(CASE WHEN s.value IS NULL THEN 1 ELSE 0 END) > 1
)
SELECT count(*) AS keys, count(DISTINCT run) AS runs FROM conflicting
