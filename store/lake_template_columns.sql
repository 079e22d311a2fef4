-- The tables of the schema template (an in-memory database the file schema's migrations were applied to),
-- column by column in order, for a new lake's tables (store/lake.py).
SELECT table_name, column_name, data_type, is_nullable
FROM duckdb_columns()
WHERE database_name = 'lake_template' AND schema_name = 'main'
  AND table_name IN (SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake_template')
ORDER BY table_name, column_index
