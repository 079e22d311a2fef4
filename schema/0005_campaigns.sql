-- 0005_campaigns: non-finite scores are data, and evaluation campaigns are kept apart.

-- evaluation_scores again, with two changes:
-- * `value` may be NULL: a score lm-eval wrote as NaN is stored as NULL (SQL's missing value:
--   aggregates skip it, `value IS NULL` finds it); Infinity and -Infinity are stored as they are.
-- * (evaluation_id, task, metric, filter) stays unique, but is checked by the writer once per
--   batch (ood_store.ingest.write) instead of by a PRIMARY KEY index row by row, which made a
--   bulk ingest twice as slow to insert and to commit.
CREATE TABLE evaluation_scores_0004 (
    evaluation_id     INTEGER NOT NULL,
    task              VARCHAR NOT NULL,
    num_fewshot       INTEGER,               -- n-shot of the task (config.num_fewshot in v0.3 files)
    metric            VARCHAR NOT NULL,      -- e.g. 'acc', 'acc_norm', 'exact_match'
    filter            VARCHAR NOT NULL,      -- lm-eval filter; 'none' for v0.3 files, which had no filters
    value             DOUBLE,                -- NULL where the file says NaN; may be +-Infinity
    stderr            DOUBLE,                -- NULL where the file says "N/A", NaN or nothing
    n_samples         BIGINT,                -- documents evaluated (n-samples.effective), when known
    is_group          BOOLEAN NOT NULL,      -- an aggregate over subtasks (e.g. mmlu)
    higher_is_better  BOOLEAN,
    task_version      VARCHAR
);
INSERT INTO evaluation_scores_0004 SELECT * FROM evaluation_scores ORDER BY evaluation_id;
DROP TABLE evaluation_scores;
ALTER TABLE evaluation_scores_0004 RENAME TO evaluation_scores;

-- The views read `campaign` and the new `evaluation_scores` (views.sql, made again after this migration):
-- scores_all and scores gain `campaign`, score_conflicts gains `campaigns`, and campaign_scores is new.
