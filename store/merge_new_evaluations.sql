-- Evaluations of `ood_store_incoming` whose content is not in the store yet (by content hash), in id order.
SELECT evaluation_id FROM ood_store_incoming.evaluations
WHERE content_hash NOT IN (SELECT content_hash FROM evaluations)
ORDER BY evaluation_id
