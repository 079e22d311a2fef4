-- The rows of one saved partial-correlation analysis, with its parameters as columns.
SELECT
    pc.* EXCLUDE (analysis),
    a.params->>'in_domain' AS in_domain,
    a.params->>'metric' AS metric,
    a.params->>'residualizer' AS residualizer,
    a.params->>'method' AS method
FROM partial_correlations AS pc
JOIN analyses AS a ON a.name = pc.analysis
WHERE pc.analysis = $name
ORDER BY pc.run, pc.task_x, pc.task_y;
