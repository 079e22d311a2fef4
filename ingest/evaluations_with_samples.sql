-- Of the evaluations $evaluation_ids, those ingested with per-sample files, with those files' paths.
SELECT evaluation_id, samples_files
FROM evaluations
WHERE list_contains($evaluation_ids, evaluation_id) AND len(samples_files) > 0
ORDER BY evaluation_id;
