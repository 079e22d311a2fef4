-- The saved analyses, newest first, with their main parameters.
SELECT
    name,
    kind,
    params->>'in_domain' AS in_domain,
    params->>'metric' AS metric,
    params->>'residualizer' AS residualizer,
    params->>'method' AS method,
    rows,
    created_at,
    CAST(params AS VARCHAR) AS params
FROM analyses
ORDER BY created_at DESC, name;
