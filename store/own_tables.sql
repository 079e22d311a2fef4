-- The store's own tables (not views, not schema_version, which a dump's manifest stands for, nor a lake's
-- lake_writes, its writers' bookkeeping), in a
-- stable order: their columns, whether they hold rows per evaluation (an evaluation_id column:
-- dumped partitioned by run) and whether they have a run column of their own.
SELECT
    t.table_name,
    list(c.column_name ORDER BY c.column_index) AS columns,
    bool_or(c.column_name = 'evaluation_id') AS per_evaluation,
    bool_or(c.column_name = 'run') AS has_run
FROM duckdb_tables() t
JOIN duckdb_columns() c ON c.table_oid = t.table_oid
WHERE t.database_name = current_database() AND t.schema_name = 'main' AND NOT t.temporary
  AND t.table_name NOT IN ('schema_version', 'lake_writes')
GROUP BY t.table_name
ORDER BY t.table_name
