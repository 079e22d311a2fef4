-- The rows of each samples file just inserted, the files given by their evaluations $evaluation_ids and
-- tasks $tasks (one samples file per evaluation and task), and whether one holds a document twice under
-- one filter.
SELECT evaluation_id, task, sum(n) AS n, max(n) > 1 AS twice
FROM (
    SELECT evaluation_id, task, count(*) AS n
    FROM samples
    WHERE evaluation_id IN (SELECT unnest($evaluation_ids)) AND task IN (SELECT unnest($tasks))
    GROUP BY evaluation_id, task, doc_id, filter
)
GROUP BY evaluation_id, task
