-- 1 when the attached store `ood_store_incoming` has ood-store's schema_version table, else 0.
SELECT count(*) FROM duckdb_tables() WHERE database_name = 'ood_store_incoming' AND table_name = 'schema_version'
