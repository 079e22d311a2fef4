-- The rows of one samples file of a log-likelihood task ($path, task $task) into `samples`: the fast
-- layout of insert_samples.sql, for files whose first line holds (log-likelihood, is-greedy) pairs
-- and numeric per-sample metrics. The JSON reader parses those into typed columns itself
-- (filtered_resps VARCHAR[][], metrics VARCHAR[], each metric DOUBLE), which is most of the speed.
-- A line that does not fit this layout stops the statement with error('ood-store: layout'), and the
-- file is read again with insert_samples.sql, which reads every line as lm-eval may have written it;
-- the checks of doc_id and filter are the same in both.
INSERT INTO samples BY NAME
WITH lines AS (
    SELECT
        doc_id, filter, target, filtered_resps AS pairs, metrics AS listed, doc_hash, prompt_hash, target_hash,
        map($metric_names, list_value(*COLUMNS(lambda c: list_contains($metric_names, c)))) AS metric_values
    FROM read_json(
        $path, format = 'newline_delimited', records = true, columns = $columns,
        maximum_object_size = $max_line_bytes
    )
),
typed AS (
    SELECT
        CASE json_type(doc_id)
            WHEN 'UBIGINT' THEN TRY_CAST(doc_id AS BIGINT)
            WHEN 'VARCHAR' THEN TRY_CAST(nullif(regexp_extract(doc_id ->> '$', '^\s*([0-9]{1,18})\s*$', 1), '') AS BIGINT)
        END AS doc_id,
        CASE WHEN filter IS NULL THEN 'none' WHEN json_type(filter) = 'VARCHAR' THEN filter ->> '$' END AS filter,
        CASE json_type(target)
            WHEN 'VARCHAR' THEN target ->> '$'
            WHEN 'BOOLEAN' THEN CASE WHEN CAST(target AS BOOLEAN) THEN 'True' ELSE 'False' END
            ELSE CAST(target AS VARCHAR)
        END AS target,
        pairs,
        list_transform(pairs, lambda x: TRY_CAST(x[1] AS DOUBLE)) AS loglikelihoods,
        list_transform(pairs, lambda x: CASE WHEN x[2] IN ('True', 'true') THEN true WHEN x[2] IN ('False', 'false') THEN false END) AS greedy,
        listed,
        metric_values, doc_hash, prompt_hash, target_hash
    FROM lines
)
SELECT
    $evaluation_id AS evaluation_id,
    $task AS task,
    CASE
        WHEN doc_id IS NULL THEN error('ood-store: doc_id')
        WHEN filter IS NULL THEN error('ood-store: filter')
        WHEN pairs IS NULL OR len(pairs) = 0 OR list_bool_or(list_transform(pairs, lambda x:
            len(x) <> 2 OR x[1] IS NULL OR x[1][1] IN ('[', '{')
            OR (x[2] IS NOT NULL AND x[2] NOT IN ('True', 'true', 'False', 'false'))
        )) THEN error('ood-store: layout')
        WHEN list_bool_or(list_transform(loglikelihoods, lambda v: v IS NULL)) THEN error('ood-store: layout')
        WHEN listed IS NOT NULL AND (list_bool_or(list_transform(listed, lambda n: n IS NULL))
            OR NOT list_has_all($metric_names, listed)) THEN error('ood-store: layout')
        ELSE doc_id
    END AS doc_id,
    filter,
    target,
    loglikelihoods,
    CASE WHEN list_bool_or(list_transform(greedy, lambda g: g IS NOT NULL)) THEN greedy END AS is_greedy,
    NULL AS response,
    map_from_entries(list_filter(
        map_entries(metric_values), lambda e: e.value IS NOT NULL AND (listed IS NULL OR list_contains(listed, e.key))
    )) AS metrics,
    NULL AS metrics_other,
    doc_hash, prompt_hash, target_hash
FROM typed;
