-- Create the runs of a batch of evaluations (registered frame `new_evaluations`)
-- the first time they are seen; fill in a base model that was unknown.
INSERT INTO runs (run, base_model, attributes, created_at)
SELECT run, any_value(base_model), '{}', $now
FROM new_evaluations
GROUP BY run
ON CONFLICT (run) DO UPDATE SET base_model = coalesce(runs.base_model, excluded.base_model);
