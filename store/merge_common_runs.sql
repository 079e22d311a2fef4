-- Runs held by both the store and the attached store `incoming`.
SELECT run FROM runs WHERE run IN (SELECT run FROM incoming.runs) ORDER BY run
