-- How many evaluations the attached store `ood_store_incoming` holds.
SELECT count(*) FROM ood_store_incoming.evaluations
