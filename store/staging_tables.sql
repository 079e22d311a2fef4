-- The tables of a staging database built at a dump's schema version (all but schema_version),
-- with their columns.
SELECT t.table_name, list(c.column_name ORDER BY c.column_index) AS columns
FROM duckdb_tables() t
JOIN duckdb_columns() c ON c.table_oid = t.table_oid
WHERE t.database_name = current_database() AND t.schema_name = 'main' AND NOT t.temporary
  AND t.table_name <> 'schema_version'
GROUP BY t.table_name
ORDER BY t.table_name
