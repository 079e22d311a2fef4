-- Copies saved analysis $name, with its rows, from `ood_store_incoming`.
INSERT INTO analyses BY NAME SELECT * FROM ood_store_incoming.analyses WHERE name = $name;
INSERT INTO partial_correlations BY NAME SELECT * FROM ood_store_incoming.partial_correlations WHERE analysis = $name;
