-- Runs of `ood_store_incoming` that the store does not have.
INSERT INTO runs BY NAME
SELECT * FROM ood_store_incoming.runs WHERE run NOT IN (SELECT run FROM runs)
