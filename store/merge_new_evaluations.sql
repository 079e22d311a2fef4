-- Evaluations of `incoming` whose content is not in the store yet (by content hash), in id order.
SELECT evaluation_id FROM incoming.evaluations
WHERE content_hash NOT IN (SELECT content_hash FROM evaluations)
ORDER BY evaluation_id
