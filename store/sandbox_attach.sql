-- The store, read-only, in the database user SQL runs in (store/sandbox.py). The path in braces is a string literal (ATTACH takes no parameter on DuckDB 1.5).
ATTACH {path} AS store (READ_ONLY)
