-- One row per (task, metric, filter, num_fewshot) in `scores`; $run limits it to one run.
SELECT
    task,
    metric,
    filter,
    num_fewshot,
    bool_or(is_group) AS is_group,
    count(DISTINCT run) AS runs,
    count(*) AS scores,
    min(value) AS min_value,
    max(value) AS max_value
FROM scores
WHERE $run IS NULL OR run = $run
GROUP BY task, metric, filter, num_fewshot
ORDER BY task, metric, filter, num_fewshot;
