-- The runs with scores of a task, for the error message when an analysis asks for it in runs that have none.
SELECT DISTINCT run FROM scores WHERE task = $task ORDER BY run;
