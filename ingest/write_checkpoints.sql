-- Record the checkpoints of a batch of evaluations the first time each is seen;
-- (run, step) stays unique, NULL step included.
INSERT INTO checkpoints (run, step, model, revision)
SELECT n.run, n.step, any_value(n.checkpoint_model), any_value(n.revision)
FROM new_evaluations n
WHERE NOT EXISTS (
    SELECT 1 FROM checkpoints c WHERE c.run = n.run AND c.step IS NOT DISTINCT FROM n.step
)
GROUP BY n.run, n.step;
