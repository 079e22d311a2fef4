-- Attaches the store (or staged dump) to merge from, read-only, as `ood_store_incoming`.
ATTACH $path AS ood_store_incoming (READ_ONLY)
