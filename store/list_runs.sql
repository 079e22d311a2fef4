-- One row per run, with what the store holds for it; `campaigns` counts its checkpoints
-- (distinct steps) by evaluation campaign, e.g. 'baseline: 10, zero-shot: 27'. `tasks` counts them in
-- `scores_all`: the same tasks as in `scores` (which keeps one evaluation of each key that scores_all holds),
-- without computing which evaluation each key keeps (on 900,000 scores, 0.1 s instead of 1 s).
SELECT
    r.run,
    r.base_model,
    r.family,
    r.size,
    r.in_domain_task,
    r.seed,
    (SELECT count(*) FROM checkpoints c WHERE c.run = r.run) AS checkpoints,
    (
        SELECT string_agg(coalesce(campaign, '(none)') || ': ' || steps, ', ' ORDER BY campaign NULLS LAST)
        FROM (
            SELECT e.campaign, count(DISTINCT coalesce(e.step, -1)) AS steps
            FROM evaluations e WHERE e.run = r.run GROUP BY e.campaign
        )
    ) AS campaigns,
    (SELECT min(step) FROM checkpoints c WHERE c.run = r.run) AS first_step,
    (SELECT max(step) FROM checkpoints c WHERE c.run = r.run) AS last_step,
    (SELECT count(*) FROM evaluations e WHERE e.run = r.run) AS evaluations,
    (SELECT count(DISTINCT task) FROM scores_all s WHERE s.run = r.run) AS tasks,
    r.attributes
FROM runs r
ORDER BY r.run;
