-- Every per-sample metric name that a line of the samples file $path lists in its `metrics`.
SELECT DISTINCT name
FROM (
    SELECT unnest(TRY_CAST(metrics AS VARCHAR[])) AS name
    FROM read_json(
        $path, format = 'newline_delimited', records = true, columns = {'metrics': 'JSON'},
        maximum_object_size = $max_line_bytes
    )
)
WHERE name IS NOT NULL
ORDER BY name
