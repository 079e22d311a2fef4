-- Scores of the ood_nli suite's tasks, split into the testset (the task name of the
-- default variant, e.g. ood_nli_snli) and the variant key ('' for the default;
-- the part after the first '__', e.g. minimal__neutral-no).
SELECT
    run, step,
    string_split(task, '__')[1] AS task,
    CASE WHEN contains(task, '__') THEN task[strpos(task, '__') + 2:] ELSE '' END AS variant,
    num_fewshot, metric, filter, value, stderr
FROM scores
WHERE list_contains($testsets, string_split(task, '__')[1])
  AND ($runs IS NULL OR list_contains($runs, run))
ORDER BY run, task, variant, step, metric, filter;
