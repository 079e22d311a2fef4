-- The per-sample rows of evaluation $id, in a stable order, the metrics map as its keys and values.
SELECT task, doc_id, filter, target, loglikelihoods, is_greedy, response,
       map_keys(metrics) AS metric_keys, map_values(metrics) AS metric_values,
       CAST(metrics_other AS VARCHAR) AS metrics_other, doc_hash, prompt_hash, target_hash
FROM samples
WHERE evaluation_id = $id
ORDER BY task, doc_id, filter
