-- The evaluations to export as Every Eval Ever files, with their run's attributes and checkpoint;
-- all of them, or those of the runs $runs (a list; NULL for all).
SELECT
    e.evaluation_id, e.content_hash, e.source_path, e.run, e.step, e.identity_from, e.model_type, e.model_name,
    CAST(e.model_args AS VARCHAR) AS model_args, e.format, e.lm_eval_version, e.git_hash, e.date, e.sample_limit,
    e.batch_size, CAST(e.task_hashes AS VARCHAR) AS task_hashes, CAST(e.task_versions AS VARCHAR) AS task_versions,
    e.samples_files, e.ingested_at, e.ood_store_version, e.source_format, e.campaign,
    CAST(e.config AS VARCHAR) AS config,
    c.model AS checkpoint_model, c.revision,
    r.base_model, r.family, r.size, r.in_domain_task, r.seed, CAST(r.attributes AS VARCHAR) AS attributes
FROM evaluations e
JOIN runs r USING (run)
LEFT JOIN checkpoints c ON c.run = e.run AND c.step IS NOT DISTINCT FROM e.step
WHERE $runs IS NULL OR list_contains($runs, e.run)
ORDER BY e.run, e.step NULLS FIRST, e.evaluation_id
