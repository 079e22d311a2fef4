-- The names in $runs that are not runs of the store.
SELECT name FROM unnest($runs) AS t(name) WHERE name NOT IN (SELECT run FROM runs) ORDER BY name
