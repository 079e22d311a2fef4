-- 0003_provenance: where each evaluation came from, beyond its file.

-- The evaluation campaign it belongs to (e.g. 'zero-shot', 'baseline'), so that series of a run
-- need not mix campaigns; NULL where none is known.
ALTER TABLE evaluations ADD COLUMN campaign VARCHAR;

-- The format it was read from: 'lm-eval' for lm-evaluation-harness results files (every
-- evaluation before this migration), other importers name their own.
ALTER TABLE evaluations ADD COLUMN source_format VARCHAR NOT NULL DEFAULT 'lm-eval';
