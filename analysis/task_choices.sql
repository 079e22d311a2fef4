-- What a task has in `scores`, for the error message when an analysis asks for
-- a metric, filter or shot count it does not have.
SELECT
    list(DISTINCT metric ORDER BY metric) AS metrics,
    list(DISTINCT filter ORDER BY filter) AS filters,
    list(DISTINCT num_fewshot ORDER BY num_fewshot) AS shots
FROM scores
WHERE task = $task AND ($runs IS NULL OR list_contains($runs, run));
