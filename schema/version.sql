-- The schema version a store is at (0 when no migration has been recorded).
SELECT coalesce(max(version), 0) FROM schema_version
