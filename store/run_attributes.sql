-- Every run with its attributes, for grouping runs in `compare --by` and ordering them in exports.
SELECT run, base_model, family, size, in_domain_task, seed, CAST(attributes AS VARCHAR) AS attributes
FROM runs
ORDER BY run;
