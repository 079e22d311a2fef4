-- 0003_provenance: where each evaluation came from, beyond its file.

-- The evaluation campaign it belongs to (e.g. 'zero-shot', 'baseline'), so that series of a run
-- need not mix campaigns; NULL where none is known.
ALTER TABLE evaluations ADD COLUMN campaign VARCHAR;

-- The format it was read from: 'lm-eval' for lm-evaluation-harness results files (every
-- evaluation before this migration), other importers name their own.
-- In two statements: DuckDB before 2.0 (1.5.5, which the lake extra pins) adds no column with a constraint.
ALTER TABLE evaluations ADD COLUMN source_format VARCHAR DEFAULT 'lm-eval';
ALTER TABLE evaluations ALTER COLUMN source_format SET NOT NULL;
