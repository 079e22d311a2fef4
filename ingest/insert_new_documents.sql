-- The documents of the samples files $paths (of tasks $tasks, position by position; one file per task) when every
-- line of each is a document of its own that `documents` does not hold (missing_documents.sql says so): as
-- insert_documents.sql, without the deduplication, which would double the time it takes.
INSERT INTO documents BY NAME
SELECT $tasks[ood_source] AS task, doc_hash, doc
FROM ood_document_lines($paths, $max_line_bytes);
