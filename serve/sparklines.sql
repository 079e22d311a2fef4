-- Curves of the tasks in $tasks for every run, for the sparklines of the runs page (each run shows the one
-- it is finetuned on): every step's score of one metric and filter, the fewest shots where a task was
-- evaluated at several.
SELECT run, task, step, value
FROM scores
WHERE list_contains($tasks, task)
  AND metric = $metric
  AND filter = $filter
  AND step IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY run, task, step ORDER BY num_fewshot NULLS FIRST) = 1
ORDER BY run, task, step
