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

-- Every evaluation's scores, with the checkpoint and the campaign they belong to.
CREATE OR REPLACE VIEW scores_all AS
SELECT
    e.run, e.step, s.task, s.num_fewshot, s.metric, s.filter, s.value, s.stderr,
    s.n_samples, s.is_group, s.higher_is_better, s.task_version,
    s.evaluation_id, e.date, e.source_path, e.campaign
FROM evaluation_scores AS s
JOIN evaluations AS e USING (evaluation_id);

-- The public contract: one row per (run, step, task, num_fewshot, metric, filter).
-- Where several evaluations hold the same key, the one with the newest `date`
-- wins (evaluations without a date count as oldest), then the one ingested last,
-- whichever campaign it belongs to; `campaign` says which one that is.
CREATE OR REPLACE VIEW scores AS
SELECT
    run, step, task, num_fewshot, metric, filter, value, stderr,
    n_samples, is_group, evaluation_id, campaign
FROM scores_all
QUALIFY row_number() OVER (
    PARTITION BY run, step, task, num_fewshot, metric, filter
    ORDER BY date DESC NULLS LAST, evaluation_id DESC
) = 1;

-- The same, one row per campaign: (run, campaign, step, task, num_fewshot, metric, filter),
-- the newest evaluation of each key within its campaign. Analyses of one campaign read this.
CREATE OR REPLACE VIEW campaign_scores AS
SELECT
    run, campaign, step, task, num_fewshot, metric, filter, value, stderr,
    n_samples, is_group, evaluation_id
FROM scores_all
QUALIFY row_number() OVER (
    PARTITION BY run, campaign, step, task, num_fewshot, metric, filter
    ORDER BY date DESC NULLS LAST, evaluation_id DESC
) = 1;

-- Keys held by more than one evaluation with different values (a NaN, stored as NULL,
-- differs from every number), with the campaigns of those evaluations.
CREATE OR REPLACE VIEW score_conflicts AS
SELECT
    run, step, task, num_fewshot, metric, filter,
    count(*) AS n_evaluations,
    min(value) AS min_value,
    max(value) AS max_value,
    list(evaluation_id ORDER BY evaluation_id) AS evaluation_ids,
    list(value ORDER BY evaluation_id) AS value_list,
    list(source_path ORDER BY evaluation_id) AS source_paths,
    list(campaign ORDER BY evaluation_id) AS campaigns
FROM scores_all
GROUP BY run, step, task, num_fewshot, metric, filter
HAVING count(DISTINCT value) + max(CASE WHEN value IS NULL THEN 1 ELSE 0 END) > 1;
