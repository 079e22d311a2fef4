-- Checkpoints of `ood_store_incoming` that the store does not have; (run, step) stays unique, NULL step included.
INSERT INTO checkpoints BY NAME
SELECT * FROM ood_store_incoming.checkpoints i
WHERE NOT EXISTS (
    SELECT 1 FROM checkpoints c WHERE c.run = i.run AND c.step IS NOT DISTINCT FROM i.step
)
