-- Per-sample rows an importer read itself (an Every Eval Ever samples file: ood_store._ingest.eee_samples),
-- the registered frame `new_sample_rows`, into `samples`; the metrics map comes as its keys and values.
INSERT INTO samples BY NAME
SELECT
    evaluation_id, task, doc_id, filter, target, loglikelihoods, is_greedy, response,
    CASE WHEN metric_keys IS NULL THEN NULL ELSE map(metric_keys, metric_values) END AS metrics,
    CAST(metrics_other AS JSON) AS metrics_other,
    doc_hash, prompt_hash, target_hash
FROM new_sample_rows
