-- Whether evaluation $evaluation_id holds a document of task $task twice under one filter (0 or 1).
SELECT count(*) > 0 FROM (
    SELECT 1 FROM samples
    WHERE evaluation_id = $evaluation_id AND task = $task
    GROUP BY doc_id, filter
    HAVING count(*) > 1
    LIMIT 1
)
