-- Checkpoints of `incoming` that the store does not have; (run, step) stays unique, NULL step included.
INSERT INTO checkpoints BY NAME
SELECT * FROM incoming.checkpoints i
WHERE NOT EXISTS (
    SELECT 1 FROM checkpoints c WHERE c.run = i.run AND c.step IS NOT DISTINCT FROM i.step
)
