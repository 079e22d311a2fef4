-- Evaluations held by both stores (same content hash) that they file under different checkpoints.
SELECT o.content_hash, o.run, o.step, i.run, i.step
FROM evaluations o
JOIN ood_store_incoming.evaluations i USING (content_hash)
WHERE o.run <> i.run OR o.step IS DISTINCT FROM i.step
ORDER BY o.content_hash
