-- What both layouts of a samples insert share (insert_samples.sql, insert_samples_scored.sql): the
-- lines of a file as DuckDB's JSON reader reads them, and the keys read the same way in both.
-- Temporary macros, created on the writing connection before each samples file is inserted.

-- The lines of the samples files `paths` (a list: DuckDB reads the files in parallel, and each large
-- one in parallel too), the keys of `cols` as columns (the reader skips every other key of a line),
-- `metric_values`: the per-sample metric keys `names` as a MAP, and `ood_store_file`: the file's path.
CREATE OR REPLACE TEMP MACRO ood_sample_lines(paths, cols, names, max_bytes) AS TABLE
SELECT *, map(names, list_value(*COLUMNS(lambda c: list_contains(names, c)))) AS metric_values
FROM read_json(
    paths, format = 'newline_delimited', records = true, columns = cols, maximum_object_size = max_bytes,
    filename = 'ood_store_file'
);

-- The same lines with doc_id, filter and target read as both layouts read them (the macros below;
-- DuckDB binds a macro's body when it is called, so the order of definition does not matter), and
-- `ood_source`: the position of the line's file in `paths` (NULL if the reader names it otherwise,
-- which the insert refuses: the files are then inserted one by one).
CREATE OR REPLACE TEMP MACRO ood_sample_keys(paths, cols, names, max_bytes) AS TABLE
SELECT
    * EXCLUDE (ood_store_file)
      REPLACE (ood_doc_id(doc_id) AS doc_id, ood_filter(filter) AS filter, ood_target(target) AS target),
    CASE WHEN len(paths) = 1 THEN 1 ELSE list_position(paths, ood_store_file) END AS ood_source
FROM ood_sample_lines(paths, cols, names, max_bytes);

-- is_greedy: the per-response flags, or NULL when the file holds none.
CREATE OR REPLACE TEMP MACRO ood_is_greedy(flags) AS
    CASE WHEN list_bool_or(list_transform(flags, lambda g: g IS NOT NULL)) THEN flags END;

-- doc_id: an integer, or a string of digits, in 0 .. 2^63 (NULL: not a document index).
CREATE OR REPLACE TEMP MACRO ood_doc_id(j) AS CASE json_type(j)
    WHEN 'UBIGINT' THEN TRY_CAST(j AS BIGINT)
    WHEN 'VARCHAR' THEN TRY_CAST(nullif(regexp_extract(j ->> '$', '^\s*([0-9]{1,18})\s*$', 1), '') AS BIGINT)
END;

-- filter: a string, 'none' when absent (NULL: not a string).
CREATE OR REPLACE TEMP MACRO ood_filter(j) AS
    CASE WHEN j IS NULL THEN 'none' WHEN json_type(j) = 'VARCHAR' THEN j ->> '$' END;

-- target as text: a string as it is, True/False as Python writes them, anything else as JSON.
CREATE OR REPLACE TEMP MACRO ood_target(j) AS CASE json_type(j)
    WHEN 'VARCHAR' THEN j ->> '$'
    WHEN 'BOOLEAN' THEN CASE WHEN CAST(j AS BOOLEAN) THEN 'True' ELSE 'False' END
    ELSE CAST(j AS VARCHAR)
END;

-- The documents of the samples files `paths` (a list: DuckDB reads the files in parallel): each line's doc_hash,
-- its `doc` object as JSON text (the reader reads only these two keys) and `ood_source`, the position of the
-- line's file in `paths` (NULL if the reader names it otherwise, which the insert refuses: the files are then
-- read one by one); lines without doc_hash or doc left out (insert_documents.sql, insert_new_documents.sql).
CREATE OR REPLACE TEMP MACRO ood_document_lines(paths, max_bytes) AS TABLE
SELECT doc_hash, doc, CASE WHEN len(paths) = 1 THEN 1 ELSE list_position(paths, ood_store_file) END AS ood_source
FROM read_json(
    paths, format = 'newline_delimited', records = true, columns = {'doc_hash': 'VARCHAR', 'doc': 'JSON'},
    maximum_object_size = max_bytes, filename = 'ood_store_file'
)
WHERE doc_hash IS NOT NULL AND doc IS NOT NULL;
