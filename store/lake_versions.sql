-- The schema versions a lake records, in order.
SELECT version FROM store.main.schema_version ORDER BY version
