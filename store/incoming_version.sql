-- The schema version of the attached store `incoming` (0 when it has no schema_version table).
SELECT CASE WHEN (
    SELECT count(*) FROM duckdb_tables() WHERE database_name = 'incoming' AND table_name = 'schema_version'
) = 0 THEN 0 ELSE (SELECT coalesce(max(version), 0) FROM incoming.schema_version) END
