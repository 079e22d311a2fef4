-- Attaches the store (or staged dump) to merge from, read-only, as `incoming`.
ATTACH $path AS incoming (READ_ONLY)
