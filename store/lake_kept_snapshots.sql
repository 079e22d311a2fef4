-- The snapshots saved analyses were computed at (params.store_snapshot): vacuum keeps them.
SELECT DISTINCT CAST(params->>'store_snapshot' AS BIGINT) FROM analyses
WHERE json_type(params->'store_snapshot') IN ('UBIGINT', 'BIGINT')
