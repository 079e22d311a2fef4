-- The rows of samples files ($paths, of evaluations $evaluation_ids and tasks $tasks, position by
-- position) into `samples`, streamed by DuckDB's JSON reader with an explicit schema ($columns: the
-- keys below and the per-sample metric keys $metric_names, which all the files share).
-- Each row is checked here, as SQL: a row that breaks a rule stops the statement with
-- error('ood-store: ...'), the transaction rolls back, and ingest re-reads the file to name the
-- line and the field at fault. The rules are those of ood_store._ingest.samples (the slow path):
--   doc_id     a document index: an integer (or a string of digits) in 0 .. 2^63
--   filter     a string, 'none' when absent
--   filtered_resps  log-likelihood tasks: (log-likelihood, is-greedy) pairs, numbers or strings of them
--              -> loglikelihoods DOUBLE[], is_greedy BOOLEAN[]; other tasks -> response text
--   metrics    the names of a line's per-sample metrics, when it lists them; numbers (and booleans,
--              and strings of finite numbers) -> metrics MAP, anything else -> metrics_other JSON;
--              numbers as the JSON reader reads them (NaN and Infinity are data, 1e999 is +Infinity).
INSERT INTO samples BY NAME
WITH typed AS (
    SELECT
        doc_id, filter, target,
        CASE
            WHEN filtered_resps IS NULL THEN NULL
            WHEN json_type(filtered_resps) = 'ARRAY' THEN CAST(filtered_resps AS JSON[])
            ELSE [filtered_resps]
        END AS items,
        CASE
            WHEN json_type(metrics) = 'ARRAY' AND list_bool_and(
                list_transform(CAST(metrics AS JSON[]), lambda m: coalesce(json_type(m) = 'VARCHAR', false))
            ) IS NOT FALSE THEN CAST(metrics AS VARCHAR[])
        END AS listed,
        metric_values, doc_hash, prompt_hash, target_hash, ood_source
    FROM ood_sample_keys($paths, $columns, $metric_names, $max_line_bytes)
),
responses AS (
    SELECT
        *,
        items IS NOT NULL AND ($output_type = 'loglikelihood_rolling' OR (len(items) > 0 AND list_bool_and(
            list_transform(items, lambda x: json_type(x) = 'ARRAY' AND json_array_length(x) = 2
                AND json_type(x, '$[0]') NOT IN ('ARRAY', 'OBJECT'))
        ))) AS scored,
        list_filter(
            map_entries(metric_values),
            lambda e: e.value IS NOT NULL AND (listed IS NULL OR list_contains(listed, e.key))
        ) AS entries
    FROM typed
),
rows AS (
    SELECT
        *,
        CASE WHEN scored THEN list_transform(
            list_transform(items, lambda x: CASE WHEN json_type(x) = 'ARRAY' AND json_array_length(x) = 2 THEN x -> 0 ELSE x END),
            lambda v: CASE json_type(v)
                WHEN 'BOOLEAN' THEN CAST(CAST(v AS BOOLEAN) AS DOUBLE)
                ELSE TRY_CAST(v ->> '$' AS DOUBLE)
            END
        ) END AS loglikelihoods,
        CASE WHEN scored THEN list_transform(items, lambda x:
            CASE
                WHEN NOT (json_type(x) = 'ARRAY' AND json_array_length(x) = 2) THEN NULL
                WHEN json_type(x, '$[1]') = 'NULL' THEN NULL
                WHEN json_type(x, '$[1]') = 'BOOLEAN' THEN CAST(x -> 1 AS BOOLEAN)
                WHEN json_type(x, '$[1]') = 'VARCHAR' THEN x ->> 1 IN ('True', 'true')
                WHEN json_type(x, '$[1]') IN ('UBIGINT', 'BIGINT', 'DOUBLE') THEN CAST(x -> 1 AS DOUBLE) = 1
                ELSE false
            END
        ) END AS greedy,
        list_transform(entries, lambda e: {
            'key': e.key,
            'value': CASE
                WHEN json_type(e.value) IN ('UBIGINT', 'BIGINT', 'DOUBLE') THEN TRY_CAST(e.value ->> '$' AS DOUBLE)
                WHEN json_type(e.value) = 'BOOLEAN' THEN CAST(CAST(e.value AS BOOLEAN) AS DOUBLE)
                WHEN json_type(e.value) = 'VARCHAR' AND isfinite(TRY_CAST(e.value ->> '$' AS DOUBLE))
                    THEN TRY_CAST(e.value ->> '$' AS DOUBLE)
            END,
            'raw': e.value
        }) AS valued
    FROM responses
)
SELECT
    $evaluation_ids[ood_source] AS evaluation_id,
    $tasks[ood_source] AS task,
    CASE
        WHEN doc_id IS NULL THEN error('ood-store: doc_id')
        WHEN filter IS NULL THEN error('ood-store: filter')
        WHEN list_bool_or(list_transform(loglikelihoods, lambda v: v IS NULL)) THEN error('ood-store: filtered_resps')
        WHEN listed IS NOT NULL AND NOT list_has_all(
            list_transform($metric_names, lambda n: lower(n)), list_transform(list_filter(listed, lambda n: n <> ''), lambda n: lower(n))
        ) THEN error('ood-store: unknown metric')
        ELSE doc_id
    END AS doc_id,
    filter, target, loglikelihoods, ood_is_greedy(greedy) AS is_greedy,
    CASE WHEN NOT scored AND items IS NOT NULL THEN
        CASE
            WHEN len(items) = 1 AND json_type(items[1]) = 'VARCHAR' THEN items[1] ->> '$'
            ELSE CAST(to_json(items) AS VARCHAR)
        END
    END AS response,
    map_from_entries(list_transform(
        list_filter(valued, lambda e: e.value IS NOT NULL), lambda e: {'key': e.key, 'value': e.value}
    )) AS metrics,
    CASE WHEN list_bool_or(list_transform(valued, lambda e: e.value IS NULL)) THEN to_json(map_from_entries(
        list_transform(list_filter(valued, lambda e: e.value IS NULL), lambda e: {'key': e.key, 'value': e.raw})
    )) END AS metrics_other,
    doc_hash, prompt_hash, target_hash
FROM rows;
