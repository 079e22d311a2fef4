-- Tables other than evaluations that hold rows per evaluation (an evaluation_id column).
SELECT t.table_name
FROM duckdb_tables() t
JOIN duckdb_columns() c ON c.table_oid = t.table_oid
WHERE t.database_name = current_database() AND t.schema_name = 'main' AND NOT t.temporary
  AND t.table_name <> 'evaluations' AND c.column_name = 'evaluation_id'
ORDER BY t.table_name
