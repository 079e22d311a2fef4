-- What the store holds, counted on its tables (not the `scores` view, which dedupes every key).
SELECT
    (SELECT count(*) FROM runs) AS runs,
    (SELECT count(*) FROM checkpoints) AS checkpoints,
    (SELECT count(DISTINCT task) FROM evaluation_scores) AS tasks,
    (SELECT count(*) FROM evaluations) AS evaluations,
    (SELECT count(*) FROM evaluation_scores) AS scores,
    (SELECT count(DISTINCT campaign) FROM evaluations) AS campaigns,
    (SELECT count(*) FROM analyses) AS analyses
