-- Every task with a score, for the "did you mean" of an analysis that names a task the store does not have.
SELECT DISTINCT task FROM scores ORDER BY task;
