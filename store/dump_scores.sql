-- The public `scores` view, for readers of a dump who do not have ood-store (not loaded back).
SELECT * FROM scores ORDER BY run, step, task, num_fewshot, metric, filter
