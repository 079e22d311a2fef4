-- Attaches the store (or staged dump) to merge from, read-only, as `ood_store_incoming`. The path in braces is a string literal (ATTACH takes no parameter on DuckDB 1.5).
ATTACH {path} AS ood_store_incoming (READ_ONLY)
