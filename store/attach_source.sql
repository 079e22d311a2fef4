-- Attaches an older store, read-only, as `source`, to copy its tables into a staging database.
ATTACH $path AS source (READ_ONLY)
