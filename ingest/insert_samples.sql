-- The per-sample rows of a batch of evaluations, from the registered frame `new_samples`.
INSERT INTO samples BY NAME
SELECT * REPLACE (map_from_entries(metrics) AS metrics)
FROM new_samples;
