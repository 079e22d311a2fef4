-- Records that migration $version ($name) was applied at $applied_at, in the migration's own transaction.
INSERT INTO schema_version VALUES ($version, $name, $applied_at)
