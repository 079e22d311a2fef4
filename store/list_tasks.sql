-- One row per (task, metric, filter, num_fewshot) in `scores`; $run limits it to one run.
-- `campaigns` lists the campaigns whose evaluations hold it (of every evaluation, not only the newest).
WITH listed AS (
    SELECT
        task, metric, filter, num_fewshot,
        bool_or(is_group) AS is_group,
        count(DISTINCT run) AS runs,
        count(*) AS scores,
        min(value) AS min_value,
        max(value) AS max_value
    FROM scores
    WHERE $run IS NULL OR run = $run
    GROUP BY task, metric, filter, num_fewshot
),
campaigns AS (
    SELECT
        task, metric, filter, num_fewshot,
        string_agg(DISTINCT coalesce(campaign, '(none)'), ', ' ORDER BY coalesce(campaign, '(none)')) AS campaigns
    FROM scores_all
    WHERE $run IS NULL OR run = $run
    GROUP BY task, metric, filter, num_fewshot
)
SELECT l.*, c.campaigns
FROM listed l
LEFT JOIN campaigns c
  ON c.task = l.task AND c.metric = l.metric AND c.filter = l.filter AND c.num_fewshot IS NOT DISTINCT FROM l.num_fewshot
ORDER BY l.task, l.metric, l.filter, l.num_fewshot;
