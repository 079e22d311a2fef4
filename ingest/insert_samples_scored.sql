-- The rows of samples files of log-likelihood tasks ($paths, $evaluation_ids, $tasks) into `samples`: the fast
-- layout of insert_samples.sql, for files whose first line holds (log-likelihood, is-greedy) pairs
-- and numeric per-sample metrics. The JSON reader parses those into typed columns itself
-- (filtered_resps VARCHAR[][], metrics VARCHAR[], each metric DOUBLE), which is most of the speed.
-- A line that does not fit this layout stops the statement with error('ood-store: layout'), and the
-- file is read again with insert_samples.sql, which reads every line as lm-eval may have written it;
-- doc_id, filter, target and is_greedy are read the same way in both (sample_macros.sql).
INSERT INTO samples BY NAME
WITH typed AS (
    SELECT
        doc_id, filter, target,
        filtered_resps AS pairs,
        list_transform(filtered_resps, lambda x: TRY_CAST(x[1] AS DOUBLE)) AS loglikelihoods,
        list_transform(filtered_resps, lambda x:
            CASE WHEN x[2] IN ('True', 'true') THEN true WHEN x[2] IN ('False', 'false') THEN false END
        ) AS greedy,
        metrics AS listed,
        metric_values, doc_hash, prompt_hash, target_hash, ood_source
    FROM ood_sample_keys($paths, $columns, $metric_names, $max_line_bytes)
)
SELECT
    $evaluation_ids[ood_source] AS evaluation_id,
    $tasks[ood_source] AS task,
    CASE
        -- any line that breaks a rule is a layout miss: the file is read again with insert_samples.sql,
        -- which names the rule (doc_id, filter, ...)
        WHEN doc_id IS NULL OR filter IS NULL OR pairs IS NULL OR len(pairs) = 0 OR list_bool_or(list_transform(pairs, lambda x:
            len(x) <> 2 OR x[1] IS NULL OR x[1][1] IN ('[', '{')
            OR (x[2] IS NOT NULL AND x[2] NOT IN ('True', 'true', 'False', 'false'))
        )) THEN error('ood-store: layout')
        WHEN list_bool_or(list_transform(loglikelihoods, lambda v: v IS NULL)) THEN error('ood-store: layout')
        WHEN listed IS NOT NULL AND (list_bool_or(list_transform(listed, lambda n: n IS NULL))
            OR NOT list_has_all($metric_names, listed)) THEN error('ood-store: layout')
        ELSE doc_id
    END AS doc_id,
    filter, target, loglikelihoods, ood_is_greedy(greedy) AS is_greedy,
    NULL AS response,
    map_from_entries(list_filter(
        map_entries(metric_values), lambda e: e.value IS NOT NULL AND (listed IS NULL OR list_contains(listed, e.key))
    )) AS metrics,
    NULL AS metrics_other,
    doc_hash, prompt_hash, target_hash
FROM typed;
