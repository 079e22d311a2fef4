-- Checkpoints held by both stores whose model or revision differ.
SELECT o.run, o.step, o.model, o.revision, i.model, i.revision
FROM checkpoints o
JOIN ood_store_incoming.checkpoints i ON i.run = o.run AND i.step IS NOT DISTINCT FROM o.step
WHERE o.model IS DISTINCT FROM i.model OR o.revision IS DISTINCT FROM i.revision
ORDER BY o.run, o.step
