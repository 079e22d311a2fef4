-- The store's own tables (not views), in a stable order, with whether each holds an evaluation_id
-- column (those are dumped partitioned by run). schema_version goes into the manifest instead.
SELECT
    t.table_name,
    bool_or(c.column_name = 'evaluation_id') AS per_evaluation,
    bool_or(c.column_name = 'run') AS has_run
FROM duckdb_tables() t
JOIN duckdb_columns() c ON c.table_oid = t.table_oid
WHERE t.database_name = current_database() AND t.schema_name = 'main' AND NOT t.temporary
  AND t.table_name <> 'schema_version'
GROUP BY t.table_name
ORDER BY t.table_name
