-- The stored tasks that an in-domain name stands for: the name itself, or the ood_nli
-- suite's task of that name ('mnli': ood_nli_mnli) under any prompt variant (ood_nli_mnli__minimal).
SELECT DISTINCT task
FROM scores
WHERE task = $name
   OR task = 'ood_nli_' || $name
   OR starts_with(task, 'ood_nli_' || $name || '__')
ORDER BY task;
