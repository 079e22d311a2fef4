-- Saves one analysis: its row in `analyses` and its rows from the registered frame `new_rows`.
INSERT INTO analyses (name, kind, params, rows, created_at, ood_store_version)
VALUES ($name, $kind, $params, (SELECT count(*) FROM new_rows), $created_at, $version);
INSERT INTO partial_correlations BY NAME
SELECT $name AS analysis, * FROM new_rows;
