-- Whether a saved analysis named $name exists (0 or 1).
SELECT count(*) FROM analyses WHERE name = $name
