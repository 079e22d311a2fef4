-- 0002_analyses: named analyses saved back into the store (`ood-store analyze --save NAME`).

-- One row per saved analysis, with every parameter that defines it.
CREATE TABLE analyses (
    name               VARCHAR PRIMARY KEY,
    kind               VARCHAR NOT NULL,     -- 'partial_correlations'
    params             JSON NOT NULL,        -- in_domain, ood, runs, metric, filter, residualizer, method, ...
    rows               BIGINT NOT NULL,
    created_at         TIMESTAMP NOT NULL,   -- UTC
    ood_store_version  VARCHAR NOT NULL
);

-- The rows of saved partial-correlation analyses; columns as in ood_store._analysis.COLUMNS.
CREATE TABLE partial_correlations (
    analysis      VARCHAR NOT NULL,          -- analyses.name
    run           VARCHAR NOT NULL,
    task_x        VARCHAR NOT NULL,
    task_y        VARCHAR NOT NULL,
    n             BIGINT NOT NULL,           -- checkpoints used
    r             DOUBLE,                    -- partial correlation (NaN with a reason)
    ci_low        DOUBLE,                    -- Fisher-z interval
    ci_high       DOUBLE,
    p             DOUBLE,                    -- two-sided t test, dof = n - 1 - edf
    p_adj         DOUBLE,                    -- adjusted within the run
    n_eff         DOUBLE,                    -- Bretherton effective sample size
    p_eff         DOUBLE,
    p_eff_adj     DOUBLE,
    acf1_x        DOUBLE,                    -- lag-1 autocorrelation of the residual series
    acf1_y        DOUBLE,
    dof           DOUBLE,
    edf_x         DOUBLE,                    -- effective degrees of freedom of each fit
    edf_y         DOUBLE,
    boot_ci_low   DOUBLE,                    -- block-bootstrap interval (NULL/NaN without one)
    boot_ci_high  DOUBLE,
    block_length  BIGINT,
    reason        VARCHAR,                   -- why r is NaN
    PRIMARY KEY (analysis, run, task_x, task_y)
);
