-- The ood_nli prompt variants a store holds, as `evaluate` recorded them in each
-- results file's config (config.ood_nli): one row per run and variant.
SELECT
    e.run,
    json_extract_string(e.config, '$.ood_nli.variant.key') AS variant,
    json_extract_string(e.config, '$.ood_nli.variant.pattern') AS pattern,
    CAST(json_extract(e.config, '$.ood_nli.variant.verbalizers') AS VARCHAR[]) AS verbalizers,
    json_extract_string(e.config, '$.ood_nli.variant.neutral') AS neutral,
    count(DISTINCT coalesce(e.step, -1)) AS checkpoints,
    count(DISTINCT k.task) AS tasks
FROM evaluations AS e,
    unnest(json_keys(json_extract(e.config, '$.ood_nli.tasks'))) AS k(task)
WHERE json_extract(e.config, '$.ood_nli') IS NOT NULL
  AND ($runs IS NULL OR list_contains($runs, e.run))
GROUP BY ALL
ORDER BY e.run, variant;
