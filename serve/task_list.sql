-- Every task with scores, by name.
SELECT DISTINCT task FROM evaluation_scores ORDER BY task
