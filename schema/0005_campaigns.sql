-- 0005_campaigns: non-finite scores are data, and evaluation campaigns are kept apart.

-- evaluation_scores again, with two changes:
-- * `value` may be NULL: a score lm-eval wrote as NaN is stored as NULL (SQL's missing value:
--   aggregates skip it, `value IS NULL` finds it); Infinity and -Infinity are stored as they are.
-- * (evaluation_id, task, metric, filter) stays unique, but is checked by the writer once per
--   batch (ood_store._ingest.write) instead of by a PRIMARY KEY index row by row, which made a
--   bulk ingest twice as slow to insert and to commit.
-- DuckDB cannot drop a primary key in place: the table is copied, which keeps its columns and
-- types but no constraint, and the NOT NULLs of 0001 but value's are put back.
CREATE TABLE evaluation_scores_0004 AS SELECT * FROM evaluation_scores ORDER BY evaluation_id;
ALTER TABLE evaluation_scores_0004 ALTER COLUMN evaluation_id SET NOT NULL;
ALTER TABLE evaluation_scores_0004 ALTER COLUMN task SET NOT NULL;
ALTER TABLE evaluation_scores_0004 ALTER COLUMN metric SET NOT NULL;
ALTER TABLE evaluation_scores_0004 ALTER COLUMN filter SET NOT NULL;
ALTER TABLE evaluation_scores_0004 ALTER COLUMN is_group SET NOT NULL;
DROP TABLE evaluation_scores;
ALTER TABLE evaluation_scores_0004 RENAME TO evaluation_scores;

-- The views read `campaign` and the new `evaluation_scores` (views.sql, made again after this migration):
-- scores_all and scores gain `campaign`, score_conflicts gains `campaigns`, and campaign_scores is new.
