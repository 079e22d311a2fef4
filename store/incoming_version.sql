-- The schema version of the attached store `ood_store_incoming` (it has a schema_version table).
SELECT coalesce(max(version), 0) FROM ood_store_incoming.schema_version
