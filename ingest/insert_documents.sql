-- The documents of the samples files $paths (of tasks $tasks, position by position; one file per task) that
-- `documents` does not hold yet, each doc_hash once per task: the `doc` object of a line as its JSON text,
-- keyed by the line's doc_hash (the key `samples` keeps). One statement: DuckDB reads the files in parallel.
INSERT INTO documents BY NAME
SELECT $tasks[l.ood_source] AS task, l.doc_hash, l.doc
FROM ood_document_lines($paths, $max_line_bytes) AS l
WHERE NOT EXISTS (SELECT 1 FROM documents AS d WHERE d.task = $tasks[l.ood_source] AND d.doc_hash = l.doc_hash)
QUALIFY row_number() OVER (PARTITION BY l.ood_source, l.doc_hash) = 1;
