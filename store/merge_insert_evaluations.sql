-- The new evaluations of `ood_store_incoming`, renumbered by the registered frame `merge_ids` (old_id -> new_id).
INSERT INTO evaluations BY NAME
SELECT i.* REPLACE (m.new_id::INTEGER AS evaluation_id)
FROM ood_store_incoming.evaluations i
JOIN merge_ids m ON i.evaluation_id = m.old_id
