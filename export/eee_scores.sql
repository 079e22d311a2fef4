-- The scores of the evaluations $ids, in a stable order.
SELECT evaluation_id, task, num_fewshot, metric, filter, value, stderr, n_samples, is_group,
       higher_is_better, task_version
FROM evaluation_scores
WHERE list_contains($ids, evaluation_id)
ORDER BY evaluation_id, task, metric, filter
