-- Runs held by both the store and the attached store `ood_store_incoming`.
SELECT run FROM runs WHERE run IN (SELECT run FROM ood_store_incoming.runs) ORDER BY run
