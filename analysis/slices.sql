-- The scores of a task's slices: per (run, step) of the evaluations series.sql reads for $task (the `scores`
-- view's newest, or $campaign's), the mean of the items' metric over the items whose field $field has each
-- value; the slice is named TASK[FIELD=VALUE]. $field 'target' is the sample's own target (its label, kept in
-- `samples`); any other is the top-level key $field of the item's document (`documents`, found by the
-- sample's task and doc_hash; $pointer is the key as a JSON pointer), its value as text (a string as it is,
-- a number or an object as JSON), 'NULL' where the document lacks it. `items` counts the items of a slice,
-- `documented` those whose document the store holds, `hashed` those whose sample names one (a doc_hash) and
-- `with_field` those whose document has the key, which the caller checks before it trusts the scores.
WITH chosen AS (
    SELECT run, step, task, num_fewshot, evaluation_id
    FROM ood_series_scores($campaign, $metric, $filter, $num_fewshot, [$task], $runs)
),
items AS (
    SELECT
        c.run, c.step, c.task, c.num_fewshot,
        CASE WHEN $field = 'target' THEN s.target ELSE json_extract_string(d.doc, $pointer) END AS part,
        CAST(s.metrics[$metric] AS DOUBLE) AS metric_value,
        $field = 'target' OR d.doc IS NOT NULL AS documented,
        s.doc_hash IS NOT NULL AS hashed,
        $field = 'target' OR coalesce(json_exists(d.doc, $pointer), false) AS with_field
    FROM chosen AS c
    JOIN samples AS s ON s.evaluation_id = c.evaluation_id AND s.task = c.task
    LEFT JOIN documents AS d ON $field <> 'target' AND d.task = s.task AND d.doc_hash = s.doc_hash
    WHERE s.filter = $filter
)
SELECT
    run,
    step,
    task || '[' || $field || '=' || coalesce(part, 'NULL') || ']' AS task,
    num_fewshot,
    avg(metric_value) AS value,
    count(*) AS items,
    count(*) FILTER (WHERE documented) AS documented,
    count(*) FILTER (WHERE hashed) AS hashed,
    count(*) FILTER (WHERE with_field) AS with_field
FROM items
GROUP BY run, step, items.task, num_fewshot, part
ORDER BY run, step, task;
