-- The store, read-only, in the database user SQL runs in (store/sandbox.py).
ATTACH $path AS store (READ_ONLY)
