-- The top-level keys of the stored documents of $task (those of JSON objects), sorted.
SELECT DISTINCT unnest(json_keys(doc)) AS key
FROM documents
WHERE task = $task AND json_type(doc) = 'OBJECT'
ORDER BY key;
