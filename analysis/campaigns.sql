-- The campaigns the store's evaluations belong to, by name.
SELECT DISTINCT campaign FROM evaluations WHERE campaign IS NOT NULL ORDER BY campaign
