-- Create the runs of a batch of evaluations (registered frame `new_evaluations`)
-- the first time they are seen; fill in a base model that was unknown. Two statements, not an upsert:
-- a lake has no key for ON CONFLICT (store/lake.py), and the ingest keeps `run` unique itself.
UPDATE runs SET base_model = n.base_model
FROM (SELECT run, any_value(base_model) AS base_model FROM new_evaluations GROUP BY run) n
WHERE runs.run = n.run AND runs.base_model IS NULL AND n.base_model IS NOT NULL;
INSERT INTO runs (run, base_model, attributes, created_at)
SELECT run, any_value(base_model), '{}', $now
FROM new_evaluations n
WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run = n.run)
GROUP BY run;
