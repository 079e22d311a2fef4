-- 1 when the database in use has ood-store's schema_version table, else 0.
SELECT count(*) FROM duckdb_tables()
WHERE table_name = 'schema_version' AND schema_name = 'main' AND database_name = current_database()
