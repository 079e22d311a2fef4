-- The source formats each checkpoint's evaluations came from: only a checkpoint with more than one can
-- hold the same evaluation twice (ood_store._ingest.equivalence).
SELECT DISTINCT run, step, source_format FROM evaluations
