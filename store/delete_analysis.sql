-- Removes a saved analysis and its rows (before it is saved again with --replace).
DELETE FROM partial_correlations WHERE analysis = $name;
DELETE FROM analyses WHERE name = $name;
