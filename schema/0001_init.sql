-- 0001_init: the first ood-store schema.
--
-- Applied in one transaction together with its row in schema_version.
-- References between tables (evaluation_id, run) are kept by the ingest code,
-- not declared as FOREIGN KEYs: DuckDB refuses UPDATEs of list/JSON columns on
-- rows that a foreign key points at, and runs.attributes must stay editable.

CREATE TABLE schema_version (
    version     INTEGER PRIMARY KEY,   -- the NNNN of schema/NNNN_name.sql
    name        VARCHAR NOT NULL,      -- the file name
    applied_at  TIMESTAMP NOT NULL     -- UTC
);

-- One row per finetuning / training run.
CREATE TABLE runs (
    run             VARCHAR PRIMARY KEY,  -- e.g. 'EleutherAI/pythia-v1.1-160m' or 'runs/opt-mnli-s1'
    base_model      VARCHAR,              -- the model the run starts from, when known
    family          VARCHAR,              -- e.g. 'OPT', 'OLMo2', 'pythia'
    size            VARCHAR,              -- as written by the user, e.g. '1.3b'
    in_domain_task  VARCHAR,              -- the task the run was finetuned on, e.g. 'mnli'
    seed            BIGINT,
    attributes      JSON NOT NULL,        -- any other key=value the user attached
    created_at      TIMESTAMP NOT NULL    -- UTC
);

-- One row per evaluated checkpoint of a run; step is NULL for a final model
-- evaluated once. (run, step) is unique, NULL step included (kept by ingest).
CREATE TABLE checkpoints (
    run       VARCHAR NOT NULL,
    step      BIGINT,
    model     VARCHAR,                    -- the path or repo that was evaluated
    revision  VARCHAR                     -- the hub revision, when one was given
);

CREATE SEQUENCE evaluation_id_seq START 1;

-- One row per ingested lm-eval results file.
CREATE TABLE evaluations (
    evaluation_id      INTEGER PRIMARY KEY DEFAULT nextval('evaluation_id_seq'),
    content_hash       VARCHAR NOT NULL UNIQUE,  -- sha256 of the file's bytes: the idempotency key
    source_path        VARCHAR NOT NULL,         -- absolute path at ingest time
    run                VARCHAR NOT NULL,
    step               BIGINT,
    identity_from      VARCHAR NOT NULL,         -- where run/step came from: 'revision', 'path' or 'model'
                                                 -- (+flags when --run/--step replaced part), or 'flags'
    model_type         VARCHAR,                  -- lm-eval model backend: 'hf', 'vllm', 'hf-causal', ...
    model_name         VARCHAR,                  -- pretrained= (or the file's model_name)
    model_args         JSON,                     -- as given: a JSON string, an object or null
    format             VARCHAR NOT NULL,         -- 'v0.3' (no filters) or 'v0.4' ('metric,filter' keys)
    lm_eval_version    VARCHAR,                  -- the file's lm_eval_version, when it has one
    git_hash           VARCHAR,
    date               TIMESTAMP,                -- UTC; from the file's `date`, else its results_<ts> name
    num_fewshot        INTEGER,                  -- when every task used the same number of shots
    sample_limit       DOUBLE,                   -- lm-eval --limit
    batch_size         VARCHAR,
    task_hashes        JSON,
    task_versions      JSON,
    config             JSON,                     -- the file's whole `config` object
    samples_files      VARCHAR[] NOT NULL,       -- per-sample files ingested with it
    ingested_at        TIMESTAMP NOT NULL,       -- UTC
    ood_store_version  VARCHAR NOT NULL
);

-- One row per (evaluation, task, metric, filter): every evaluation's scores.
-- The public views scores_all and scores (views.sql) add run and step.
CREATE TABLE evaluation_scores (
    evaluation_id     INTEGER NOT NULL,
    task              VARCHAR NOT NULL,
    num_fewshot       INTEGER,               -- n-shot of the task (config.num_fewshot in v0.3 files)
    metric            VARCHAR NOT NULL,      -- e.g. 'acc', 'acc_norm', 'exact_match'
    filter            VARCHAR NOT NULL,      -- lm-eval filter; 'none' for v0.3 files, which had no filters
    value             DOUBLE NOT NULL,
    stderr            DOUBLE,                -- NULL where the file says "N/A", NaN or nothing
    n_samples         BIGINT,                -- documents evaluated (n-samples.effective), when known
    is_group          BOOLEAN NOT NULL,      -- an aggregate over subtasks (e.g. mmlu)
    higher_is_better  BOOLEAN,
    task_version      VARCHAR,
    PRIMARY KEY (evaluation_id, task, metric, filter)
);

-- One row per (evaluation, task, document, filter) from samples_<task>_<ts>.jsonl.
CREATE TABLE samples (
    evaluation_id   INTEGER NOT NULL,
    task            VARCHAR NOT NULL,
    doc_id          BIGINT NOT NULL,
    filter          VARCHAR NOT NULL,
    target          VARCHAR,
    loglikelihoods  DOUBLE[],                -- per choice (multiple choice / loglikelihood tasks)
    is_greedy       BOOLEAN[],               -- per choice
    response        VARCHAR,                 -- the filtered response (generation tasks)
    metrics         MAP(VARCHAR, DOUBLE),    -- per-sample metric values, e.g. {'acc': 1.0}
    metrics_other   JSON,                    -- per-sample metric values that are not numbers (lists, pairs)
    doc_hash        VARCHAR,
    prompt_hash     VARCHAR,
    target_hash     VARCHAR
);

-- The views over these tables (scores_all, scores, score_conflicts, samples_all, ...) are in views.sql.
