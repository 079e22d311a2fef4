-- The saved analyses of `ood_store_incoming`: whether the store has one of the same name, and if so
-- whether its kind, parameters and rows are the same.
SELECT
    i.name,
    a.name IS NOT NULL AS exists_here,
    a.kind IS NOT DISTINCT FROM i.kind AS same_kind,
    CAST(a.params AS VARCHAR) AS our_params,
    CAST(i.params AS VARCHAR) AS their_params,
    (SELECT count(*) FROM (
        SELECT * EXCLUDE (analysis) FROM partial_correlations WHERE analysis = i.name
        EXCEPT ALL
        SELECT * EXCLUDE (analysis) FROM ood_store_incoming.partial_correlations WHERE analysis = i.name
    )) + (SELECT count(*) FROM (
        SELECT * EXCLUDE (analysis) FROM ood_store_incoming.partial_correlations WHERE analysis = i.name
        EXCEPT ALL
        SELECT * EXCLUDE (analysis) FROM partial_correlations WHERE analysis = i.name
    )) AS differing_rows
FROM ood_store_incoming.analyses i
LEFT JOIN analyses a USING (name)
ORDER BY i.name
