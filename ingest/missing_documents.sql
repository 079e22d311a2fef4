-- The (evaluation, task) pairs among $evaluation_ids whose per-sample rows name a document (a doc_hash) that
-- `documents` does not hold: the samples files whose documents are still to be read. With each, how many
-- of its rows have a doc_hash, how many distinct ones, and how many `documents` lacks: where all three are
-- equal, every line of the file is a document of its own not held yet (insert_new_documents.sql).
SELECT
    s.evaluation_id,
    s.task,
    count(*) AS hashed,
    count(DISTINCT s.doc_hash) AS distinct_hashes,
    count(*) FILTER (WHERE d.doc_hash IS NULL) AS missing
FROM samples AS s
LEFT JOIN documents AS d ON d.task = s.task AND d.doc_hash = s.doc_hash
WHERE list_contains($evaluation_ids, s.evaluation_id) AND s.doc_hash IS NOT NULL
GROUP BY s.evaluation_id, s.task
HAVING count(*) FILTER (WHERE d.doc_hash IS NULL) > 0
ORDER BY s.evaluation_id, s.task;
