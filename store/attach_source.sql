-- Attaches an older store, read-only, as `ood_store_source`, to copy its tables into a staging database. The path in braces is a string literal (ATTACH takes no parameter on DuckDB 1.5).
ATTACH {path} AS ood_store_source (READ_ONLY)
