-- A table with one row per evaluation (or finer) with the run of each row's evaluation, so that
-- the dump can be partitioned by run; the table name in braces is filled in, quoted.
SELECT t.*, e.run
FROM {table} t
JOIN evaluations e USING (evaluation_id)
ORDER BY ALL
