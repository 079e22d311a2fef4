-- The rows of the table named in braces that belong to the new evaluations, renumbered by `merge_ids`.
INSERT INTO {table} BY NAME
SELECT t.* REPLACE (m.new_id::INTEGER AS evaluation_id)
FROM ood_store_incoming.{table} t
JOIN merge_ids m ON t.evaluation_id = m.old_id
