-- Attaches an older store, read-only, as `ood_store_source`, to copy its tables into a staging database.
ATTACH $path AS ood_store_source (READ_ONLY)
