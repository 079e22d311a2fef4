-- The store's views, one definition each, for the latest schema version.
--
-- Migrations (NNNN_name.sql) hold tables only. These views are made again in the transaction of
-- the last migration a store gets (ood_store._schema.migrate), so a store created now and one
-- upgraded from any older version have the same views. A change here ships with a migration
-- (one that holds only a comment will do), so that every store at an older version re-makes them.

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

-- Per-sample rows with the checkpoint they belong to.
CREATE OR REPLACE VIEW samples_all AS
SELECT e.run, e.step, s.*
FROM samples AS s
JOIN evaluations AS e USING (evaluation_id);
